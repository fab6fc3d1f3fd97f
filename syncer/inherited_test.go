package syncer_test

import (
	"bytes"
	"log/slog"
	"slices"
	"strings"
	"testing"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/internal/googlefake"
)

// world is a fake that logs changes for the item alone, with a My Drive
// library (Outer/Root/A/B/C/D, Root/Other shared with carol, and
// Root/A/Multi with a second parent outside, Elsewhere, shared with dan;
// Outer is outside the library) and a shared drive
// (Team/E/F/G, G with a permission of its own), both synced in full.
type world struct {
	fake                           *googlefake.Server
	e                              *env
	outer, root, a, b, c, d, other string
	multi                          string
	elsewhere, team, eFolder, f, g string
	link, leaver, member           string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	fake := startFake(t)
	fake.AddUser("eve@example.com")
	w := &world{fake: fake}
	w.outer = fake.CreateFolder(storage, "", "Outer")
	w.root = fake.CreateFolder(storage, w.outer, "Root")
	w.a = fake.CreateFolder(storage, w.root, "A")
	w.b = fake.CreateFolder(storage, w.a, "B")
	w.c = fake.CreateFolder(storage, w.b, "C")
	w.d = fake.CreateFolder(storage, w.c, "D")
	w.other = fake.CreateFolder(storage, w.root, "Other")
	fake.Share(w.other, googlefake.Permission{Type: "user", Role: "commenter", EmailAddress: "carol@example.com"})
	w.elsewhere = fake.CreateFolder(storage, "", "Elsewhere")
	fake.Share(w.elsewhere, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: "dan@example.com"})
	w.multi = fake.CreateFolder(storage, w.a, "Multi")
	fake.AddParent(w.multi, w.elsewhere)
	// A discoverable domain on A; a link-only one on C, which lists it
	// discoverable.
	w.link = fake.Share(w.a, googlefake.Permission{Type: "domain", Role: "reader", Domain: "example.com", AllowFileDiscovery: true})
	fake.Share(w.c, googlefake.Permission{Type: "domain", Role: "reader", Domain: "example.com"})
	w.leaver = fake.Share(w.a, googlefake.Permission{Type: "user", Role: "writer", EmailAddress: "eve@example.com"})

	w.team = fake.CreateSharedDrive("Team", storage)
	w.member = fake.Share(w.team, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: "mia@example.com"})
	w.eFolder = fake.CreateFolder(storage, w.team, "E")
	w.f = fake.CreateFolder(storage, w.eFolder, "F")
	w.g = fake.CreateFolder(storage, w.f, "G")
	fake.Share(w.g, googlefake.Permission{Type: "user", Role: "writer", EmailAddress: "gus@example.com"})

	fake.LogItemAlone(true)
	w.e = newEnv(t, fake, "id: mydrive, rootFolderId: "+w.root, "id: team, sharedDriveId: "+w.team)
	w.e.sync("mydrive")
	w.e.sync("team")
	return w
}

// role returns the role a folder's list grants a principal, "" if none,
// and whether by link only.
func (w *world) role(lib, id, principal string) string {
	for _, g := range w.e.grants(lib, id) {
		if g.Principal == principal && g.WithLink {
			return g.Role.String() + " (with the link)"
		}
		if g.Principal == principal {
			return g.Role.String()
		}
	}
	return ""
}

// When a folder's list changes and Drive sends a change for that folder
// alone, every descendant's list follows in the same sync, made from the
// index: no Drive call for them, unless Drive's answers do not tell a
// descendant's list (read again, and counted). Each time the index then
// equals a fresh full sync's.
func TestInheritedWithoutChangesFromDrive(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		lib    string
		change func(w *world)
		// check is a descendant Drive sent no change for, and the role it
		// must then grant principal ("" for none).
		check     func(w *world) string
		principal string
		role      string
		// calls are the sync's Drive calls; inherited, the folders whose
		// lists it made; reread, those it read again.
		calls, inherited, reread int
	}{
		{"share an ancestor", "mydrive", func(w *world) {
			w.fake.Share(w.a, googlefake.Permission{Type: "user", Role: "writer", EmailAddress: "zed@example.com"})
		}, func(w *world) string { return w.d }, "user:zed@example.com", "writer", 2, 3, 1},
		{"unshare an ancestor", "mydrive", func(w *world) { w.fake.Unshare(w.a, w.leaver) },
			func(w *world) string { return w.d }, "user:eve@example.com", "", 2, 3, 1},
		{"a shared drive's member added (a drive change alone)", "team", func(w *world) {
			w.fake.Share(w.team, googlefake.Permission{Type: "group", Role: "writer", EmailAddress: "ops@example.com"})
		}, func(w *world) string { return w.g }, "group:ops@example.com", "writer", 2, 3, 0},
		{"a shared drive's member removed (a drive change alone)", "team", func(w *world) { w.fake.Unshare(w.team, w.member) },
			func(w *world) string { return w.g }, "user:mia@example.com", "", 2, 3, 0},
		{"a move under a differently shared parent", "mydrive", func(w *world) { w.fake.Move(w.b, w.other) },
			func(w *world) string { return w.d }, "user:carol@example.com", "commenter", 2, 1, 1},
		{"a move away from a grant", "mydrive", func(w *world) { w.fake.Move(w.b, w.other) },
			func(w *world) string { return w.d }, "user:eve@example.com", "", 2, 1, 1},
		// Other, A, B, C and D made; Root and Multi read again.
		{"share a folder above the library's root", "mydrive", func(w *world) {
			w.fake.Share(w.outer, googlefake.Permission{Type: "anyone", Role: "reader"})
		}, func(w *world) string { return w.d }, "anyone", "reader (with the link)", 3, 5, 2},
		{"a deleted account", "mydrive", func(w *world) { w.fake.RemoveUser("eve@example.com") },
			func(w *world) string { return w.d }, "user:eve@example.com", "", 2, 3, 1},
		// C's own link-only domain showed discoverable under A's: once A's
		// is gone, only Drive can tell C's (it is read again), and D's
		// follows from it.
		{"a discoverable grant gone that hid a link-only one", "mydrive", func(w *world) { w.fake.Unshare(w.a, w.link) },
			func(w *world) string { return w.d }, "domain:example.com", "reader (with the link)", 3, 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			tt.change(w)
			res := w.e.incremental(tt.lib)
			id := tt.check(w)
			if got := w.role(tt.lib, id, tt.principal); got != tt.role {
				t.Errorf("%s grants %s %q, want %q", id, tt.principal, got, tt.role)
			}
			if res.Calls != int64(tt.calls) || res.Inherited != tt.inherited || res.Reread != tt.reread {
				t.Errorf("%d Drive calls (%v), %d lists made, %d folders read again; want %d, %d, %d",
					res.Calls, w.fake.Calls(), res.Inherited, res.Reread, tt.calls, tt.inherited, tt.reread)
			}
			fresh := newEnv(t, w.fake, "id: mydrive, rootFolderId: "+w.root, "id: team, sharedDriveId: "+w.team)
			fresh.sync(tt.lib)
			compareIndexes(t, tt.name, w.e, fresh, tt.lib)
		})
	}
}

// A full sync keeps each folder's own permissions, by Drive's details: the
// owner and what is shared on the folder itself, with the role set there;
// a shared drive's members on its root; nothing for folders that only
// inherit; the whole list, opaque, for a folder with several parents.
func TestFullSyncKeepsOwnPermissions(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	const owner = "user storage@example.com owner"
	tests := []struct {
		lib, id string
		want    []string
	}{
		{"mydrive", w.root, []string{owner}},
		{"mydrive", w.a, []string{"domain example.com reader discoverable", "user eve@example.com writer", owner}},
		// C's link-only domain is listed discoverable, as A's: said to be
		// inherited too.
		{"mydrive", w.c, []string{"domain example.com reader discoverable also-inherited", owner}},
		{"mydrive", w.d, []string{owner}},
		{"mydrive", w.multi, []string{"domain example.com reader discoverable opaque", "user dan@example.com reader opaque",
			"user eve@example.com writer opaque", owner + " opaque"}},
		{"team", w.team, []string{"user mia@example.com reader", "user storage@example.com organizer"}},
		{"team", w.eFolder, nil},
		{"team", w.g, []string{"user gus@example.com writer"}},
	}
	snap, err := w.e.db.Snapshot(t.Context(), "mydrive")
	if err != nil {
		t.Fatal(err)
	}
	team, err := w.e.db.Snapshot(t.Context(), "team")
	if err != nil {
		t.Fatal(err)
	}
	folders := byID(append(snap, team...))
	for _, tt := range tests {
		f := folders[tt.id]
		if got := ownDescribed(f.OwnPermissions); !slices.Equal(got, tt.want) {
			t.Errorf("%s: own permissions %q, want %q", f.Name, got, tt.want)
		}
	}
	// E's list is made from the drive's members, and is what Drive lists.
	if got, want := ownDescribed(folders[w.eFolder].Permissions), ownDescribed(folders[w.team].Permissions); !slices.Equal(got, want) {
		t.Errorf("E lists %q, want the members %q", got, want)
	}
}

func ownDescribed(perms []fm.Permission) []string {
	var out []string
	for _, p := range perms {
		s := p.Type + " " + p.EmailAddress + p.Domain + " " + p.Role
		for _, flag := range []struct {
			on   bool
			name string
		}{{p.AllowFileDiscovery, "discoverable"}, {p.AlsoInherited, "also-inherited"}, {p.Opaque, "opaque"}} {
			if flag.on {
				s += " " + flag.name
			}
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// An index's format is told by its schema version, never by its data: a
// library whose folders Drive lists with no permission at all (an emulator
// of Drive that keeps none) has every own set empty, and its syncs stay
// incremental (they once all went full, taken for an index written before
// own permissions were kept).
func TestNoPermissionsListedStaysIncremental(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	root := fake.CreateFolder(storage, "", "Root")
	a := fake.CreateFolder(storage, root, "A")
	d := fake.CreateSharedDrive("Team", storage)
	plans := fake.CreateFolder(storage, d, "Plans")
	fake.ListNoPermissions(true)
	e := newEnv(t, fake, "id: mydrive, rootFolderId: "+root, "id: team, sharedDriveId: "+d)
	e.sync("mydrive")
	e.sync("team")
	for _, step := range []struct {
		name   string
		change func()
	}{
		{"no change", func() {}},
		{"a folder made and one renamed", func() {
			fake.CreateFolder(storage, a, "A1")
			fake.CreateFolder(storage, plans, "Q1")
			fake.Rename(a, "A renamed")
			fake.Rename(plans, "Plans renamed")
		}},
		{"a share Drive does not list", func() {
			fake.Share(a, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: "zed@example.com"})
		}},
	} {
		step.change()
		for _, lib := range []string{"mydrive", "team"} {
			res := e.incremental(lib) // fails the test if the sync went full
			if calls := fake.Calls(); calls["drive.changes.getStartPageToken"] != 0 || res.FullReason != "" {
				t.Errorf("%s, %s: calls %v, reason %q, as a full sync", step.name, lib, calls, res.FullReason)
			}
		}
	}
	if got, want := e.tree("mydrive"), []string{"Root", "A renamed<Root", "A1<A renamed"}; !slices.Equal(got, want) {
		t.Errorf("tree %v, want %v", got, want)
	}
	if got, want := e.tree("team"), []string{"Team", "Plans renamed<Team", "Q1<Plans renamed"}; !slices.Equal(got, want) {
		t.Errorf("tree %v, want %v", got, want)
	}
}

// A folder whose list does not follow from its parent's, as Drive gives
// them (here a second parent the storage account cannot see), is read from
// Drive again when its parent's list changes, not made.
func TestListNotFollowingItsParentsIsReadAgain(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	fake.AddUser("bob@example.com")
	root := fake.CreateFolder(storage, "", "Root")
	a := fake.CreateFolder(storage, root, "A")
	twin := fake.CreateFolder(storage, a, "Twin")
	hidden := fake.CreateFolder("bob@example.com", "", "Hidden")
	fake.Share(hidden, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: "hal@example.com"})
	fake.AddParent(twin, hidden)
	fake.LogItemAlone(true)
	e := newEnv(t, fake, "id: lib, rootFolderId: "+root)
	e.sync("lib")
	snap, err := e.db.Snapshot(t.Context(), "lib")
	if err != nil {
		t.Fatal(err)
	}
	if own := ownDescribed(byID(snap)[twin].OwnPermissions); !slices.Equal(own, []string{
		"user bob@example.com writer opaque", "user hal@example.com reader opaque", "user storage@example.com owner opaque"}) {
		t.Errorf("Twin's own permissions %q, want its whole list, opaque", own)
	}

	fake.Share(a, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: "zed@example.com"})
	res := e.incremental("lib")
	if res.Reread != 1 || res.Calls != 2 {
		t.Errorf("%d folders read again in %d calls, want Twin in 2", res.Reread, res.Calls)
	}
	for _, who := range []string{"user:hal@example.com", "user:zed@example.com"} {
		if !slices.ContainsFunc(e.grants("lib", twin), func(g fm.Grant) bool { return g.Principal == who }) {
			t.Errorf("Twin does not grant %s", who)
		}
	}
	fresh := newEnv(t, fake, "id: lib, rootFolderId: "+root)
	fresh.sync("lib")
	compareIndexes(t, "after the share", e, fresh, "lib")
}

// Permissions Drive lists without details (as it documented once for My
// Drive items) do not tell a folder's own permissions: each folder is read
// from Drive when its parent's list changes, level by level, and the log
// says how many such permissions a sync met.
func TestPermissionsWithoutDetailsAreReadAgain(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	root := fake.CreateFolder(storage, "", "Root")
	a := fake.CreateFolder(storage, root, "A")
	b := fake.CreateFolder(storage, a, "B")
	c := fake.CreateFolder(storage, b, "C")
	fake.OmitMyDriveDetails(true)
	fake.LogItemAlone(true)
	var logs bytes.Buffer
	e := newEnv(t, fake, "id: lib, rootFolderId: "+root)
	e.logger = slog.New(slog.NewTextHandler(&logs, nil))
	e.restartSyncer()
	e.sync("lib")
	if !strings.Contains(logs.String(), "permissionsWithoutDetails=4") {
		t.Errorf("the log does not count 4 permissions without details:\n%s", logs.String())
	}

	fake.Share(a, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: "zed@example.com"})
	res := e.incremental("lib")
	if res.Reread != 2 || res.Inherited != 0 || res.Calls != 3 {
		t.Errorf("%d folders read again, %d made, in %d calls; want B and C read, none made, 3 calls", res.Reread, res.Inherited, res.Calls)
	}
	if !slices.ContainsFunc(e.grants("lib", c), func(g fm.Grant) bool { return g.Principal == "user:zed@example.com" }) {
		t.Error("C does not grant zed")
	}
	fresh := newEnv(t, fake, "id: lib, rootFolderId: "+root)
	fresh.sync("lib")
	compareIndexes(t, "after the share", e, fresh, "lib")
}
