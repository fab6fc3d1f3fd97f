package indextest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
)

func testReads(t *testing.T, b Backend) {
	ctx := context.Background()
	idx := b.Open(t)
	perms := []fm.Permission{
		{ID: "9", Type: "user", Role: "owner", EmailAddress: "owner@example.com", DisplayName: "O", PhotoLink: "https://p"},
		{ID: "anyoneWithLink", Type: "anyone", Role: "reader"},
		{ID: "3", Type: "domain", Role: "writer", Domain: "example.com", AllowFileDiscovery: true},
	}
	long := strings.Repeat("🙂", 10000) // 40,000 bytes: longer than a bbolt key
	root := fm.SyncedFolder{Folder: fm.Folder{ID: "root", Name: long, ResourceKey: "rk", DefinitionID: "def",
		OwnRestrictedDownload: true, RestrictedDownload: true, WritersCanShare: true}, Permissions: perms, OwnPermissions: perms[:1]}
	FullSync(t, idx, "lib", rootState, 10, root)

	got, err := idx.Permissions(ctx, "lib", "root")
	if err != nil || !reflect.DeepEqual(got, perms) {
		t.Errorf("permissions: %v %v", got, err)
	}
	f, err := idx.Folder(ctx, "lib", "root")
	if err != nil {
		t.Fatal(err)
	}
	want := root.Folder
	want.PermissionSet, want.OwnSet = fm.NewPermissionSet(perms).Key, fm.NewPermissionSet(perms[:1]).Key
	if !reflect.DeepEqual(*f, want) {
		t.Errorf("folder:\n got %+v\nwant %+v", *f, want)
	}
	if own, err := idx.PermissionSet(ctx, "lib", f.OwnSet); err != nil || !reflect.DeepEqual(own, perms[:1]) {
		t.Errorf("own set: %v %v", own, err)
	}
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"unknown folder", second(idx.Folder(ctx, "lib", "nope"))},
		{"unknown folder permissions", second(idx.Permissions(ctx, "lib", "nope"))},
		{"unknown set", second(idx.PermissionSet(ctx, "lib", fm.PermissionSetKey{1}))},
		{"unsynced library", second(idx.Library(ctx, "other"))},
		{"unsynced library folder", second(idx.Folder(ctx, "other", "root"))},
		{"unsynced library read", second(idx.ReadLibrary(ctx, "other", &collector{}))},
		{"unsynced library changes", second(idx.Changes(ctx, "other", 0))},
	} {
		if fm.ErrorCode(tc.err) != fm.ENOTFOUND {
			t.Errorf("%s: %v, want ENOTFOUND", tc.name, tc.err)
		}
	}
}

// collector keeps what a ReadLibrary gives.
type collector struct {
	sets    map[fm.PermissionSetKey][]fm.Permission
	folders map[string]fm.Folder
	order   []string // "set" or "folder", as they came
}

func (c *collector) PermissionSet(s fm.PermissionSet) error {
	if c.sets == nil {
		c.sets = map[fm.PermissionSetKey][]fm.Permission{}
	}
	c.sets[s.Key] = s.Permissions
	c.order = append(c.order, "set")
	return nil
}

func (c *collector) Folder(f *fm.Folder) error {
	if c.folders == nil {
		c.folders = map[string]fm.Folder{}
	}
	g := *f // the strings are the index's: copies are kept
	g.ID, g.ParentID, g.Name = strings.Clone(g.ID), strings.Clone(g.ParentID), strings.Clone(g.Name)
	g.ResourceKey, g.DefinitionID = strings.Clone(g.ResourceKey), strings.Clone(g.DefinitionID)
	c.folders[g.ID] = g
	c.order = append(c.order, "folder")
	return nil
}

func testReadLibrary(t *testing.T, b Backend) {
	ctx := context.Background()
	idx := b.Open(t)
	folders := []fm.SyncedFolder{Folder("root", "", "Root", "a@e.com")}
	for i := range 300 {
		folders = append(folders, Folder(fmt.Sprintf("f%03d", i), "root", fmt.Sprint(i), fmt.Sprintf("u%d@e.com", i%7)))
	}
	FullSync(t, idx, "lib", rootState, 64, folders...)
	var c collector
	st, err := idx.ReadLibrary(ctx, "lib", &c)
	if err != nil {
		t.Fatal(err)
	}
	if st.Revision != 1 || st.RootID != "root" || st.Folders != 301 {
		t.Errorf("state %+v", st)
	}
	if len(c.folders) != 301 || len(c.sets) != 9 { // 8 lists, and the empty own list
		t.Fatalf("read %d folders and %d sets, want 301 and 9", len(c.folders), len(c.sets))
	}
	if i := slices.Index(c.order, "folder"); slices.Contains(c.order[i:], "set") {
		t.Error("a set came after a folder")
	}
	for _, sf := range folders {
		f := c.folders[sf.ID]
		if f.Name != sf.Name || f.ParentID != sf.ParentID || !reflect.DeepEqual(c.sets[f.PermissionSet], sf.Permissions) {
			t.Fatalf("folder %s read as %+v with permissions %v", sf.ID, f, c.sets[f.PermissionSet])
		}
	}
}

func testReadersSeeOldTreeUntilCommit(t *testing.T, b Backend) {
	ctx := context.Background()
	idx := b.Open(t)
	FullSync(t, idx, "lib", rootState, 10, Folder("root", "", "Root"), Folder("old", "root", "old", "alice@example.com"))

	w, err := idx.BeginFullSync(ctx, "lib", fm.Fence{})
	if err != nil {
		t.Fatal(err)
	}
	sets, folders, links := FullSyncParts([]fm.SyncedFolder{Folder("new", "root", "new", "bob@example.com"), Folder("root", "", "Root")})
	must(t, w.PutPermissionSets(sets))
	must(t, w.PutFolders(folders))
	must(t, w.PutChildren(links))
	if _, err := idx.Folder(ctx, "lib", "new"); fm.ErrorCode(err) != fm.ENOTFOUND {
		t.Errorf("before commit: the new folder is visible: %v", err)
	}
	if _, err := idx.Folder(ctx, "lib", "old"); err != nil {
		t.Errorf("before commit: the old folder is gone: %v", err)
	}
	if _, err := w.Commit(fm.LibraryState{RootID: "root", StartPageToken: "9"}); err != nil {
		t.Fatal(err)
	}
	if _, err := idx.Folder(ctx, "lib", "old"); fm.ErrorCode(err) != fm.ENOTFOUND {
		t.Errorf("old folder after commit: %v", err)
	}
	if p, err := idx.Permissions(ctx, "lib", "new"); err != nil || len(p) != 1 || p[0].EmailAddress != "bob@example.com" {
		t.Errorf("new folder after commit: %+v %v", p, err)
	}
	st, err := idx.Library(ctx, "lib")
	if err != nil {
		t.Fatal(err)
	}
	if st.StartPageToken != "9" || st.Folders != 2 || st.Permissions != 1 || st.ID != "lib" {
		t.Errorf("state after commit: %+v", st)
	}
	if err := w.Abort(); err != nil {
		t.Errorf("abort after commit: %v", err)
	}
}

func testAbortLeavesTheOldTree(t *testing.T, b Backend) {
	ctx := context.Background()
	idx := b.Open(t)
	FullSync(t, idx, "lib", rootState, 10, Folder("root", "", "Root"), Folder("old", "root", "old"))
	w, err := idx.BeginFullSync(ctx, "lib", fm.Fence{})
	if err != nil {
		t.Fatal(err)
	}
	sets, folders, _ := FullSyncParts([]fm.SyncedFolder{Folder("root", "", "Root"), Folder("x", "root", "x")})
	must(t, w.PutPermissionSets(sets))
	must(t, w.PutFolders(folders))
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if _, err := idx.Folder(ctx, "lib", "old"); err != nil {
		t.Errorf("after abort: %v", err)
	}
	if _, err := idx.Folder(ctx, "lib", "x"); fm.ErrorCode(err) != fm.ENOTFOUND {
		t.Errorf("after abort, the aborted tree shows: %v", err)
	}
	// A first sync that is aborted leaves no library behind.
	first, err := idx.BeginFullSync(ctx, "fresh", fm.Fence{})
	if err != nil {
		t.Fatal(err)
	}
	must(t, first.Abort())
	if _, err := idx.Library(ctx, "fresh"); fm.ErrorCode(err) != fm.ENOTFOUND {
		t.Errorf("aborted first sync: %v", err)
	}
	// The index goes on working.
	FullSync(t, idx, "lib", rootState, 10, Folder("root", "", "Root"), Folder("y", "root", "y"))
	if _, err := idx.Folder(ctx, "lib", "y"); err != nil {
		t.Errorf("a full sync after an abort: %v", err)
	}
}

func testWriterChecksOrder(t *testing.T, b Backend) {
	ctx := context.Background()
	idx := b.Open(t)
	w, err := idx.BeginFullSync(ctx, "lib", fm.Fence{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort() //nolint:errcheck // the test is of what comes before
	sets, folders, _ := FullSyncParts([]fm.SyncedFolder{Folder("a", "", "a"), Folder("b", "a", "b"), Folder("c", "a", "c")})
	must(t, w.PutPermissionSets(sets))
	if err := w.PutFolders([]fm.Folder{folders[1], folders[0]}); err == nil {
		t.Error("folders out of order were accepted")
	}
	stray := folders[2]
	stray.PermissionSet = fm.PermissionSetKey{9}
	if err := w.PutFolders([]fm.Folder{stray}); err == nil {
		t.Error("a folder whose set was not put was accepted")
	}
}

func testFinishedWriterRefusesMore(t *testing.T, b Backend) {
	idx := b.Open(t)
	w, err := idx.BeginFullSync(context.Background(), "lib", fm.Fence{})
	if err != nil {
		t.Fatal(err)
	}
	sets, folders, _ := FullSyncParts([]fm.SyncedFolder{Folder("root", "", "r")})
	must(t, w.PutPermissionSets(sets))
	must(t, w.PutFolders(folders))
	if _, err := w.Commit(fm.LibraryState{RootID: "root"}); err != nil {
		t.Fatal(err)
	}
	if err := w.PutFolders([]fm.Folder{{ID: "x"}}); err == nil {
		t.Error("PutFolders after Commit succeeded")
	}
	if _, err := w.Commit(fm.LibraryState{}); err == nil {
		t.Error("second Commit succeeded")
	}
	if err := w.Abort(); err != nil {
		t.Errorf("Abort after Commit: %v", err)
	}
}

func testDriftAndRevision(t *testing.T, b Backend) {
	ctx := context.Background()
	idx := b.Open(t)
	base := []fm.SyncedFolder{Folder("root", "", "Root"), Folder("a", "root", "a", "x@e.com"), Folder("b", "root", "b"), Folder("c", "root", "c")}
	if d := FullSync(t, idx, "lib", rootState, 10, base...); d != (fm.Drift{}) {
		t.Errorf("first sync drift %+v; with nothing before, nothing drifted", d)
	}
	if d := FullSync(t, idx, "lib", rootState, 10, base...); d != (fm.Drift{}) {
		t.Errorf("same tree: drift %+v", d)
	}
	if st, _ := idx.Library(ctx, "lib"); st.Revision != 1 {
		t.Errorf("revision %d after an unchanged resync, want 1", st.Revision)
	}
	changed := []fm.SyncedFolder{Folder("root", "", "Root"), Folder("a", "root", "a", "y@e.com"), Folder("b", "root", "B"), Folder("d", "root", "d")}
	if d := FullSync(t, idx, "lib", rootState, 10, changed...); d != (fm.Drift{Added: 1, Removed: 1, Changed: 2}) {
		t.Errorf("drift %+v, want 1 added (d), 1 removed (c), 2 changed (a's grant, b's name)", d)
	}
	if st, _ := idx.Library(ctx, "lib"); st.Revision != 2 {
		t.Errorf("revision %d, want 2", st.Revision)
	}
}

// testRevision checks that the index makes the revision grow exactly when
// what readers see changes, whoever writes, and keeps it.
func testRevision(t *testing.T, b Backend) {
	base := func() []fm.SyncedFolder {
		return []fm.SyncedFolder{Folder("root", "", "Root", "x@e.com"), Folder("a", "root", "a", "x@e.com"), Folder("b", "root", "b")}
	}
	baseState := fm.LibraryState{RootID: "root", DriveID: "d1", StartPageToken: "1"}
	fullSync := func(st fm.LibraryState, folders []fm.SyncedFolder) func(*testing.T, Index) {
		return func(t *testing.T, idx Index) { FullSync(t, idx, "lib", st, 10, folders...) }
	}
	update := func(fn func(fm.LibraryTx) error) func(*testing.T, Index) {
		return func(t *testing.T, idx Index) {
			if err := idx.UpdateLibrary(context.Background(), "lib", fm.Fence{}, fn); err != nil {
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
		step  func(*testing.T, Index)
		grows bool
	}{
		{"full sync, same folders, sharing restriction flipped", fullSync(flipped, base()), true},
		{"full sync, same folders, other root", fullSync(moved, base()), true},
		{"identical full sync", fullSync(baseState, base()), false},
		{"full sync, new token only", fullSync(fm.LibraryState{RootID: "root", DriveID: "d1", StartPageToken: "9"}, base()), false},
		{"full sync, a folder renamed", fullSync(baseState, append(base()[:2], Folder("b", "root", "B"))), true},
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
		{"update deleting a missing folder", update(func(tx fm.LibraryTx) error { return tx.Delete("nope") }), false},
		{"update putting one folder", update(func(tx fm.LibraryTx) error { return tx.Put(Folder("c", "root", "c")) }), true},
		{"update deleting one folder", update(func(tx fm.LibraryTx) error { return tx.Delete("b") }), true},
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
			b.parallel(t)
			ctx := context.Background()
			idx := b.Open(t)
			fullSync(baseState, base())(t, idx)
			before, err := idx.Library(ctx, "lib")
			if err != nil {
				t.Fatal(err)
			}
			if before.Revision != 1 {
				t.Fatalf("revision %d after the first sync, want 1", before.Revision)
			}
			tt.step(t, idx)
			want := before.Revision
			if tt.grows {
				want++
			}
			if after, err := idx.Library(ctx, "lib"); err != nil || after.Revision != want {
				t.Errorf("revision %v (%v), want %d", after, err, want)
			}
			reopened := b.Reopen(t, idx)
			if st, err := reopened.Library(ctx, "lib"); err != nil || st.Revision != want {
				t.Errorf("after reopening: revision %v (%v), want %d", st, err, want)
			}
		})
	}
}

func testUpdateLibrary(t *testing.T, b Backend) {
	ctx := context.Background()
	idx := b.Open(t)
	FullSync(t, idx, "lib", rootState, 10,
		Folder("root", "", "Root"),
		Folder("a", "root", "a", "bob@e.com"), Folder("a1", "a", "a1", "bob@e.com"),
		Folder("b", "root", "b"),
	)
	own := []fm.Permission{{ID: "d", Type: "user", Role: "writer", EmailAddress: "dan@e.com"}}
	err := idx.UpdateLibrary(ctx, "lib", fm.Fence{}, func(tx fm.LibraryTx) error {
		// a1 moves under b and is renamed; a goes; c arrives, shared with carol and dan.
		if err := tx.Put(Folder("a1", "b", "Z", "bob@e.com")); err != nil {
			return err
		}
		if err := tx.Delete("a"); err != nil {
			return err
		}
		c := Folder("c", "root", "c", "carol@e.com")
		c.Permissions, c.OwnPermissions = append(c.Permissions, own...), own
		if err := tx.Put(c); err != nil {
			return err
		}
		f, err := tx.Folder("b")
		if err != nil {
			return err
		}
		f.RestrictedDownload = true
		if err := tx.Replace(f); err != nil {
			return err
		}
		kids, _ := tx.Children("root")
		slices.Sort(kids)
		if !slices.Equal(kids, []string{"b", "c"}) {
			t.Errorf("children of root within the transaction: %v", kids)
		}
		if kids, _ := tx.Children("b"); !slices.Equal(kids, []string{"a1"}) {
			t.Errorf("children of b within the transaction: %v", kids)
		}
		if perms, ownGot, err := tx.Permissions("c"); err != nil || len(perms) != 2 || !reflect.DeepEqual(ownGot, own) {
			t.Errorf("c's permissions within the transaction: %v %v %v", perms, ownGot, err)
		}
		st := tx.State()
		st.StartPageToken, st.Revision = "42", st.Revision+10
		tx.SetState(st)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := idx.Library(ctx, "lib")
	if st.Folders != 4 || st.Permissions != 3 || st.StartPageToken != "42" || st.Revision != 2 {
		t.Errorf("state %+v", st)
	}
	if f, _ := idx.Folder(ctx, "lib", "b"); f == nil || !f.RestrictedDownload {
		t.Error("Replace did not write b")
	}
	if f, _ := idx.Folder(ctx, "lib", "a1"); f == nil || f.ParentID != "b" || f.Name != "Z" {
		t.Errorf("a1 after the update: %+v", f)
	}
	if perms, _ := idx.Permissions(ctx, "lib", "c"); len(perms) != 2 {
		t.Errorf("c's permissions %v", perms)
	}
	_ = idx.UpdateLibrary(ctx, "lib", fm.Fence{}, func(tx fm.LibraryTx) error { return tx.Delete("a1") })
	if st, _ := idx.Library(ctx, "lib"); st.Folders != 3 || st.Permissions != 2 {
		t.Errorf("counts after a delete: %+v", st)
	}
}

func testFailedUpdateChangesNothing(t *testing.T, b Backend) {
	ctx := context.Background()
	idx := b.Open(t)
	FullSync(t, idx, "lib", rootState, 10, Folder("root", "", "Root"), Folder("a", "root", "a"))
	boom := errors.New("boom")
	err := idx.UpdateLibrary(ctx, "lib", fm.Fence{}, func(tx fm.LibraryTx) error {
		_ = tx.Delete("a")
		st := tx.State()
		st.StartPageToken = "99"
		tx.SetState(st)
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("error %v", err)
	}
	if _, err := idx.Folder(ctx, "lib", "a"); err != nil {
		t.Errorf("a after a failed update: %v", err)
	}
	if st, _ := idx.Library(ctx, "lib"); st.StartPageToken == "99" || st.Folders != 2 || st.Revision != 1 {
		t.Errorf("state after a failed update: %+v", st)
	}
	if err := idx.UpdateLibrary(ctx, "never", fm.Fence{}, func(fm.LibraryTx) error { return nil }); fm.ErrorCode(err) != fm.ENOTFOUND {
		t.Errorf("update of a library never synced: %v", err)
	}
}

// Folders with the same permissions share one stored set; a set goes with
// its last folder.
func testPermissionSetsAreShared(t *testing.T, b Backend) {
	ctx := context.Background()
	idx := b.Open(t)
	FullSync(t, idx, "lib", rootState, 10,
		Folder("root", "", "Root", "a@e.com"),
		Folder("x", "root", "x", "a@e.com"), Folder("y", "root", "y", "a@e.com"),
		Folder("z", "root", "z", "a@e.com", "b@e.com"),
	)
	wKey := fm.NewPermissionSet(Folder("w", "root", "w", "c@e.com").Permissions).Key
	err := idx.UpdateLibrary(ctx, "lib", fm.Fence{}, func(tx fm.LibraryTx) error {
		if err := tx.Put(Folder("x", "root", "x", "a@e.com", "b@e.com")); err != nil { // x takes z's set
			return err
		}
		if err := tx.Delete("y"); err != nil {
			return err
		}
		return tx.Put(Folder("w", "root", "w", "c@e.com")) // a new set
	})
	if err != nil {
		t.Fatal(err)
	}
	if perms, err := idx.PermissionSet(ctx, "lib", wKey); err != nil || len(perms) != 1 {
		t.Errorf("w's set: %v %v", perms, err)
	}
	_ = idx.UpdateLibrary(ctx, "lib", fm.Fence{}, func(tx fm.LibraryTx) error { return tx.Delete("w") })
	if _, err := idx.PermissionSet(ctx, "lib", wKey); fm.ErrorCode(err) != fm.ENOTFOUND {
		t.Errorf("w's set after w went: %v", err)
	}
	if perms, _ := idx.Permissions(ctx, "lib", "x"); len(perms) != 2 || perms[1].EmailAddress != "b@e.com" {
		t.Errorf("x's permissions %v", perms)
	}
	if st, _ := idx.Library(ctx, "lib"); st.Folders != 3 || st.Permissions != 5 {
		t.Errorf("counts %+v", st)
	}
	var c collector
	if _, err := idx.ReadLibrary(ctx, "lib", &c); err != nil || len(c.sets) != 3 {
		t.Errorf("sets read: %d (%v), want root's, the one x and z share, and the empty own set", len(c.sets), err)
	}
}

// A set whose references an update changes several times ends as its last
// change leaves it: one left by its folder and taken by another stays, one
// left by its last folder goes, one new and left again within the update
// is never stored, and a new one is read back within the update.
func testSetsChangedTwiceInAnUpdate(t *testing.T, b Backend) {
	ctx := context.Background()
	idx := b.Open(t)
	FullSync(t, idx, "lib", rootState, 10,
		Folder("root", "", "Root", "a@e.com"),
		Folder("x", "root", "x", "a@e.com", "b@e.com"), Folder("y", "root", "y", "a@e.com"),
		Folder("v", "root", "v", "f@e.com"),
	)
	left := fm.NewPermissionSet(Folder("v", "root", "v", "f@e.com").Permissions).Key
	shared := fm.NewPermissionSet(Folder("x", "root", "x", "a@e.com", "b@e.com").Permissions).Key
	gone := fm.NewPermissionSet(Folder("z", "root", "z", "d@e.com").Permissions).Key
	err := idx.UpdateLibrary(ctx, "lib", fm.Fence{}, func(tx fm.LibraryTx) error {
		steps := []func() error{
			func() error { return tx.Put(Folder("x", "root", "x", "c@e.com")) },            // x leaves its set...
			func() error { return tx.Put(Folder("y", "root", "y", "a@e.com", "b@e.com")) }, // ...and y takes it
			func() error { return tx.Put(Folder("z", "root", "z", "d@e.com")) },
			func() error { return tx.Delete("z") },
			func() error { return tx.Put(Folder("w", "root", "w", "e@e.com")) },
			func() error { return tx.Delete("v") },
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return err
			}
		}
		if perms, _, err := tx.Permissions("w"); err != nil || len(perms) != 1 || perms[0].EmailAddress != "e@e.com" {
			t.Errorf("w's permissions within the update: %v %v", perms, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if perms, err := idx.PermissionSet(ctx, "lib", shared); err != nil || len(perms) != 2 {
		t.Errorf("the set x left and y took: %v %v", perms, err)
	}
	if _, err := idx.PermissionSet(ctx, "lib", left); fm.ErrorCode(err) != fm.ENOTFOUND {
		t.Errorf("v's set after v went: %v", err)
	}
	if _, err := idx.PermissionSet(ctx, "lib", gone); fm.ErrorCode(err) != fm.ENOTFOUND {
		t.Errorf("z's set, z put and deleted in one update: %v", err)
	}
	if st, _ := idx.Library(ctx, "lib"); st.Folders != 4 || st.Permissions != 5 {
		t.Errorf("counts %+v, want 4 folders and 5 permissions", st)
	}
	var c collector
	if _, err := idx.ReadLibrary(ctx, "lib", &c); err != nil || len(c.sets) != 5 {
		t.Errorf("sets read: %d (%v), want root's, x's, y's, w's and the empty own set", len(c.sets), err)
	}
	checkCounts(t, idx, "lib")
}

// A list is kept in the order it was written (Drive's), never sorted: the
// same permissions in two orders are two sets, each read back in its own,
// written by a full sync or an update.
func testPermissionsKeepDrivesOrder(t *testing.T, b Backend) {
	ctx := context.Background()
	idx := b.Open(t)
	owner := fm.Permission{ID: "9", Type: "user", Role: "owner", EmailAddress: "zed@e.com"}
	reader := fm.Permission{ID: "1", Type: "user", Role: "reader", EmailAddress: "amy@e.com"}
	domain := fm.Permission{ID: "5k", Type: "domain", Role: "reader", Domain: "e.com", AllowFileDiscovery: true}
	folder := func(id string, perms ...fm.Permission) fm.SyncedFolder {
		f := Folder(id, "root", id)
		if id == "root" {
			f.ParentID = ""
		}
		f.Permissions = perms
		return f
	}
	FullSync(t, idx, "lib", rootState, 10, folder("root", owner, reader, domain), folder("a", domain, owner, reader))
	err := idx.UpdateLibrary(ctx, "lib", fm.Fence{}, func(tx fm.LibraryTx) error { return tx.Put(folder("b", reader, domain, owner)) })
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string][]fm.Permission{
		"root": {owner, reader, domain}, "a": {domain, owner, reader}, "b": {reader, domain, owner},
	} {
		if got, err := idx.Permissions(ctx, "lib", id); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: permissions %v (%v), want %v", id, got, err, want)
		}
		f, err := idx.Folder(ctx, "lib", id)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := idx.PermissionSet(ctx, "lib", f.PermissionSet); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: its set %v (%v), want %v", id, got, err, want)
		}
	}
}

func testSnapshot(t *testing.T, b Backend) {
	idx := b.Open(t)
	root := Folder("root", "", "Root", "a@e.com")
	root.OwnPermissions = root.Permissions
	FullSync(t, idx, "lib", rootState, 10, root, Folder("b", "root", "b"), Folder("a", "root", "a"))
	snap, err := idx.Snapshot(context.Background(), "lib")
	if err != nil || len(snap) != 3 || snap[0].ID != "a" || snap[2].ID != "root" ||
		len(snap[2].Permissions) != 1 || len(snap[2].OwnPermissions) != 1 || len(snap[0].OwnPermissions) != 0 {
		t.Errorf("snapshot %+v %v", snap, err)
	}
}

// changesSince returns what Changes(since) says, sorted.
func changesSince(t *testing.T, idx Index, since uint64) (written, removed []string, cs *fm.ChangeSet) {
	t.Helper()
	cs, err := idx.Changes(context.Background(), "lib", since)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range cs.Written {
		written = append(written, f.ID)
	}
	slices.Sort(written)
	removed = slices.Sorted(slices.Values(cs.Removed))
	return written, removed, cs
}

func testChanges(t *testing.T, b Backend) {
	ctx := context.Background()
	idx := b.Open(t)
	FullSync(t, idx, "lib", rootState, 10, Folder("root", "", "Root"), Folder("a", "root", "a"), Folder("b", "root", "b"))
	if w, r, cs := changesSince(t, idx, 1); len(w)+len(r) != 0 || cs.Reread || cs.State.Revision != 1 {
		t.Errorf("changes at the current revision: %v %v %+v", w, r, cs)
	}
	if _, _, cs := changesSince(t, idx, 0); !cs.Reread {
		t.Error("changes since before the first sync: not a reread")
	}
	update := func(fn func(tx fm.LibraryTx) error) {
		t.Helper()
		if err := idx.UpdateLibrary(ctx, "lib", fm.Fence{}, fn); err != nil {
			t.Fatal(err)
		}
	}
	update(func(tx fm.LibraryTx) error { return tx.Put(Folder("c", "root", "c", "carol@e.com")) })
	update(func(tx fm.LibraryTx) error { return tx.Delete("a") })
	update(func(tx fm.LibraryTx) error { // the token alone: no revision
		st := tx.State()
		st.StartPageToken = "8"
		tx.SetState(st)
		return nil
	})
	update(func(tx fm.LibraryTx) error { return tx.Put(Folder("c", "b", "c2", "carol@e.com")) })
	w, r, cs := changesSince(t, idx, 1)
	if !slices.Equal(w, []string{"c"}) || !slices.Equal(r, []string{"a"}) || cs.Reread || cs.State.Revision != 4 || cs.State.StartPageToken != "8" {
		t.Errorf("changes since 1: written %v removed %v %+v", w, r, cs)
	}
	if len(cs.Written) != 1 || cs.Written[0].ParentID != "b" || cs.Written[0].Name != "c2" {
		t.Errorf("c as the changes give it: %+v", cs.Written)
	}
	if len(cs.Sets) != 1 || cs.Sets[0].Key != cs.Written[0].PermissionSet || len(cs.Sets[0].Permissions) != 1 {
		t.Errorf("sets with the changes: %+v", cs.Sets)
	}
	if w, r, _ := changesSince(t, idx, 3); !slices.Equal(w, []string{"c"}) || len(r) != 0 {
		t.Errorf("changes since 3: written %v removed %v", w, r)
	}
}

// A full sync that drifted a little is in the log too; one that replaced
// the root is not, and asks older readers to read again.
func testChangesAcrossFullSyncs(t *testing.T, b Backend) {
	idx := b.Open(t)
	FullSync(t, idx, "lib", rootState, 10, Folder("root", "", "Root"), Folder("a", "root", "a"), Folder("b", "root", "b"), Folder("c", "root", "c"))
	FullSync(t, idx, "lib", rootState, 10, Folder("root", "", "Root"), Folder("a", "root", "A"), Folder("c", "root", "c"), Folder("d", "root", "d"))
	w, r, cs := changesSince(t, idx, 1)
	if cs.Reread || !slices.Equal(w, []string{"a", "d"}) || !slices.Equal(r, []string{"b"}) {
		t.Errorf("changes across a full sync: written %v removed %v reread %v", w, r, cs.Reread)
	}
	other := rootState
	other.RootID = "c"
	FullSync(t, idx, "lib", other, 10, Folder("c", "", "c"), Folder("d", "c", "d"))
	if _, _, cs := changesSince(t, idx, 2); !cs.Reread || cs.State.Revision != 3 || cs.State.RootID != "c" {
		t.Errorf("changes across a new root: %+v", cs)
	}
	if _, _, cs := changesSince(t, idx, 3); cs.Reread || len(cs.Written) != 0 {
		t.Errorf("changes at the current revision after a new root: %+v", cs)
	}
}

// The log keeps whole revisions: pruned, its oldest go, and a reader older
// than what it keeps must read the library again.
func testLogPruning(t *testing.T, b Backend) {
	ctx := context.Background()
	idx := b.Open(t)
	pruner, ok := idx.(LogPruner)
	if !ok {
		t.Fatalf("%T is no LogPruner", idx)
	}
	FullSync(t, idx, "lib", rootState, 10, Folder("root", "", "Root"))
	for i := range 5 { // revisions 2 to 6, two folders each
		err := idx.UpdateLibrary(ctx, "lib", fm.Fence{}, func(tx fm.LibraryTx) error {
			for j := range 2 {
				if err := tx.Put(Folder(fmt.Sprintf("f%d-%d", i, j), "root", "f")); err != nil {
					return err
				}
			}
			return nil
		})
		must(t, err)
	}
	if start, n := pruner.LogBounds("lib"); start != 2 || n != 10 {
		t.Fatalf("log from %d with %d entries, want 2 and 10", start, n)
	}
	must(t, pruner.PruneLog("lib", 5))
	if start, n := pruner.LogBounds("lib"); start != 5 || n != 4 {
		t.Errorf("pruned log from %d with %d entries, want revisions 5 and 6 (4 entries)", start, n)
	}
	for since, reread := range map[uint64]bool{3: true, 4: false, 5: false} {
		cs, err := idx.Changes(ctx, "lib", since)
		if err != nil || cs.Reread != reread {
			t.Errorf("changes since %d: reread %v (%v), want %v", since, cs.Reread, err, reread)
		}
	}
	if w, _, _ := changesSince(t, idx, 4); len(w) != 4 {
		t.Errorf("changes since 4 after pruning: %v, want the 4 folders of revisions 5 and 6", w)
	}
	must(t, pruner.PruneLog("lib", 1))
	if start, n := pruner.LogBounds("lib"); start != 7 || n != 0 {
		t.Errorf("log pruned to less than a revision: from %d with %d entries, want empty from 7", start, n)
	}
	if _, _, cs := changesSince(t, idx, 5); !cs.Reread {
		t.Error("changes since 5 after the log was emptied: not a reread")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
