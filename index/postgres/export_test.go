package postgres

import (
	"context"

	fm "github.com/foldermirror/foldermirror"
)

// Generation returns the generation a full sync writes.
func Generation(w fm.FullSyncWriter) uint64 { return w.(*fullSync).generation }

// Renew renews a lease once, as its renewals do.
func Renew(ctx context.Context, l fm.Lease) error { return l.(*lease).renewOnce(ctx) }
