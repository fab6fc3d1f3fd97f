package bolt_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/index/indextest"
	"github.com/foldermirror/foldermirror/internal/fmtest"
)

// TestUpdateWritesWhatChanged: an update rewrites the pages of what
// changed, not of every folder it puts. Putting 3,000 folders as they are
// writes far fewer pages than renaming them (the log of the revision is
// written either way); and the index then holds what it held.
func TestUpdateWritesWhatChanged(t *testing.T) {
	ctx := context.Background()
	db := fmtest.OpenBolt(t, t.TempDir())
	folders := []fm.SyncedFolder{indextest.Folder("root", "", "Root", "alice@example.com")}
	for i := range 3000 {
		folders = append(folders, indextest.Folder(fmt.Sprintf("f%04d", i), fmt.Sprintf("f%04d", i/10), fmt.Sprintf("Folder %d", i),
			fmt.Sprintf("user%d@example.com", i%7)))
	}
	folders[1].ParentID = "root"
	indextest.FullSync(t, db, "lib", fm.LibraryState{RootID: "root", StartPageToken: "1"}, 1000, folders...)
	before, err := db.Snapshot(ctx, "lib")
	if err != nil {
		t.Fatal(err)
	}
	putAll := func(rename bool) int64 {
		t.Helper()
		written := db.PagesWritten()
		err := db.UpdateLibrary(ctx, "lib", fm.Fence{}, func(tx fm.LibraryTx) error {
			for _, sf := range before {
				if rename {
					sf.Name += " (renamed)"
				}
				if err := tx.Put(sf); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return db.PagesWritten() - written
	}
	same := putAll(false)
	if after, err := db.Snapshot(ctx, "lib"); err != nil || fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("putting the folders as they were changed the index: %v", err)
	}
	renamed := putAll(true)
	if same*3 > renamed {
		t.Errorf("putting 3,000 folders as they were wrote %d pages; renaming them, %d", same, renamed)
	}
}

// TestSeedIsUsedAtItsRevisionOnly: an update answers from the folders it is
// seeded with while the library is at the revision they were read at, and
// reads the tree otherwise (another revision, or a write before); a seeded
// folder it writes is read as written.
func TestSeedIsUsedAtItsRevisionOnly(t *testing.T) {
	ctx := context.Background()
	db := fmtest.OpenBolt(t, t.TempDir())
	indextest.FullSync(t, db, "lib", fm.LibraryState{RootID: "root", StartPageToken: "1"}, 10,
		indextest.Folder("root", "", "Root", "alice@example.com"), indextest.Folder("a", "root", "A"))
	st, err := db.Library(ctx, "lib")
	if err != nil {
		t.Fatal(err)
	}
	seeded, err := db.Folder(ctx, "lib", "a")
	if err != nil {
		t.Fatal(err)
	}
	seeded.Name = "as read" // told apart from the tree's
	for _, tc := range []struct {
		name       string
		revision   uint64
		writeFirst bool
		rename     string
		want       string
	}{
		{"at its revision", st.Revision, false, "", "as read"},
		{"at another revision", st.Revision - 1, false, "", "A"},
		{"after a write", st.Revision, true, "", "A"},
		{"written after", st.Revision, false, "renamed", "renamed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := db.UpdateLibrary(ctx, "lib", fm.Fence{}, func(tx fm.LibraryTx) error {
				if tc.writeFirst {
					if err := tx.Put(indextest.Folder("b", "root", "B")); err != nil {
						return err
					}
				}
				tx.(fm.LibrarySeeder).Seed(tc.revision, map[string]*fm.Folder{"a": seeded})
				if tc.rename != "" {
					if err := tx.Put(indextest.Folder("a", "root", tc.rename)); err != nil {
						return err
					}
				}
				f, err := tx.Folder("a")
				if err != nil {
					return err
				}
				if f.Name != tc.want {
					t.Errorf("folder a named %q, want %q", f.Name, tc.want)
				}
				return errors.New("roll back")
			})
			if err == nil || !strings.Contains(err.Error(), "roll back") {
				t.Fatalf("update: %v", err)
			}
		})
	}
}
