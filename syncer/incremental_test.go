package syncer_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/index/indextest"
	"github.com/foldermirror/foldermirror/internal/googlefake"
)

func (e *env) incremental(lib string) *fm.SyncResult {
	e.t.Helper()
	e.fake.ResetCalls()
	res, err := e.s.Sync(context.Background(), fm.SyncRequest{Library: lib, Mode: fm.SyncAuto}, nil)
	if err != nil {
		e.t.Fatalf("incremental sync of %s: %v", lib, err)
	}
	if res.Full {
		e.t.Fatalf("%s: a full sync ran where an incremental one was due", lib)
	}
	return res
}

func totalCalls(calls map[string]int) int {
	n := 0
	for method, c := range calls {
		if method != "oauth2.token" {
			n += c
		}
	}
	return n
}

func TestIncrementalSync(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	root := fake.CreateFolder(storage, "", "Root")
	a := fake.CreateFolder(storage, root, "A")
	a1 := fake.CreateFolder(storage, a, "A1")
	b := fake.CreateFolder(storage, root, "B")
	outside := fake.CreateFolder(storage, "", "Outside")
	big := fake.CreateFolder(storage, outside, "Big")
	for i := range 30 {
		fake.CreateFolder(storage, fake.CreateFolder(storage, big, fmt.Sprint("big ", i)), "leaf")
	}
	e := newEnv(t, fake, "id: lib, rootFolderId: "+root)
	e.sync("lib")

	steps := []struct {
		name   string
		change func()
		tree   []string
		calls  int
	}{
		{"no change", func() {}, []string{"Root", "A1<A", "A<Root", "B<Root"}, 1},
		{"rename", func() { fake.Rename(a1, "A one") }, []string{"Root", "A one<A", "A<Root", "B<Root"}, 1},
		{"move within", func() { fake.Move(a1, b) }, []string{"Root", "A one<B", "A<Root", "B<Root"}, 1},
		{"trash", func() { fake.Trash(b) }, []string{"Root", "A<Root"}, 1},
		// Back from the trash, B is new to the library: its subtree is
		// listed level by level (B's children, then A one's).
		{"untrash", func() { fake.Untrash(b) }, []string{"Root", "A one<B", "A<Root", "B<Root"}, 3},
		{"delete", func() { fake.Delete(b) }, []string{"Root", "A<Root"}, 1},
	}
	for _, st := range steps {
		st.change()
		res := e.incremental("lib")
		if got := e.tree("lib"); !slices.Equal(got, st.tree) {
			t.Errorf("%s: tree %v, want %v", st.name, got, st.tree)
		}
		if n := totalCalls(fake.Calls()); n != st.calls || res.Calls != int64(st.calls) {
			t.Errorf("%s: %d Drive calls (%d counted), want %d: %v", st.name, n, res.Calls, st.calls, fake.Calls())
		}
	}

	// A subtree moved in comes whole, in a few listings; moved out, it goes.
	fake.Move(big, a)
	res := e.incremental("lib")
	if res.Folders != 2+1+60 {
		t.Errorf("after moving Big in: %d folders, want 63", res.Folders)
	}
	if n := fake.CallCount("drive.files.list"); n > 3 {
		t.Errorf("moving a 61-folder subtree in took %d listings", n)
	}
	fake.Move(big, outside)
	if res := e.incremental("lib"); res.Folders != 2 {
		t.Errorf("after moving Big out: %d folders", res.Folders)
	}

	// Sharing an ancestor reaches its descendants.
	fake.Move(big, a)
	e.incremental("lib")
	fake.Share(root, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: "zed@example.com"})
	e.incremental("lib")
	snap, _ := e.db.Snapshot(context.Background(), "lib")
	for _, f := range snap {
		if !slices.ContainsFunc(fm.GrantsOf(f.Permissions), func(g fm.Grant) bool { return g.Principal == "user:zed@example.com" }) {
			t.Errorf("%s (%s) lacks the grant its ancestor was given", f.Name, f.ID)
		}
	}
}

// A folder made deep below a folder that leaves the library in the same
// batch leaves with it, its subtree never listed: Drive logging the items
// alone, the walk up from its parent, a folder of the index that stays in
// its place, must go on to the root past the one that left.
func TestMadeBelowAFolderThatLeaves(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	fake.LogItemAlone(true)
	root := fake.CreateFolder(storage, "", "Root")
	outside := fake.CreateFolder(storage, "", "Outside")
	a := fake.CreateFolder(storage, root, "A")
	c := fake.CreateFolder(storage, fake.CreateFolder(storage, a, "B"), "C")
	leaf := fake.CreateFolder(storage, root, "Leaf")
	e := newEnv(t, fake, "id: lib, rootFolderId: "+root)
	e.sync("lib")

	fake.Move(leaf, outside) // a folder without children leaves too
	fake.Move(a, outside)
	fake.CreateFolder(storage, fake.CreateFolder(storage, c, "N"), "N1")
	res := e.incremental("lib")
	if got, want := e.tree("lib"), []string{"Root"}; !slices.Equal(got, want) {
		t.Errorf("tree %v, want %v", got, want)
	}
	if n := totalCalls(fake.Calls()); n != 1 {
		t.Errorf("%d Drive calls, want 1 (changes.list): %v", n, fake.Calls())
	}
	if res.Applied != 4 {
		t.Errorf("%d folders applied, want 4 (Leaf, and A, B and C)", res.Applied)
	}
}

// readsCounter is an index that remembers the folders read ahead
// (fm.FoldersReader), and says whether it can tell which have children.
type readsCounter struct {
	indextest.Index
	read map[string]bool
}

func (r *readsCounter) Folders(ctx context.Context, libraryID string, ids []string) ([]fm.Folder, error) {
	for _, id := range ids {
		r.read[id] = true
	}
	return r.Index.(fm.FoldersReader).Folders(ctx, libraryID, ids)
}

func (r *readsCounter) Parents(ctx context.Context, libraryID string, ids []string) ([]string, error) {
	return r.Index.(fm.ParentsReader).Parents(ctx, libraryID, ids)
}

// A sync reads the changed folders and their parents, but not their
// ancestors, while none of the folders that leave their place has
// children; when one has, it reads their ancestors too.
func TestIncrementalReadsAncestorsOnlyWhenNeeded(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	fake.LogItemAlone(true)
	root := fake.CreateFolder(storage, "", "Root")
	outside := fake.CreateFolder(storage, "", "Outside")
	a := fake.CreateFolder(storage, root, "A")
	b := fake.CreateFolder(storage, a, "B")
	c := fake.CreateFolder(storage, b, "C")
	d := fake.CreateFolder(storage, c, "D")
	e1 := fake.CreateFolder(storage, d, "E1")
	e2 := fake.CreateFolder(storage, d, "E2")
	other := fake.CreateFolder(storage, root, "Other")
	e := newEnv(t, fake, "id: lib, rootFolderId: "+root)
	e.sync("lib")
	reads := &readsCounter{Index: e.db, read: map[string]bool{}}
	e.db = reads
	e.restartSyncer()

	// Renamed, moved and trashed, none with children; a document made and
	// one trashed; and a folder outside changed, for which the root is
	// read from Drive again.
	fake.Rename(e1, "E one")
	fake.Move(e2, other)
	fake.Trash(fake.CreateFolder(storage, other, "gone"))
	fake.CreateFile(storage, d, "notes", "application/vnd.google-apps.document")
	fake.Trash(fake.CreateFile(storage, c, "old notes", "application/vnd.google-apps.document"))
	fake.Rename(outside, "Outside, renamed")
	e.incremental("lib")
	for _, id := range []string{a, b, c} {
		if reads.read[id] {
			t.Errorf("an ancestor of the changed folders, %s, was read", id)
		}
	}
	if !reads.read[d] || !reads.read[other] {
		t.Errorf("the changed folders' parents were not read: %v", reads.read)
	}

	// D, with children, moves: a walk up from E1's parent, D, must see it.
	clear(reads.read)
	fake.Move(d, other)
	fake.Rename(e1, "E1 again")
	e.incremental("lib")
	if !reads.read[b] || !reads.read[a] {
		t.Errorf("moving a folder with children, its old ancestors were not read: %v", reads.read)
	}
	if got, want := e.tree("lib"), []string{"Root", "A<Root", "B<A", "C<B", "D<Other", "E1 again<D", "E2<Other", "Other<Root"}; !slices.Equal(got, want) {
		t.Errorf("tree %v, want %v", got, want)
	}
}

// A sync that reads the whole library says why, in its result.
func TestFullSyncSaysWhy(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	root := fake.CreateFolder(storage, "", "Root")
	e := newEnv(t, fake, "id: lib, rootFolderId: "+root)
	for _, step := range []struct {
		name   string
		mode   fm.SyncMode
		before func()
		want   fm.FullReason
	}{
		{"never synced", fm.SyncAuto, func() {}, fm.FullFirst},
		{"incremental", fm.SyncAuto, func() {}, ""},
		{"asked", fm.SyncFull, func() {}, fm.FullAsked},
		{"token refused", fm.SyncAuto, fake.ExpireChangeTokens, fm.FullTokenRefused},
	} {
		step.before()
		res, err := e.s.Sync(context.Background(), fm.SyncRequest{Library: "lib", Mode: step.mode}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.FullReason != step.want || res.Full != (step.want != "") {
			t.Errorf("%s: full %v, reason %q; want %q", step.name, res.Full, res.FullReason, step.want)
		}
	}
}

// A token Drive no longer accepts makes the sync read the whole library.
func TestExpiredTokenFallsBackToFullSync(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	root := fake.CreateFolder(storage, "", "Root")
	e := newEnv(t, fake, "id: lib, rootFolderId: "+root)
	e.sync("lib")
	fake.CreateFolder(storage, root, "New")
	fake.ExpireChangeTokens()
	res, err := e.s.Sync(context.Background(), fm.SyncRequest{Library: "lib", Mode: fm.SyncAuto}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Full || res.Folders != 2 {
		t.Errorf("result %+v, want a full sync of 2 folders", res)
	}
	if res := e.incremental("lib"); res.Changes != 0 {
		t.Errorf("after the fallback: %+v", res)
	}
}

// A shared drive out of the storage account's reach (deleted, or the
// account removed from it) fails its library's incremental sync at the
// first call, saying so: its change log's 404 is not a refused token,
// whose full sync would read the drive again, whole had the account been
// added back meanwhile.
func TestSharedDriveGoneIsNoRefusedToken(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		gone func(fake *googlefake.Server, drive, member string)
	}{
		{"deleted", func(fake *googlefake.Server, drive, _ string) { fake.DeleteSharedDrive(drive) }},
		{"the account removed", func(fake *googlefake.Server, drive, member string) { fake.Unshare(drive, member) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := startFake(t)
			d := fake.CreateSharedDrive("Team", admin)
			member := fake.Share(d, googlefake.Permission{Type: "user", Role: "writer", EmailAddress: storage})
			fake.CreateFolder(admin, d, "Plans")
			e := newEnv(t, fake, "id: team, sharedDriveId: "+d)
			e.sync("team")
			tc.gone(fake, d, member)
			fake.ResetCalls()
			res, err := e.s.Sync(context.Background(), fm.SyncRequest{Library: "team", Mode: fm.SyncAuto}, nil)
			if want := "shared drive " + d + " not found, or not shared with storage account " + storage; err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("sync: %+v, %v; want an error saying %q", res, err, want)
			}
			if calls := fake.Calls(); !maps.Equal(calls, map[string]int{"drive.changes.list": 1}) {
				t.Errorf("calls %v; want the change log's alone", calls)
			}
		})
	}
}

func TestSharedDriveIncremental(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	d := fake.CreateSharedDrive("Team", storage)
	plans := fake.CreateFolder(storage, d, "Plans")
	e := newEnv(t, fake, "id: team, sharedDriveId: "+d)
	e.sync("team")

	fake.Rename(plans, "Plans 2026")
	e.incremental("team")
	if calls := fake.Calls(); totalCalls(calls) != 1 {
		t.Errorf("a rename in a shared drive: %v, want changes.list only (Plans only inherits)", calls)
	}
	fake.Share(plans, googlefake.Permission{Type: "user", Role: "writer", EmailAddress: "own@example.com"})
	e.incremental("team")
	if calls := fake.Calls(); totalCalls(calls) != 2 || calls["drive.permissions.list"] != 1 {
		t.Errorf("sharing a shared-drive folder: %v, want changes.list and the folder's permissions", calls)
	}
	fake.Share(d, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: "new@example.com"})
	fake.Rename(d, "Team 2026")
	e.incremental("team")
	if got := e.tree("team"); !slices.Equal(got, []string{"Team 2026", "Plans 2026<Team 2026"}) {
		t.Errorf("tree %v", got)
	}
	for _, id := range []string{d, plans} {
		if !slices.ContainsFunc(e.grants("team", id), func(g fm.Grant) bool { return g.Principal == "user:new@example.com" }) {
			t.Errorf("%s lacks the new member", id)
		}
	}
}
