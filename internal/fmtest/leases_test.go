package fmtest_test

import (
	"context"
	"testing"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/index/indextest"
	"github.com/foldermirror/foldermirror/internal/fmtest"
)

// The fake leases pass the suite the PostgreSQL index's leases pass
// (index/postgres's TestSharedLeases): the tests of the scheduler and of
// the push service that use them see what a shared index does.
func TestLeasesConform(t *testing.T) {
	indextest.RunSharedLeases(t, func(*testing.T) indextest.Replicas {
		a := fmtest.NewLeases("replica-a")
		replica := func(ls *fmtest.Leases, holder string) indextest.Replica {
			return indextest.Replica{Holder: holder, Leases: ls, Write: func(_ context.Context, fence fm.Fence) error {
				return ls.Check("lib", fence)
			}}
		}
		return indextest.Replicas{A: replica(a, "replica-a"), B: replica(a.Replica("replica-b"), "replica-b"), Lapse: a.Lapse}
	})
}
