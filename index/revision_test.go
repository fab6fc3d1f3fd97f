package index_test

import (
	"context"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/index"
)

// TestRevision checks that the index makes the revision grow exactly when
// what readers see changes, whoever writes.
func TestRevision(t *testing.T) {
	base := func() []fm.SyncedFolder {
		return []fm.SyncedFolder{folder("root", "", "Root", "x@e.com"), folder("a", "root", "a", "x@e.com"), folder("b", "root", "b")}
	}
	baseState := fm.LibraryState{RootID: "root", DriveID: "d1", StartPageToken: "1"}
	fullSync := func(st fm.LibraryState, folders []fm.SyncedFolder) func(*testing.T, *index.DB) {
		return func(t *testing.T, db *index.DB) {
			w, err := db.BeginFullSync(context.Background(), "lib")
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Put(folders); err != nil {
				t.Fatal(err)
			}
			if _, err := w.Commit(st); err != nil {
				t.Fatal(err)
			}
		}
	}
	update := func(fn func(fm.LibraryTx) error) func(*testing.T, *index.DB) {
		return func(t *testing.T, db *index.DB) {
			if err := db.UpdateLibrary(context.Background(), "lib", fn); err != nil {
				t.Fatal(err)
			}
		}
	}
	flipped := baseState
	flipped.SharingRequiresOrganizer = true
	moved := baseState
	moved.RootID = "b"

	tests := []struct {
		name  string
		step  func(*testing.T, *index.DB)
		grows bool
	}{
		{"full sync, same folders, sharing restriction flipped", fullSync(flipped, base()), true},
		{"full sync, same folders, other root", fullSync(moved, base()), true},
		{"identical full sync", fullSync(baseState, base()), false},
		{"full sync, new token only", fullSync(fm.LibraryState{RootID: "root", DriveID: "d1", StartPageToken: "9"}, base()), false},
		{"full sync, a folder renamed", fullSync(baseState, append(base()[:2], folder("b", "root", "B"))), true},
		{"update flipping the sharing restriction only", update(func(tx fm.LibraryTx) error {
			st := tx.State()
			st.SharingRequiresOrganizer = true
			tx.SetState(st)
			return nil
		}), true},
		{"update of the token and sync time only", update(func(tx fm.LibraryTx) error {
			st := tx.State()
			st.StartPageToken, st.LastIncrementalSync = "2", time.Now()
			tx.SetState(st)
			return nil
		}), false},
		{"update setting a revision of its own", update(func(tx fm.LibraryTx) error {
			st := tx.State()
			st.Revision = 99
			tx.SetState(st)
			return nil
		}), false},
		{"update deleting a missing folder", update(func(tx fm.LibraryTx) error {
			return tx.Delete("nope")
		}), false},
		{"update putting one folder", update(func(tx fm.LibraryTx) error {
			return tx.Put(folder("c", "root", "c"))
		}), true},
		{"update deleting one folder", update(func(tx fm.LibraryTx) error {
			return tx.Delete("b")
		}), true},
		{"update replacing one folder", update(func(tx fm.LibraryTx) error {
			f, err := tx.Folder("a")
			if err != nil {
				return err
			}
			f.RestrictedDownload = true
			return tx.Replace(f)
		}), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			db := openTemp(t, dir)
			fullSync(baseState, base())(t, db)
			before, err := db.Library(ctx, "lib")
			if err != nil {
				t.Fatal(err)
			}
			if before.Revision != 1 {
				t.Fatalf("revision %d after the first sync, want 1", before.Revision)
			}
			tt.step(t, db)
			after, err := db.Library(ctx, "lib")
			if err != nil {
				t.Fatal(err)
			}
			want := before.Revision
			if tt.grows {
				want++
			}
			if after.Revision != want {
				t.Errorf("revision %d, want %d", after.Revision, want)
			}
			// The revision is stored, not only cached.
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			reopened := openTemp(t, dir)
			if st, err := reopened.Library(ctx, "lib"); err != nil || st.Revision != want {
				t.Errorf("after reopening: revision %v (%v), want %d", st, err, want)
			}
		})
	}
}
