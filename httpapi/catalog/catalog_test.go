package catalog

import (
	"context"
	"fmt"
	stdmaps "maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/index/bolt"
	"github.com/foldermirror/foldermirror/index/indextest"
	"github.com/foldermirror/foldermirror/internal/fmtest"
)

// model is a library as the test means it: every folder, by ID.
type model map[string]fm.SyncedFolder

// order returns the model's folders depth first from root, siblings by
// lower-cased name then ID, with their depths.
func (m model) order(root string) (ids []string, depths []int) {
	kids := map[string][]string{}
	for id, f := range m {
		if id != root {
			kids[f.ParentID] = append(kids[f.ParentID], id)
		}
	}
	var visit func(id string, depth int)
	visit = func(id string, depth int) {
		ids, depths = append(ids, id), append(depths, depth)
		k := kids[id]
		slices.SortFunc(k, func(a, b string) int {
			if c := strings.Compare(strings.ToLower(m[a].Name), strings.ToLower(m[b].Name)); c != 0 {
				return c
			}
			return strings.Compare(a, b)
		})
		for _, c := range k {
			visit(c, depth+1)
		}
	}
	visit(root, 0)
	return ids, depths
}

// check compares a Library with the model, folder by folder and in every
// order the API reads it.
func check(t *testing.T, when string, l *Library, m model, root string) {
	t.Helper()
	want, depths := m.order(root)
	var got []string
	l.All(func(r Ref) bool { got = append(got, l.View(r).ID); return true })
	if !slices.Equal(got, want) {
		t.Fatalf("%s: all folders\n got %v\nwant %v", when, got, want)
	}
	var walked []string
	var wdepths []int
	var left []string
	l.Walk(l.Root(), func(r Ref, depth int) bool {
		walked, wdepths = append(walked, l.View(r).ID), append(wdepths, depth+1)
		return true
	}, func(r Ref, depth int) { left = append(left, l.View(r).ID) })
	if !slices.Equal(walked, want[1:]) || !slices.Equal(wdepths, depths[1:]) {
		t.Fatalf("%s: walk\n got %v %v\nwant %v %v", when, walked, wdepths, want[1:], depths[1:])
	}
	if l.Len() != len(m) {
		t.Fatalf("%s: Len %d, want %d", when, l.Len(), len(m))
	}
	for id, f := range m {
		r, ok := l.Lookup(id)
		if !ok {
			t.Fatalf("%s: %s not found", when, id)
		}
		v := l.View(r)
		if v.ID != id || v.ParentID != f.ParentID || v.Name != f.Name || v.EscapedName != escape(f.Name) ||
			v.ResourceKey != escape(f.ResourceKey) || v.DefinitionID != escape(f.DefinitionID) ||
			v.Restricted != f.RestrictedDownload || v.WritersCanShare != f.WritersCanShare || v.IsRoot != (id == root) {
			t.Fatalf("%s: %s viewed as %+v, want %+v", when, id, v, f)
		}
		if l.SetKey(v.Set) != fm.NewPermissionSet(f.Permissions).Key {
			t.Fatalf("%s: %s has the wrong permission set", when, id)
		}
		var wantGrants []Grant
		for _, g := range fm.GrantsOf(f.Permissions) {
			n, _ := l.Principal(g.Principal)
			wantGrants = append(wantGrants, Grant{Principal: n, Role: g.Role, WithLink: g.WithLink})
		}
		if got := l.Grants(r); !slices.Equal(got, wantGrants) {
			t.Fatalf("%s: %s grants %v, want %v", when, id, got, wantGrants)
		}
		var kids []string
		l.Children(r, func(c Ref) bool { kids = append(kids, l.View(c).ID); return true })
		for _, k := range kids {
			if m[k].ParentID != id {
				t.Fatalf("%s: %s listed under %s", when, k, id)
			}
		}
	}
	for _, id := range []string{"nope", ""} {
		if _, ok := l.Lookup(id); ok {
			t.Fatalf("%s: %q found", when, id)
		}
	}
}

// world changes a library at random, in the index and in a model.
type world struct {
	t   *testing.T
	rng *rand.Rand
	db  *bolt.DB
	m   model
	seq int
}

var names = []string{"a", "B", "b", "Ärger", "ärger", "x y", "x", "Zeta", "\u2028odd\"", "ǅ", "İ", ""}

func (w *world) folder(id, parent string) fm.SyncedFolder {
	f := fm.SyncedFolder{Folder: fm.Folder{ID: id, ParentID: parent, Name: names[w.rng.IntN(len(names))],
		RestrictedDownload: w.rng.IntN(4) == 0, WritersCanShare: w.rng.IntN(2) == 0}}
	if w.rng.IntN(5) == 0 {
		f.ResourceKey, f.DefinitionID = "rk-"+id, "def\t"+id
	}
	users := []string{"a@e.com", "b@e.com", "c@e.com", "d@o.org"}
	for i := range w.rng.IntN(3) {
		f.Permissions = append(f.Permissions, fm.Permission{ID: fmt.Sprint(i), Type: "user", Role: "reader", EmailAddress: users[w.rng.IntN(len(users))]})
	}
	if w.rng.IntN(4) == 0 {
		f.Permissions = append(f.Permissions, fm.Permission{ID: "anyone", Type: "anyone", Role: "writer"})
	}
	return f
}

func (w *world) ids() []string {
	ids := make([]string, 0, len(w.m))
	for id := range w.m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// subtree returns id and its descendants in the model.
func (w *world) subtree(id string) []string {
	out := []string{id}
	for i := 0; i < len(out); i++ {
		for _, c := range w.ids() {
			if w.m[c].ParentID == out[i] && c != "root" {
				out = append(out, c)
			}
		}
	}
	return out
}

// step makes a few random changes in one update, as an incremental sync
// would, or, at times, a full sync of the model with a few changes.
func (w *world) step() {
	if w.rng.IntN(8) == 0 {
		for range 3 {
			w.change(nil)
		}
		var all []fm.SyncedFolder
		for _, id := range w.ids() {
			all = append(all, w.m[id])
		}
		indextest.FullSync(w.t, w.db, "lib", fm.LibraryState{RootID: "root"}, 50, all...)
		return
	}
	err := w.db.UpdateLibrary(context.Background(), "lib", fm.Fence{}, func(tx fm.LibraryTx) error {
		for range 1 + w.rng.IntN(4) {
			w.change(tx)
		}
		return nil
	})
	if err != nil {
		w.t.Fatal(err)
	}
}

// change makes one change to the model, and to tx if not nil.
func (w *world) change(tx fm.LibraryTx) {
	ids := w.ids()
	id := ids[w.rng.IntN(len(ids))]
	put := func(f fm.SyncedFolder) {
		w.m[f.ID] = f
		if tx != nil {
			if err := tx.Put(f); err != nil {
				w.t.Fatal(err)
			}
		}
	}
	switch op := w.rng.IntN(10); {
	case op < 4: // a new folder
		w.seq++
		put(w.folder(fmt.Sprintf("n%03d", w.seq), id))
	case op < 6: // renamed, reshared, restricted...
		f := w.folder(id, w.m[id].ParentID)
		put(f)
	case op < 8 && id != "root": // moved, not under itself
		to := ids[w.rng.IntN(len(ids))]
		if slices.Contains(w.subtree(id), to) {
			return
		}
		f := w.m[id]
		f.ParentID = to
		put(f)
	case id != "root": // removed with its subtree
		for _, gone := range w.subtree(id) {
			delete(w.m, gone)
			if tx != nil {
				if err := tx.Delete(gone); err != nil {
					w.t.Fatal(err)
				}
			}
		}
	}
}

// TestCatalogFollowsTheIndex: in random worlds (one in each mode, four with
// -tags long), the catalog follows 150 steps of changes to the index; in
// the last mode, each library is read on two cores, as a large one is.
func TestCatalogFollowsTheIndex(t *testing.T) {
	for _, mode := range []string{"compact seldom", "compact often", "read on two cores"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "compact often" {
				defer func(share, least int) { compactShare, minDeltaToCompact = share, least }(compactShare, minDeltaToCompact)
				compactShare, minDeltaToCompact = 4, 8
			}
			if mode == "read on two cores" {
				readOnTwoCores(t)
			}
			for seed := range uint64(catalogSeeds) {
				runWorld(t, seed)
			}
		})
	}
}

// newWorld returns a random world of 41 folders, synced to a new index as
// library "lib".
func newWorld(t *testing.T, seed uint64) *world {
	t.Helper()
	db := fmtest.OpenBolt(t, t.TempDir())
	w := &world{t: t, rng: rand.New(rand.NewPCG(seed, 1)), db: db, m: model{}}
	w.m["root"] = w.folder("root", "")
	for i := range 40 {
		ids := w.ids()
		w.m[fmt.Sprintf("f%02d", i)] = w.folder(fmt.Sprintf("f%02d", i), ids[w.rng.IntN(len(ids))])
	}
	var all []fm.SyncedFolder
	for _, id := range w.ids() {
		all = append(all, w.m[id])
	}
	indextest.FullSync(t, db, "lib", fm.LibraryState{RootID: "root"}, 50, all...)
	return w
}

func runWorld(t *testing.T, seed uint64) {
	w := newWorld(t, seed)
	db := w.db
	// held is what the Diffs of the Libraries observed say the catalog
	// holds.
	held, observed := map[string]bool{}, (*Library)(nil)
	c := New(db, "lib", func(next *Library) {
		Diff(observed, next, func(id string) {
			if held[id] {
				t.Fatalf("seed %d: %s added, held already", seed, id)
			}
			held[id] = true
		}, func(id string) {
			if !held[id] {
				t.Fatalf("seed %d: %s removed, not held", seed, id)
			}
			delete(held, id)
		})
		observed = next
	})
	for step := range 150 {
		st, err := db.Library(context.Background(), "lib")
		if err != nil {
			t.Fatal(err)
		}
		prev := c.Current()
		l, err := c.Update(context.Background(), st)
		if err != nil {
			t.Fatal(err)
		}
		check(t, fmt.Sprintf("seed %d step %d", seed, step), l, w.m, "root")
		if observed != l {
			t.Fatalf("seed %d step %d: the current Library was not observed", seed, step)
		}
		if got, want := slices.Sorted(stdmaps.Keys(held)), w.ids(); !slices.Equal(got, want) {
			t.Fatalf("seed %d step %d: the diffs hold\n%v\nwant\n%v", seed, step, got, want)
		}
		if prev != nil && prev.State.Revision == l.State.Revision && prev != l {
			t.Fatalf("step %d: a new Library for the same revision", step)
		}
		w.step()
	}
}

// A Library, once made, does not change when later ones are made.
func TestLibrariesAreImmutable(t *testing.T) {
	db := fmtest.OpenBolt(t, t.TempDir())
	w := &world{t: t, rng: rand.New(rand.NewPCG(9, 9)), db: db, m: model{}}
	w.m["root"] = w.folder("root", "")
	indextest.FullSync(t, db, "lib", fm.LibraryState{RootID: "root"}, 50, w.m["root"])
	c := New(db, "lib", nil)
	type kept struct {
		l *Library
		m model
	}
	var libs []kept
	for range 60 {
		st, _ := db.Library(context.Background(), "lib")
		l, err := c.Update(context.Background(), st)
		if err != nil {
			t.Fatal(err)
		}
		libs = append(libs, kept{l, stdmaps.Clone(w.m)})
		w.step()
	}
	for i, k := range libs {
		check(t, fmt.Sprintf("library %d", i), k.l, k.m, "root")
	}
}

func TestEscape(t *testing.T) {
	for _, s := range []string{"plain", "a\"b", "back\\slash", "tab\t", "\u2028", "\xff", "<html>&", "ü"} {
		if got, want := escape(s), strings.Trim(reflectJSON(s), `"`); got != want {
			t.Errorf("escape(%q) = %q, want %q", s, got, want)
		}
	}
	if !reflect.DeepEqual(plain("<>&ü"), true) || plain("\u2029") {
		t.Error("plain")
	}
}

// Catalogs read one after another, as thousands are at start, share no
// memory: each is read with the loader the one before gave back
// (loaders), and each Library stays what its library holds. Each keeps no
// more room than its folders take: its records' arena is made to size, not
// grown (thousands of small catalogs would add up the slack of growing).
func TestCatalogsReadInTurnShareNothing(t *testing.T) {
	db := fmtest.OpenBolt(t, t.TempDir())
	type read struct {
		l    *Library
		m    model
		root string
	}
	var reads []read
	for i := range 6 {
		id, root := fmt.Sprint("lib", i), fmt.Sprint("root", i)
		w := &world{t: t, rng: rand.New(rand.NewPCG(uint64(i), 3)), db: db, m: model{}}
		w.m[root] = w.folder(root, "")
		for j := range 10 + 15*i { // each larger than the one before, so that the loader grows
			ids := w.ids()
			fid := fmt.Sprintf("%s-f%02d", id, j)
			w.m[fid] = w.folder(fid, ids[w.rng.IntN(len(ids))])
		}
		var all []fm.SyncedFolder
		for _, fid := range w.ids() {
			all = append(all, w.m[fid])
		}
		indextest.FullSync(t, db, id, fm.LibraryState{RootID: root}, 50, all...)
		st, err := db.Library(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		l, err := New(db, id, nil).Update(context.Background(), st)
		if err != nil {
			t.Fatal(err)
		}
		reads = append(reads, read{l, w.m, root})
	}
	for i, r := range reads {
		check(t, fmt.Sprintf("library %d, once all were read", i), r.l, r.m, r.root)
		if used, room := len(r.l.base.arena), cap(r.l.base.arena); room > used+used/8 {
			t.Errorf("library %d (%d folders): its records take %d bytes of an arena of %d", i, r.l.Len(), used, room)
		}
	}
}

// readOnTwoCores has libraries of every size read on two cores (pipe), for
// the test.
func readOnTwoCores(t *testing.T) {
	t.Helper()
	old := pipeFrom
	pipeFrom = 0
	t.Cleanup(func() { pipeFrom = old })
}

// A library whose index gives a folder twice, or one of a permission set it
// did not give, is refused, read on one core or two (the error found by
// the goroutine that adds the folders, and told at once or at the end).
func TestLoaderRefusesBadLibraries(t *testing.T) {
	set := fm.NewPermissionSet(nil)
	folder := func(id, parent string) *fm.Folder {
		return &fm.Folder{ID: id, ParentID: parent, Name: id, PermissionSet: set.Key}
	}
	for _, tc := range []struct {
		name    string
		folders []*fm.Folder
		want    string
	}{
		{"given twice", []*fm.Folder{folder("root", ""), folder("a", "root"), folder("a", "root")}, "folder a given twice"},
		{"given twice, then more", append([]*fm.Folder{folder("root", ""), folder("a", "root"), folder("a", "root")},
			slices.Repeat([]*fm.Folder{folder("b", "root")}, 3*batchFolders)...), "folder a given twice"},
		{"an unknown set", []*fm.Folder{folder("root", ""), {ID: "x", ParentID: "root"}}, "permission set the index did not give"},
		{"no root", []*fm.Folder{folder("a", "root")}, "the root folder root is not in the index"},
	} {
		for _, piped := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, piped %v", tc.name, piped), func(t *testing.T) {
				ld := newLoader(newGrantTable(), 0)
				ld.piped = piped
				err := ld.PermissionSet(set)
				for _, f := range tc.folders {
					if err == nil {
						err = ld.Folder(f)
					}
				}
				if werr := ld.wait(); err == nil {
					err = werr
				}
				if err == nil {
					_, err = ld.base("root")
				}
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want one saying %q", err, tc.want)
				}
			})
		}
	}
}
