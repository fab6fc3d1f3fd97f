package foldermirror

import (
	"context"
	"errors"
	"time"
)

// Leases let the processes that share an index take turns syncing: while one
// holds a job's lease (a library's, named by its ID, or a domain's
// directory's, see DirectoryLease), no other syncs it. An index one process
// holds alone gives leases that are always free and fence nothing.
type Leases interface {
	// Acquire takes the lease named name, the name of a sync job, unless
	// another process holds it: then the error wraps ErrLeaseHeld and names
	// the holder.
	Acquire(ctx context.Context, name string) (Lease, error)
	// Holders returns the holder of each lease held now, by name.
	Holders(ctx context.Context) (map[string]string, error)
	// ClaimScheduledRun claims a scheduled run of the job name, of the
	// schedule kind ("incremental", "full" or "directory"), that begins now.
	// If a run of the same job and kind began less than within ago, on this
	// process or another, it returns false and the run is to be skipped;
	// otherwise it records that this run begins now and returns true. Call
	// it while holding the job's lease.
	ClaimScheduledRun(ctx context.Context, name, kind string, within time.Duration) (bool, error)
}

// Lease is a lease held.
type Lease interface {
	// Lost is closed if the lease was lost (it could not be renewed before
	// it lapsed): the sync under it must stop without committing.
	Lost() <-chan struct{}
	// Fence is the fencing token of this holding of the lease: the writes
	// of the sync under it are made with it.
	Fence() Fence
	// Release gives the lease back.
	Release()
}

// Fence is the fencing token of one holding of a lease: the lease's name
// and the epoch a shared index issued when the lease was taken, greater
// than every epoch issued before. A shared index makes a write only if its
// fence is still the lease's (neither lapsed, nor released, nor taken by
// another process since), checked in the write's own transaction: a process
// whose lease was lost cannot overwrite what the lease's later holders
// wrote, and its write fails wrapping ErrLeaseLost.
//
// The zero Fence writes without a lease, as a process that holds the index
// alone does; a shared index refuses it while a process holds the lease
// (ErrLeaseHeld).
type Fence struct {
	Lease string
	Epoch int64
}

// DirectoryLease names the lease of a domain's directory sync (library IDs,
// which name theirs, cannot contain ':').
func DirectoryLease(domain string) string { return "directory:" + domain }

// ErrLeaseHeld means another process holds the lease.
var ErrLeaseHeld = errors.New("another process is syncing it")

// ErrLeaseLost means a write was made under a lease that is no longer its
// writer's (it lapsed, or another process took it since): nothing was
// written.
var ErrLeaseLost = errors.New("the sync lease was lost")
