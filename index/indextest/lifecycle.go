package indextest

import (
	"context"
	"testing"

	fm "github.com/foldermirror/foldermirror"
)

// An index reached is Ready, and reaching it again changes nothing; the
// writes of a sync under a lease of the index's own Leases commit, full
// and incremental alike, and once the lease is given back it can be taken
// again.
func testLeasedWrites(t *testing.T, b Backend) {
	ctx := context.Background()
	idx := b.Open(t)
	if info := idx.Info(ctx); !info.Ready || info.Problem != "" {
		t.Errorf("info of an index reached: %+v; want it ready, without a problem", info)
	}
	if err := idx.Connect(ctx); err != nil {
		t.Errorf("reaching it again: %v", err)
	}
	l, err := idx.Leases().Acquire(ctx, "lib")
	if err != nil {
		t.Fatal(err)
	}
	FencedFullSync(t, idx, "lib", l.Fence(), rootState, 10, Folder("root", "", "Root"))
	err = idx.UpdateLibrary(ctx, "lib", l.Fence(), func(tx fm.LibraryTx) error { return tx.Put(Folder("a", "root", "A")) })
	if err != nil {
		t.Fatalf("an update under the lease: %v", err)
	}
	if f, err := idx.Folder(ctx, "lib", "a"); err != nil || f.Name != "A" {
		t.Errorf("the folder the update wrote: %+v, %v", f, err)
	}
	l.Release()
	again, err := idx.Leases().Acquire(ctx, "lib")
	if err != nil {
		t.Fatalf("the lease given back, taken again: %v", err)
	}
	again.Release()
}
