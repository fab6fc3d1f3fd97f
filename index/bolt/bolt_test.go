package bolt_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/index/bolt"
	"github.com/foldermirror/foldermirror/index/indextest"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	bbolt "go.etcd.io/bbolt"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// TestConformance runs the suite every index backend passes.
func TestConformance(t *testing.T) {
	indextest.Run(t, indextest.Backend{
		Open: func(t *testing.T) indextest.Index { return fmtest.OpenBolt(t, t.TempDir()) },
		Reopen: func(t *testing.T, idx indextest.Index) indextest.Index {
			db := idx.(*bolt.DB)
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			return fmtest.OpenBolt(t, filepath.Dir(db.Path()))
		},
	})
}

var (
	folder   = indextest.Folder
	fullSync = indextest.FullSync
	state    = fm.LibraryState{RootID: "root", StartPageToken: "7"}
)

// A full sync cut short by a crash leaves the old tree, and the unfinished
// one is dropped when the index opens again.
func TestCrashLeavesTheOldTree(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := bolt.Open(dir, quiet)
	if err != nil {
		t.Fatal(err)
	}
	fullSync(t, db, "lib", state, 10, folder("root", "", "Root"), folder("old", "root", "old"))
	crashed, _ := db.BeginFullSync(ctx, "lib", fm.Fence{})
	sets, folders, _ := indextest.FullSyncParts([]fm.SyncedFolder{folder("root", "", "Root"), folder("y", "root", "y")})
	_ = crashed.PutPermissionSets(sets)
	_ = crashed.PutFolders(folders)
	if n := db.Generations("lib"); n != 2 {
		t.Fatalf("%d trees during the sync, want 2", n)
	}
	db.Close() // as if the process died before Commit

	db = fmtest.OpenBolt(t, dir)
	if n := db.Generations("lib"); n != 1 {
		t.Errorf("%d trees after reopening, want 1", n)
	}
	if _, err := db.Folder(ctx, "lib", "old"); err != nil {
		t.Errorf("after the crash: %v", err)
	}
	// A first sync that never committed leaves no library behind.
	first, _ := db.BeginFullSync(ctx, "fresh", fm.Fence{})
	_ = first.PutPermissionSets(sets)
	db.Close()
	db = fmtest.OpenBolt(t, dir)
	if _, err := db.Library(ctx, "fresh"); fm.ErrorCode(err) != fm.ENOTFOUND {
		t.Errorf("uncommitted library: %v", err)
	}
}

func TestOpenRefusesForeignAndNewerFiles(t *testing.T) {
	for name, setup := range map[string]func(tx *bbolt.Tx) error{
		"foreign": func(tx *bbolt.Tx) error { _, err := tx.CreateBucket([]byte("widgets")); return err },
		"newer": func(tx *bbolt.Tx) error {
			b, err := tx.CreateBucket([]byte("meta"))
			if err != nil {
				return err
			}
			return b.Put([]byte("schema"), []byte("99"))
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, bolt.FileName)
			b, err := bbolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Update(setup); err != nil {
				t.Fatal(err)
			}
			b.Close()
			before, _ := os.ReadFile(path)
			_, err = bolt.Open(dir, quiet)
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Errorf("open: %v; want an error naming the file", err)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Error("the refused file was changed")
			}
		})
	}
}

// An index of an older foldermirror is emptied, to be filled again.
func TestOpenEmptiesOlderIndexes(t *testing.T) {
	dir := t.TempDir()
	b, err := bbolt.Open(filepath.Join(dir, bolt.FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = b.Update(func(tx *bbolt.Tx) error {
		meta, err := tx.CreateBucket([]byte("meta"))
		if err != nil {
			return err
		}
		if err := meta.Put([]byte("schema"), []byte("3")); err != nil {
			return err
		}
		libs, err := tx.CreateBucket([]byte("libraries"))
		if err != nil {
			return err
		}
		_, err = libs.CreateBucket([]byte("lib"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	db := fmtest.OpenBolt(t, dir)
	if _, err := db.Library(context.Background(), "lib"); fm.ErrorCode(err) != fm.ENOTFOUND {
		t.Errorf("a library of the old index: %v", err)
	}
	fullSync(t, db, "lib", state, 10, folder("root", "", "Root"))
}

// An index another process holds is refused, once Open has waited its
// while (a tenth of a second here) for the lock, saying it is locked.
func TestOpenWhileLocked(t *testing.T) {
	bolt.SetOpenTimeout(t, 100*time.Millisecond)
	dir := t.TempDir()
	fmtest.OpenBolt(t, dir)
	_, err := bolt.Open(dir, quiet)
	if err == nil || !strings.Contains(err.Error(), "locked") {
		t.Errorf("second open: %v", err)
	}
}

// A corrupt index file is refused with an error naming it, and left as it
// was.
func TestOpenRefusesCorruptFiles(t *testing.T) {
	good := t.TempDir()
	db := fmtest.OpenBolt(t, good)
	fullSync(t, db, "lib", state, 100, folder("root", "", "Root"), folder("a", "root", "a"))
	db.Close()
	valid, err := os.ReadFile(filepath.Join(good, bolt.FileName))
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{
		"garbage":   bytes.Repeat([]byte("not a bbolt file "), 2000),
		"truncated": valid[:4096+100],
		"empty":     {},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, bolt.FileName)
			if err := os.WriteFile(path, content, 0o600); err != nil {
				t.Fatal(err)
			}
			db, err := bolt.Open(dir, quiet)
			if err == nil {
				db.Close()
				if name == "empty" {
					return // an empty file is a new index
				}
				t.Fatal("opened")
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name %s", err, path)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, content) {
				t.Error("the refused file was changed")
			}
		})
	}
}

// An index of schema 4 or 5 is kept and served, brought up to date: from
// 4, each library's changes token is dropped, so that its next sync is a
// full one (some versions of schema 4 wrote permission lists out of
// Drive's order); from 5 on, the tokens are kept. The index then keeps
// discoveries of shared drives, which schema 6 added.
func TestOpenUpgrades(t *testing.T) {
	for _, tc := range []struct {
		schema    string
		keepToken bool
	}{
		{"4", false},
		{"5", true},
	} {
		t.Run("schema "+tc.schema, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			db := fmtest.OpenBolt(t, dir)
			fullSync(t, db, "lib", state, 10, folder("root", "", "Root"), folder("a", "root", "a"))
			db.Close()
			writtenBySchema(t, dir, tc.schema)

			db = fmtest.OpenBolt(t, dir)
			st, err := db.Library(ctx, "lib")
			if err != nil || (st.StartPageToken != "") != tc.keepToken || st.Folders != 2 {
				t.Errorf("after the upgrade: %+v, %v; want the library served, keeping its changes token: %v", st, err, tc.keepToken)
			}
			if f, err := db.Folder(ctx, "lib", "a"); err != nil || f.Name != "a" {
				t.Errorf("a folder after the upgrade: %+v, %v", f, err)
			}
			d := fm.Discovery{Domain: "example.com", StorageAccount: "storage@example.com", Drives: []fm.DiscoveredDrive{{ID: "0a", Name: "A"}}}
			if err := db.PutDiscovery(ctx, d, fm.Fence{}); err != nil {
				t.Errorf("a discovery put after the upgrade: %v", err)
			}
			db.Close()
			rawBolt(t, dir, func(tx *bbolt.Tx) error {
				if v := string(tx.Bucket([]byte("meta")).Get([]byte("schema"))); v != bolt.SchemaVersion {
					t.Errorf("schema %q after the upgrade, want %q", v, bolt.SchemaVersion)
				}
				return nil
			})
		})
	}
}

// writtenBySchema makes the index in dir one of an earlier schema, 4 or
// 5: it has no discoveries.
func writtenBySchema(t *testing.T, dir, schema string) {
	t.Helper()
	rawBolt(t, dir, func(tx *bbolt.Tx) error {
		if err := tx.DeleteBucket([]byte("discoveries")); err != nil {
			return err
		}
		return tx.Bucket([]byte("meta")).Put([]byte("schema"), []byte(schema))
	})
}

// BenchmarkDiscovery measures the discoveries of 10,000 shared drives.
func BenchmarkDiscovery(b *testing.B) {
	indextest.BenchDiscovery(b, fmtest.OpenBolt(b, b.TempDir()))
}
