package httpapi

import (
	"context"
	"fmt"
	"hash/maphash"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/httpapi/catalog"
	"github.com/foldermirror/foldermirror/index/bolt"
	"github.com/foldermirror/foldermirror/index/indextest"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/prometheus/client_golang/prometheus"
)

// libraryWorld changes, at random, which libraries a set has (added,
// renamed, dropped), and their trees in an index, drawn from one pool of
// folder IDs so that libraries share folders; two pairs of libraries share
// a root.
type libraryWorld struct {
	t     *testing.T
	rng   *rand.Rand
	db    *bolt.DB
	set   *fm.LibrarySet
	s     *Server
	trees map[string]map[string]string // by library, each folder's parent
}

const worldLibraries, worldFolders = 8, 20

func worldLibrary(i int) string { return fmt.Sprintf("lib%d", i) }

func worldRoot(lib string) string {
	var i int
	fmt.Sscanf(lib, "lib%d", &i)
	return fmt.Sprintf("root%d", i%6)
}

func worldFolder(i int) string { return fmt.Sprintf("f%02d", i) }

func newLibraryWorld(t *testing.T, seed uint64) *libraryWorld {
	t.Helper()
	w := &libraryWorld{t: t, rng: rand.New(rand.NewPCG(seed, 7)), db: fmtest.OpenBolt(t, t.TempDir()),
		set: fm.NewLibrarySet(nil), trees: map[string]map[string]string{}}
	w.s = New(w.db, aliceAuth{}, Options{Libraries: w.set, Metrics: NewMetrics(prometheus.NewRegistry())})
	return w
}

// step makes one change at random: of the set, or of a library's tree,
// which the server is told of (Warm) one time in two, as the daemon is
// after each sync.
func (w *libraryWorld) step() {
	lib := worldLibrary(w.rng.IntN(worldLibraries))
	switch op := w.rng.IntN(10); {
	case op < 2:
		w.discover()
		return
	case op < 6:
		w.fullSync(lib)
	default:
		w.update(lib)
	}
	if w.rng.IntN(2) == 0 {
		if err := w.s.Warm(context.Background(), lib); err != nil && fm.ErrorCode(err) != fm.ENOTFOUND {
			w.t.Fatal(err)
		}
	}
}

// discover makes the set's libraries a random few, some renamed.
func (w *libraryWorld) discover() {
	var libs []fm.Library
	for i := range worldLibraries {
		if w.rng.IntN(3) > 0 {
			id := worldLibrary(i)
			libs = append(libs, fm.Library{ID: id, Name: fmt.Sprintf("%s v%d", id, w.rng.IntN(2)), Domain: "example.com", RootFolderID: worldRoot(id)})
		}
	}
	w.set.SetDiscovered("example.com", libs)
}

// fullSync writes a new tree of a library: its root, and up to 12 folders.
func (w *libraryWorld) fullSync(lib string) {
	root := worldRoot(lib)
	tree := map[string]string{root: ""}
	for range w.rng.IntN(13) {
		id := worldFolder(w.rng.IntN(worldFolders))
		if _, ok := tree[id]; !ok {
			tree[id] = w.pick(tree)
		}
	}
	w.trees[lib] = tree
	var folders []fm.SyncedFolder
	for id, parent := range tree {
		folders = append(folders, fm.SyncedFolder{Folder: fm.Folder{ID: id, ParentID: parent, Name: id}, Permissions: aliceWriter.Permissions})
	}
	indextest.FullSync(w.t, w.db, lib, fm.LibraryState{RootID: root}, 50, folders...)
}

// update adds a folder to a synced library, or deletes one of its leaves.
func (w *libraryWorld) update(lib string) {
	tree := w.trees[lib]
	if tree == nil {
		return
	}
	err := w.db.UpdateLibrary(context.Background(), lib, fm.Fence{}, func(tx fm.LibraryTx) error {
		id := worldFolder(w.rng.IntN(worldFolders))
		if _, ok := tree[id]; !ok {
			tree[id] = w.pick(tree)
			return tx.Put(fm.SyncedFolder{Folder: fm.Folder{ID: id, ParentID: tree[id], Name: id}, Permissions: aliceWriter.Permissions})
		}
		if id == worldRoot(lib) || slices.Contains(slices.Collect(maps.Values(tree)), id) {
			return nil // not a leaf
		}
		delete(tree, id)
		return tx.Delete(id)
	})
	if err != nil {
		w.t.Fatal(err)
	}
}

// pick returns a folder of tree, at random.
func (w *libraryWorld) pick(tree map[string]string) string {
	ids := slices.Sorted(maps.Keys(tree))
	return ids[w.rng.IntN(len(ids))]
}

// check checks that a lookup of each folder and root finds every library
// whose catalog holds it, and the server's indexes for what they keep.
func (w *libraryWorld) check(when string) {
	w.t.Helper()
	ls := w.s.libs
	var built []*libState
	ls.mu.RLock()
	for _, st := range ls.byID {
		if st.catalog.Current() != nil {
			built = append(built, st)
		}
	}
	ls.mu.RUnlock()
	ids := []string{"nope"}
	for i := range worldFolders {
		ids = append(ids, worldFolder(i))
	}
	for i := range 6 {
		ids = append(ids, worldRoot(worldLibrary(i)))
	}
	for _, id := range ids {
		mayHold, rootedAt := ls.mayHold(id), ls.rootedAt(id)
		for _, st := range built {
			l := st.catalog.Current()
			if _, ok := l.Lookup(id); ok && !slices.Contains(mayHold, st.id) {
				w.t.Fatalf("%s: %s holds %s, but lookups look in %v", when, st.id, id, mayHold)
			}
			if l.State.RootID == id && !slices.Contains(rootedAt, st.id) {
				w.t.Fatalf("%s: %s is rooted at %s, but lookups look in %v", when, st.id, id, rootedAt)
			}
		}
	}
	checkLibraries(w.t, when, ls)
}

// checkLibraries checks what libraries keeps: each state's number, root
// and indexed Library are its catalog's; holders has an entry for each
// folder of each indexed Library, and no other; roots names each root's
// library, or several.
func checkLibraries(t *testing.T, when string, ls *libraries) {
	t.Helper()
	ls.mu.RLock()
	defer ls.mu.RUnlock()
	want := map[uint32]int{} // the entries holders should have, counted
	for id, st := range ls.byID {
		cur := st.catalog.Current()
		switch {
		case st.id != id || ls.byNum[st.num] != st:
			t.Fatalf("%s: %s numbered %d, byNum holds %v", when, id, st.num, ls.byNum[st.num])
		case cur == nil && (st.indexed != nil || st.rootID != "" || st.large):
			t.Fatalf("%s: %s has no catalog, but is indexed", when, id)
		case cur == nil:
			continue
		case st.rootID != cur.State.RootID || (ls.roots[st.rootID] != st.num && ls.roots[st.rootID] != several):
			t.Fatalf("%s: %s rooted at %s, noted at %s (roots %v)", when, id, cur.State.RootID, st.rootID, ls.roots)
		case st.large != (ls.large[st.num] == st) || st.large != (st.indexed == nil) || (!st.large && st.indexed != cur):
			t.Fatalf("%s: %s large %v, indexed %p, its catalog's %p", when, id, st.large, st.indexed, cur)
		}
		catalog.Diff(nil, st.indexed, func(folderID string) {
			want[entry(maphash.String(ls.holders.seed, folderID), st.num)]++
		}, nil)
	}
	got, dead := map[uint32]int{}, 0
	for _, s := range ls.holders.slots {
		switch s {
		case deadSlot:
			dead++
		case emptySlot:
		default:
			got[s]++
		}
	}
	if !maps.Equal(got, want) || dead != ls.holders.dead || ls.holders.live != len(ls.holders.slots)-dead-ls.holders.empty() {
		t.Fatalf("%s: holders has entries %v (%d dead, counted %d live, %d dead), want %v", when, got, dead, ls.holders.live, ls.holders.dead, want)
	}
	for root, v := range ls.roots {
		if v != several && (ls.byNum[v] == nil || ls.byNum[v].rootID != root) {
			t.Fatalf("%s: roots keeps %s for %d, which is not rooted there", when, root, v)
		}
	}
	for _, n := range ls.free {
		if ls.byNum[n] != nil {
			t.Fatalf("%s: number %d is free and taken", when, n)
		}
	}
}

// In random worlds, libraries added, renamed and dropped, their trees
// synced and changed, a lookup of a folder or of a root always looks in
// every library whose catalog holds it, and what the server keeps to find
// them holds nothing stale.
func TestLibrariesFollowTheirCatalogs(t *testing.T) {
	defer func(n, slots int) { largeLibrary, minHolderSlots = n, slots }(largeLibrary, minHolderSlots)
	largeLibrary = 9   // libraries of 9 folders and more are large
	minHolderSlots = 8 // holders is made again often
	for seed := range uint64(4) {
		w := newLibraryWorld(t, seed)
		for step := range 200 {
			w.step()
			w.check(fmt.Sprintf("seed %d step %d", seed, step))
		}
	}
}

// A catalog update that ends after its library was dropped (a request
// began it before) leaves nothing of the library in what lookups read.
func TestUpdateAfterTheDropLeavesNothing(t *testing.T) {
	w := newLibraryWorld(t, 1)
	w.set.SetDiscovered("example.com", []fm.Library{{ID: "lib1", Domain: "example.com", RootFolderID: worldRoot("lib1")}})
	w.fullSync("lib1")
	_, st, ok := w.s.libs.get("lib1")
	if !ok {
		t.Fatal("lib1 is not in the set")
	}
	w.set.SetDiscovered("example.com", nil)
	state, err := w.db.Library(context.Background(), "lib1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.library(context.Background(), state); err != nil {
		t.Fatal(err)
	}
	ls := w.s.libs
	if ls.holders.live != 0 || len(ls.roots) != 0 || len(ls.byID) != 0 || w.s.Warmed(context.Background(), "lib1") {
		t.Errorf("after the drop: holders %v, roots %v, states %v", ls.holders, ls.roots, ls.byID)
	}
	if got := ls.mayHold(worldRoot("lib1")); len(got) != 0 {
		t.Errorf("the root of the dropped library is looked up in %v", got)
	}
}

// empty counts the empty slots.
func (h *holders) empty() int {
	n := 0
	for _, s := range h.slots {
		if s == emptySlot {
			n++
		}
	}
	return n
}

// holders names every library given an ID, each as many times as it was
// given it, and no other but those given another ID of its fingerprint; a
// removed entry is no longer named, and the others are still found past
// it. The table is filled to 70 %, so that searches go through long runs.
func TestHolders(t *testing.T) {
	h := newHolders(maphash.MakeSeed(), 0)
	const n = 270
	held := map[string]map[uint32]int{}
	give := func(id string, num uint32, count int) {
		if held[id] == nil {
			held[id] = map[uint32]int{}
		}
		held[id][num] += count
	}
	for i := range n {
		id := fmt.Sprint("id", i)
		h.add(id, uint32(i%7))
		give(id, uint32(i%7), 1)
		if i%3 == 0 {
			h.add(id, maxHeldNumber) // the largest number
			give(id, maxHeldNumber, 1)
		}
	}
	if !h.fits(0) || h.fits(len(h.slots)/10) {
		t.Fatalf("%d entries in %d slots: not about 70 %% full", h.live, len(h.slots))
	}
	for i := 0; i < n; i += 2 {
		id := fmt.Sprint("id", i)
		h.remove(id, uint32(i%7))
		give(id, uint32(i%7), -1)
		h.remove(id, 99) // never given: nothing to remove
	}
	fingerprint := func(id string) uint32 { return entry(maphash.String(h.seed, id), 0) &^ numberMask }
	for id, want := range held {
		got := map[uint32]int{}
		h.lookup(id, func(num uint32) { got[num]++ })
		for num, count := range want {
			if got[num] != count && !sharedFingerprint(held, fingerprint, id, num) {
				t.Errorf("%s: library %d named %d times, want %d", id, num, got[num], count)
			}
		}
		for num := range got {
			if want[num] == 0 && !sharedFingerprint(held, fingerprint, id, num) {
				t.Errorf("%s: library %d named, which no ID of its fingerprint is given", id, num)
			}
		}
	}
}

// sharedFingerprint tells whether an ID other than id, of its fingerprint,
// is held by num.
func sharedFingerprint(held map[string]map[uint32]int, fingerprint func(string) uint32, id string, num uint32) bool {
	for other, nums := range held {
		if other != id && nums[num] > 0 && fingerprint(other) == fingerprint(id) {
			return true
		}
	}
	return false
}
