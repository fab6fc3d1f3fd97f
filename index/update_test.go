package index_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	fm "github.com/foldermirror/foldermirror"
)

func commit(t *testing.T, db interface {
	BeginFullSync(context.Context, string) (fm.FullSyncWriter, error)
}, lib string, folders ...fm.SyncedFolder) fm.Drift {
	t.Helper()
	w, err := db.BeginFullSync(context.Background(), lib)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Put(folders); err != nil {
		t.Fatal(err)
	}
	d, err := w.Commit(fm.LibraryState{RootID: "root"})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDriftAndRevision(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t, t.TempDir())
	base := []fm.SyncedFolder{folder("root", "", "Root"), folder("a", "root", "a", "x@e.com"), folder("b", "root", "b"), folder("c", "root", "c")}
	if d := commit(t, db, "lib", base...); d != (fm.Drift{}) {
		t.Errorf("first sync drift %+v; with nothing before, nothing drifted", d)
	}
	if d := commit(t, db, "lib", base...); d != (fm.Drift{}) {
		t.Errorf("same tree: drift %+v", d)
	}
	st, _ := db.Library(ctx, "lib")
	if st.Revision != 1 {
		t.Errorf("revision %d after an unchanged resync, want 1", st.Revision)
	}
	changed := []fm.SyncedFolder{folder("root", "", "Root"), folder("a", "root", "a", "y@e.com"), folder("b", "root", "B"), folder("d", "root", "d")}
	if d := commit(t, db, "lib", changed...); d != (fm.Drift{Added: 1, Removed: 1, Changed: 2}) {
		t.Errorf("drift %+v, want 1 added (d), 1 removed (c), 2 changed (a's grant, b's name)", d)
	}
	if st, _ := db.Library(ctx, "lib"); st.Revision != 2 {
		t.Errorf("revision %d, want 2", st.Revision)
	}
}

func TestUpdateLibrary(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t, t.TempDir())
	commit(t, db, "lib",
		folder("root", "", "Root"),
		folder("a", "root", "a", "bob@e.com"), folder("a1", "a", "a1", "bob@e.com"),
		folder("b", "root", "b"),
	)
	err := db.UpdateLibrary(ctx, "lib", func(tx fm.LibraryTx) error {
		// a1 moves under b and is renamed; a goes; c arrives, shared with carol.
		if err := tx.Put(folder("a1", "b", "Z", "bob@e.com")); err != nil {
			return err
		}
		if err := tx.Delete("a"); err != nil {
			return err
		}
		if err := tx.Put(folder("c", "root", "c", "carol@e.com", "dan@e.com")); err != nil {
			return err
		}
		b, err := tx.Folder("b")
		if err != nil {
			return err
		}
		b.RestrictedDownload = true
		if err := tx.Replace(b); err != nil {
			return err
		}
		kids, _ := tx.Children("root")
		slices.Sort(kids)
		if !slices.Equal(kids, []string{"b", "c"}) {
			t.Errorf("children of root within the transaction: %v", kids)
		}
		st := tx.State()
		st.StartPageToken, st.Revision = "42", st.Revision+1
		tx.SetState(st)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := walkAll(t, db, "lib", "root", nil); !slices.Equal(got, []visit{{"b", 0}, {"a1", 1}, {"c", 0}}) {
		t.Errorf("tree after update: %v", got)
	}
	st, _ := db.Library(ctx, "lib")
	if st.Folders != 4 || st.Permissions != 3 || st.StartPageToken != "42" || st.Revision != 2 {
		t.Errorf("state %+v", st)
	}
	if b, _ := db.Folder(ctx, "lib", "b"); !b.RestrictedDownload {
		t.Error("Replace did not write b")
	}
	if perms, _ := db.Permissions(ctx, "lib", "c"); len(perms) != 2 {
		t.Errorf("c's permissions %v", perms)
	}
	if f, _ := db.Folder(ctx, "lib", "c"); len(f.Grants) != 2 || f.Grants[0].Principal != "user:carol@e.com" {
		t.Errorf("c's grants %v", f.Grants)
	}
	_ = db.UpdateLibrary(ctx, "lib", func(tx fm.LibraryTx) error { return tx.Delete("a1") })
	if st, _ := db.Library(ctx, "lib"); st.Folders != 3 || st.Permissions != 2 {
		t.Errorf("counts after a delete: %+v", st)
	}
}

func TestFailedUpdateChangesNothing(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t, t.TempDir())
	commit(t, db, "lib", folder("root", "", "Root"), folder("a", "root", "a"))
	boom := errors.New("boom")
	err := db.UpdateLibrary(ctx, "lib", func(tx fm.LibraryTx) error {
		_ = tx.Delete("a")
		st := tx.State()
		st.StartPageToken = "99"
		tx.SetState(st)
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("error %v", err)
	}
	if got := walkAll(t, db, "lib", "root", nil); !slices.Equal(got, []visit{{"a", 0}}) {
		t.Errorf("tree after a failed update: %v", got)
	}
	if st, _ := db.Library(ctx, "lib"); st.StartPageToken == "99" || st.Folders != 2 {
		t.Errorf("state after a failed update: %+v", st)
	}
	if err := db.UpdateLibrary(ctx, "never", func(fm.LibraryTx) error { return nil }); fm.ErrorCode(err) != fm.ENOTFOUND {
		t.Errorf("update of a library never synced: %v", err)
	}
}

func TestSnapshot(t *testing.T) {
	db := openTemp(t, t.TempDir())
	commit(t, db, "lib", folder("root", "", "Root", "a@e.com"), folder("b", "root", "b"), folder("a", "root", "a"))
	snap, err := db.Snapshot(context.Background(), "lib")
	if err != nil || len(snap) != 3 || snap[0].ID != "a" || snap[2].ID != "root" || len(snap[2].Permissions) != 1 || len(snap[2].Grants) != 1 {
		t.Errorf("snapshot %+v %v", snap, err)
	}
}

// Folders with the same permissions share one stored set, counted; a set
// goes with its last folder.
func TestPermissionSetsAreShared(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t, t.TempDir())
	commit(t, db, "lib",
		folder("root", "", "Root", "a@e.com"),
		folder("x", "root", "x", "a@e.com"), folder("y", "root", "y", "a@e.com"),
		folder("z", "root", "z", "a@e.com", "b@e.com"),
	)
	if got := db.PermissionSets("lib"); !slices.Equal(got, []uint64{1, 3}) {
		t.Fatalf("sets after the full sync: %v, want one of 3 folders and one of 1", got)
	}
	err := db.UpdateLibrary(ctx, "lib", func(tx fm.LibraryTx) error {
		if err := tx.Put(folder("x", "root", "x", "a@e.com", "b@e.com")); err != nil { // x takes z's set
			return err
		}
		if err := tx.Delete("y"); err != nil {
			return err
		}
		return tx.Put(folder("w", "root", "w", "c@e.com")) // a new set
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := db.PermissionSets("lib"); !slices.Equal(got, []uint64{1, 1, 2}) {
		t.Errorf("sets after the update: %v, want root's, w's and the one x and z share", got)
	}
	_ = db.UpdateLibrary(ctx, "lib", func(tx fm.LibraryTx) error { return tx.Delete("w") })
	if got := db.PermissionSets("lib"); !slices.Equal(got, []uint64{1, 2}) {
		t.Errorf("sets after w went: %v", got)
	}
	if perms, _ := db.Permissions(ctx, "lib", "x"); len(perms) != 2 || perms[1].EmailAddress != "b@e.com" {
		t.Errorf("x's permissions %v", perms)
	}
	if st, _ := db.Library(ctx, "lib"); st.Folders != 3 || st.Permissions != 5 {
		t.Errorf("counts %+v", st)
	}
}
