package bolt_test

import (
	"context"
	"fmt"
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
