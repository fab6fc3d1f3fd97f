package bolt

import (
	"context"
	"time"

	fm "github.com/foldermirror/foldermirror"
)

// Leases returns the index's leases. The bbolt index is one process's
// alone (Open locks its file): its leases are always free, never lost,
// and fence nothing, and every write ignores its fence.
func (db *DB) Leases() fm.Leases { return soleLeases{} }

// soleLeases are the leases of an index one process holds alone.
type soleLeases struct{}

var _ fm.Leases = soleLeases{}

// Acquire gives a lease that nothing else contends for.
func (soleLeases) Acquire(context.Context, string) (fm.Lease, error) { return soleLease{}, nil }

// Holders names no holder: no other process shares the index.
func (soleLeases) Holders(context.Context) (map[string]string, error) { return nil, nil }

// ClaimScheduledRun always claims the run: the one process's scheduler
// spaces its runs itself.
func (soleLeases) ClaimScheduledRun(context.Context, string, string, time.Duration) (bool, error) {
	return true, nil
}

// soleLease is the lease of an index one process holds alone.
type soleLease struct{}

func (soleLease) Lost() <-chan struct{} { return nil }
func (soleLease) Fence() fm.Fence       { return fm.Fence{} }
func (soleLease) Release()              {}
