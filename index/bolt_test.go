package index_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/index"
	bolt "go.etcd.io/bbolt"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func openTemp(t *testing.T, dir string) *index.DB {
	t.Helper()
	db, err := index.Open(dir, quiet)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// folder returns a synced folder granting reader to each user.
func folder(id, parent, name string, readers ...string) fm.SyncedFolder {
	sf := fm.SyncedFolder{Folder: fm.Folder{ID: id, ParentID: parent, Name: name}}
	for i, r := range readers {
		sf.Permissions = append(sf.Permissions, fm.Permission{ID: fmt.Sprint(i), Type: "user", Role: "reader", EmailAddress: r})
	}
	return sf
}

// sync replaces the library's tree with folders, in batches of batch.
func sync(t *testing.T, db *index.DB, lib string, batch int, folders ...fm.SyncedFolder) {
	t.Helper()
	w, err := db.BeginFullSync(context.Background(), lib)
	if err != nil {
		t.Fatal(err)
	}
	for len(folders) > 0 {
		n := min(batch, len(folders))
		if err := w.Put(folders[:n]); err != nil {
			t.Fatal(err)
		}
		folders = folders[n:]
	}
	if _, err := w.Commit(fm.LibraryState{RootID: "root", StartPageToken: "7"}); err != nil {
		t.Fatal(err)
	}
}

type visit struct {
	ID    string
	Depth int
}

func walkAll(t *testing.T, db *index.DB, lib, parent string, pick fm.PickFunc) []visit {
	t.Helper()
	var got []visit
	if pick == nil {
		pick = func(*fm.Folder, int) (bool, bool) { return true, true }
	}
	err := db.Walk(context.Background(), lib, parent, pick, func(f *fm.Folder, depth int) error {
		got = append(got, visit{f.ID, depth})
		return nil
	})
	if err != nil {
		t.Fatalf("walk: %v", err)
	}
	return got
}

func TestWalkOrdersSiblingsByFoldedNameThenID(t *testing.T) {
	db := openTemp(t, t.TempDir())
	sync(t, db, "lib", 2,
		folder("root", "", "Root"),
		folder("b2", "root", "banana"),
		folder("b1", "root", "Banana"),
		folder("a", "root", "apple"),
		folder("z", "root", "Ärger"),
		folder("c", "root", "Cherry"),
		folder("a.x", "a", "x"),
		folder("a.y", "a", "Y"),
		folder("a.x.1", "a.x", "deep"),
		folder("ab", "root", "apple pie"),
	)
	want := []visit{
		{"a", 0}, {"a.x", 1}, {"a.x.1", 2}, {"a.y", 1},
		{"ab", 0}, {"b1", 0}, {"b2", 0}, {"c", 0}, {"z", 0},
	}
	if got := walkAll(t, db, "lib", "root", nil); !slices.Equal(got, want) {
		t.Errorf("walk:\n got %v\nwant %v", got, want)
	}
}

func TestWalkPick(t *testing.T) {
	db := openTemp(t, t.TempDir())
	sync(t, db, "lib", 100,
		folder("root", "", "Root"),
		folder("a", "root", "a"), folder("a1", "a", "1"),
		folder("b", "root", "b"), folder("b1", "b", "1"),
		folder("c", "root", "c"), folder("c1", "c", "1"),
	)
	// a: hidden but walked into; b: pruned; c: shown and walked into.
	pick := func(f *fm.Folder, depth int) (bool, bool) {
		switch f.ID {
		case "a":
			return false, true
		case "b":
			return true, false
		}
		return true, true
	}
	want := []visit{{"a1", 1}, {"b", 0}, {"c", 0}, {"c1", 1}}
	if got := walkAll(t, db, "lib", "root", pick); !slices.Equal(got, want) {
		t.Errorf("walk: got %v, want %v", got, want)
	}
}

// A walk over more folders than one transaction reads yields them all, in
// order, and never while a transaction is open.
func TestWalkLargeTreeInShortTransactions(t *testing.T) {
	db := openTemp(t, t.TempDir())
	folders := []fm.SyncedFolder{folder("root", "", "Root")}
	var want []visit
	for i := range 60 {
		top := fmt.Sprintf("t%02d", i)
		folders = append(folders, folder(top, "root", top))
		want = append(want, visit{top, 0})
		for j := range 50 {
			id := fmt.Sprintf("%s-%02d", top, j)
			folders = append(folders, folder(id, top, id))
			want = append(want, visit{id, 1})
		}
	}
	sync(t, db, "lib", 500, folders...)

	var got []visit
	err := db.Walk(context.Background(), "lib", "root",
		func(*fm.Folder, int) (bool, bool) { return true, true },
		func(f *fm.Folder, depth int) error {
			if n := db.OpenReadTransactions(); n != 0 {
				return fmt.Errorf("yield called with %d read transactions open", n)
			}
			got = append(got, visit{f.ID, depth})
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("walk of %d folders gave %d, first difference at %d", len(want), len(got), firstDiff(got, want))
	}
}

func firstDiff(a, b []visit) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// Names longer than a bbolt key allows, and names that agree on a long
// prefix, are stored and ordered by their whole text.
func TestWalkLongNames(t *testing.T) {
	db := openTemp(t, t.TempDir())
	common := strings.Repeat("ж", 5000) // 10,000 bytes
	emoji := strings.Repeat("🙂", 10000) // 40,000 bytes: over bbolt's key limit
	sync(t, db, "lib", 100,
		folder("root", "", "Root"),
		folder("x3", "root", common+"c"),
		folder("x1", "root", common+"A"),
		folder("x2", "root", common+"b"),
		folder("x0", "root", common),
		folder("e", "root", emoji),
		folder("a", "root", "a"),
		folder("x1.child", "x1", "child"),
	)
	// "ж" is U+0436 and "🙂" U+1F642: the emoji name sorts last.
	want := []visit{{"a", 0}, {"x0", 0}, {"x1", 0}, {"x1.child", 1}, {"x2", 0}, {"x3", 0}, {"e", 0}}
	if got := walkAll(t, db, "lib", "root", nil); !slices.Equal(got, want) {
		t.Errorf("walk: got %v, want %v", got, want)
	}
	f, err := db.Folder(context.Background(), "lib", "e")
	if err != nil || f.Name != emoji {
		t.Errorf("folder e: name of %d bytes, err %v", len(f.Name), err)
	}
}

func TestReadersSeeOldTreeUntilCommit(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t, t.TempDir())
	sync(t, db, "lib", 10, folder("root", "", "Root"), folder("old", "root", "old", "alice@example.com"))

	w, err := db.BeginFullSync(ctx, "lib")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Put([]fm.SyncedFolder{folder("root", "", "Root"), folder("new", "root", "new", "bob@example.com")}); err != nil {
		t.Fatal(err)
	}
	if got := walkAll(t, db, "lib", "root", nil); !slices.Equal(got, []visit{{"old", 0}}) {
		t.Errorf("before commit: %v", got)
	}
	if _, err := db.Permissions(ctx, "lib", "new"); fm.ErrorCode(err) != fm.ENOTFOUND {
		t.Errorf("before commit: the new folder's permissions are visible: %v", err)
	}
	if _, err := w.Commit(fm.LibraryState{RootID: "root", StartPageToken: "9"}); err != nil {
		t.Fatal(err)
	}
	if got := walkAll(t, db, "lib", "root", nil); !slices.Equal(got, []visit{{"new", 0}}) {
		t.Errorf("after commit: %v", got)
	}
	if _, err := db.Folder(ctx, "lib", "old"); fm.ErrorCode(err) != fm.ENOTFOUND {
		t.Errorf("old folder after commit: %v", err)
	}
	if f, err := db.Folder(ctx, "lib", "new"); err != nil || len(f.Grants) != 1 || f.Grants[0].Principal != "user:bob@example.com" {
		t.Errorf("new folder after commit: %+v %v", f, err)
	}
	st, err := db.Library(ctx, "lib")
	if err != nil {
		t.Fatal(err)
	}
	if st.StartPageToken != "9" || st.Folders != 2 || st.Permissions != 1 || st.ID != "lib" {
		t.Errorf("state after commit: %+v", st)
	}
	if n := db.Generations("lib"); n != 1 {
		t.Errorf("%d trees kept after commit, want 1", n)
	}
	if err := w.Abort(); err != nil {
		t.Errorf("abort after commit: %v", err)
	}
}

func TestAbortAndCrashLeaveTheOldTree(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := index.Open(dir, quiet)
	if err != nil {
		t.Fatal(err)
	}
	sync(t, db, "lib", 10, folder("root", "", "Root"), folder("old", "root", "old"))

	aborted, _ := db.BeginFullSync(ctx, "lib")
	_ = aborted.Put([]fm.SyncedFolder{folder("root", "", "Root"), folder("x", "root", "x")})
	if err := aborted.Abort(); err != nil {
		t.Fatal(err)
	}
	if n := db.Generations("lib"); n != 1 {
		t.Errorf("%d trees after abort, want 1", n)
	}
	crashed, _ := db.BeginFullSync(ctx, "lib")
	_ = crashed.Put([]fm.SyncedFolder{folder("root", "", "Root"), folder("y", "root", "y")})
	db.Close() // as if the process died before Commit

	db = openTemp(t, dir)
	if n := db.Generations("lib"); n != 1 {
		t.Errorf("%d trees after reopening, want 1", n)
	}
	if got := walkAll(t, db, "lib", "root", nil); !slices.Equal(got, []visit{{"old", 0}}) {
		t.Errorf("after crash: %v", got)
	}
	// A first sync that never committed leaves no library behind.
	first, _ := db.BeginFullSync(ctx, "fresh")
	_ = first.Put([]fm.SyncedFolder{folder("r", "", "r")})
	db.Close()
	db = openTemp(t, dir)
	if _, err := db.Library(ctx, "fresh"); fm.ErrorCode(err) != fm.ENOTFOUND {
		t.Errorf("uncommitted library: %v", err)
	}
}

func TestReads(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t, t.TempDir())
	perms := []fm.Permission{
		{ID: "9", Type: "user", Role: "owner", EmailAddress: "Owner@Example.com", DisplayName: "O"},
		{ID: "anyoneWithLink", Type: "anyone", Role: "reader"},
		{ID: "3", Type: "domain", Role: "writer", Domain: "example.com", AllowFileDiscovery: true},
	}
	root := fm.SyncedFolder{Folder: fm.Folder{ID: "root", Name: "Root", ResourceKey: "rk", DefinitionID: "def",
		OwnRestrictedDownload: true, RestrictedDownload: true, WritersCanShare: true}, Permissions: perms}
	sync(t, db, "lib", 10, root)

	got, err := db.Permissions(ctx, "lib", "root")
	if err != nil || !slices.Equal(got, perms) {
		t.Errorf("permissions: %v %v", got, err)
	}
	f, err := db.Folder(ctx, "lib", "root")
	if err != nil {
		t.Fatal(err)
	}
	want := root.Folder
	want.Grants = []fm.Grant{
		{Principal: "user:owner@example.com", Role: fm.RoleOwner},
		{Principal: "anyone", Role: fm.RoleReader, WithLink: true},
		{Principal: "domain:example.com", Role: fm.RoleWriter},
	}
	if fmt.Sprint(*f) != fmt.Sprint(want) {
		t.Errorf("folder:\n got %+v\nwant %+v", *f, want)
	}
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"unknown folder", second(db.Folder(ctx, "lib", "nope"))},
		{"unknown folder permissions", second(db.Permissions(ctx, "lib", "nope"))},
		{"unsynced library", second(db.Library(ctx, "other"))},
		{"unsynced library folder", second(db.Folder(ctx, "other", "root"))},
		{"unsynced library walk", db.Walk(ctx, "other", "root", nil, nil)},
	} {
		if fm.ErrorCode(tc.err) != fm.ENOTFOUND {
			t.Errorf("%s: %v, want ENOTFOUND", tc.name, tc.err)
		}
	}
}

func second[T any](_ T, err error) error { return err }

func TestOpenRefusesForeignAndNewerFiles(t *testing.T) {
	for name, setup := range map[string]func(tx *bolt.Tx) error{
		"foreign": func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("widgets")); return err },
		"newer": func(tx *bolt.Tx) error {
			b, err := tx.CreateBucket([]byte("meta"))
			if err != nil {
				return err
			}
			return b.Put([]byte("schema"), []byte("99"))
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			b, err := bolt.Open(filepath.Join(dir, index.FileName), 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Update(setup); err != nil {
				t.Fatal(err)
			}
			b.Close()
			_, err = index.Open(dir, quiet)
			if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, index.FileName)) {
				t.Errorf("open: %v; want an error naming the file", err)
			}
		})
	}
}

func TestOpenWhileLocked(t *testing.T) {
	dir := t.TempDir()
	openTemp(t, dir)
	_, err := index.Open(dir, quiet)
	if err == nil || !strings.Contains(err.Error(), "locked") {
		t.Errorf("second open: %v", err)
	}
}

func TestFinishedWriterRefusesMore(t *testing.T) {
	db := openTemp(t, t.TempDir())
	w, _ := db.BeginFullSync(context.Background(), "lib")
	_ = w.Put([]fm.SyncedFolder{folder("root", "", "r")})
	if _, err := w.Commit(fm.LibraryState{RootID: "root"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Put([]fm.SyncedFolder{folder("x", "root", "x")}); err == nil {
		t.Error("Put after Commit succeeded")
	}
	if _, err := w.Commit(fm.LibraryState{}); err == nil {
		t.Error("second Commit succeeded")
	}
	if err := w.Abort(); err != nil {
		t.Errorf("Abort after Commit: %v", err)
	}
}

// A corrupt index file is refused with an error naming it, and left as it
// was.
func TestOpenRefusesCorruptFiles(t *testing.T) {
	good := t.TempDir()
	db := openTemp(t, good)
	sync(t, db, "lib", 100, folder("root", "", "Root"), folder("a", "root", "a"))
	db.Close()
	valid, err := os.ReadFile(filepath.Join(good, index.FileName))
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
			path := filepath.Join(dir, index.FileName)
			if err := os.WriteFile(path, content, 0o600); err != nil {
				t.Fatal(err)
			}
			db, err := index.Open(dir, quiet)
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
