package bolt_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/index/indextest"
	"github.com/foldermirror/foldermirror/internal/fmtest"
)

// Sets put in order of key, as the syncer puts them, many pages of them,
// keep the references their folders make: a set shared by hundreds of
// folders goes with the last of them, and the others stay.
func TestSetsInOrderKeepTheirReferences(t *testing.T) {
	t.Parallel() // mostly waits for its 300 commits
	ctx := context.Background()
	db := fmtest.OpenBolt(t, t.TempDir())
	const distinct, sharing = 2000, 300
	folders := []fm.SyncedFolder{folder("root", "", "Root", "owner@x.com")}
	for i := range distinct {
		folders = append(folders, folder(fmt.Sprintf("d%04d", i), "root", "D", fmt.Sprintf("user%04d@x.com", i)))
	}
	for i := range sharing {
		folders = append(folders, folder(fmt.Sprintf("s%04d", i), "root", "S", "shared@x.com"))
	}
	sets, records, links := indextest.FullSyncParts(folders)
	slices.SortFunc(sets, func(a, b fm.PermissionSet) int { return bytes.Compare(a.Key[:], b.Key[:]) })
	w, err := db.BeginFullSync(ctx, "lib", fm.Fence{})
	if err != nil {
		t.Fatal(err)
	}
	for part := range slices.Chunk(sets, 500) {
		if err := w.PutPermissionSets(part); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.PutFolders(records); err != nil {
		t.Fatal(err)
	}
	if err := w.PutChildren(links); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(state); err != nil {
		t.Fatal(err)
	}
	lib, err := db.Library(ctx, "lib")
	if err != nil || lib.Folders != len(folders) || lib.Permissions != len(folders) {
		t.Fatalf("library %+v, %v; want %d folders and permissions", lib, err, len(folders))
	}
	shared := fm.NewPermissionSet(folders[len(folders)-1].Permissions).Key
	remove := func(ids ...string) {
		t.Helper()
		err := db.UpdateLibrary(ctx, "lib", fm.Fence{}, func(tx fm.LibraryTx) error {
			for _, id := range ids {
				if err := tx.Delete(id); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range sharing - 1 {
		remove(fmt.Sprintf("s%04d", i))
	}
	if perms, err := db.PermissionSet(ctx, "lib", shared); err != nil || len(perms) != 1 {
		t.Fatalf("the shared set with one folder left: %v, %v", perms, err)
	}
	remove(fmt.Sprintf("s%04d", sharing-1))
	if _, err := db.PermissionSet(ctx, "lib", shared); fm.ErrorCode(err) != fm.ENOTFOUND {
		t.Errorf("the shared set without folders: %v; want ENOTFOUND", err)
	}
	for i := range distinct {
		key := fm.NewPermissionSet(folders[1+i].Permissions).Key
		if perms, err := db.PermissionSet(ctx, "lib", key); err != nil || len(perms) != 1 {
			t.Fatalf("set of d%04d: %v, %v", i, perms, err)
		}
	}
}
