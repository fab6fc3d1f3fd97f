package httpapi

import (
	"context"
	"hash/maphash"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/httpapi/catalog"
)

// libraries is what the server keeps of the libraries of its set: for each
// library a request or Warm needed, its state (libState), made then and
// dropped when the set drops the library. So that a request finds the
// library of a folder ID without looking in every library, it knows the
// library each root folder is the root of, and which libraries may hold
// each folder; both are what the catalogs made hold.
type libraries struct {
	set   *fm.LibrarySet
	index fm.IndexReader

	mu   sync.RWMutex
	byID map[string]*libState
	// byNum holds the states by number; nil for a free number, which free
	// lists.
	byNum []*libState
	free  []uint32
	// unread are the libraries of the set whose state in the index was
	// never read: a folder lookup reads them first. One that was read and
	// not synced yet is not read again for a lookup: Warm, or a request
	// naming it, reads it again.
	unread map[string]struct{}
	// roots maps the root folder of each catalog made to its library's
	// number, or to several.
	roots map[string]uint32
	// holders has the folders of the catalogs of the libraries that are
	// not large: a folder is held by a library holders names for it, or
	// by a large one.
	holders *holders
	// large are the libraries holders leaves out, by number: there are few
	// of them, and each would cost it much memory.
	large map[uint32]*libState
}

// A library is large from largeLibrary folders, and is not once it has
// fewer than half as many. (A variable, so that tests can make libraries
// large.)
var largeLibrary = 10_000

// several is the number in roots of more than one library.
const several = ^uint32(0)

// libState is what the server keeps of one library of its set.
type libState struct {
	id      string
	num     uint32
	catalog *catalog.Catalog
	// shown is what the library's answers show of its definition, made
	// again for a definition the set changed.
	shown atomic.Pointer[libraryShown]
	// lastSynced is the Last-Modified of the library's latest sync
	// answered.
	lastSynced atomic.Pointer[httpDate]

	// Guarded by libraries.mu: the root of the catalog's Library, the
	// Library whose folders holders has (nil: none, or large), and whether
	// the set dropped the library.
	rootID  string
	indexed *catalog.Library
	large   bool
	dropped bool
}

// libraryShown is what a library's answers show of its definition: the
// definition, the JSON its folders share, and its configTag.
type libraryShown struct {
	def       fm.Library
	json      *libraryJSON
	configTag []byte
}

func newLibraries(set *fm.LibrarySet, idx fm.IndexReader) *libraries {
	ls := &libraries{set: set, index: idx, byID: map[string]*libState{}, unread: map[string]struct{}{},
		roots: map[string]uint32{}, holders: newHolders(maphash.MakeSeed(), 0), large: map[uint32]*libState{}}
	set.Subscribe(ls.follow)
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for _, l := range set.List() {
		ls.unread[l.ID] = struct{}{}
	}
	return ls
}

// follow follows a change of the set: a library added is unread; the state
// of one removed is dropped. (A changed one's shown is made again when next
// needed: see libState.show.)
func (ls *libraries) follow(c fm.LibrarySetChange) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for _, l := range c.Added {
		ls.unread[l.ID] = struct{}{}
	}
	for _, l := range c.Removed {
		ls.drop(l.ID)
	}
}

// get returns a library of the set as it is now, and its state, made if
// need be; false if the set has no library of that ID.
func (ls *libraries) get(id string) (fm.Library, *libState, bool) {
	ls.mu.RLock()
	lib, ok := ls.set.Library(id)
	st := ls.byID[id]
	ls.mu.RUnlock()
	if !ok || st != nil {
		return lib, st, ok
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	// Under the lock, so that a library the set drops now is dropped
	// after its state is made, or has none made.
	if lib, ok = ls.set.Library(id); !ok {
		return lib, nil, false
	}
	if st = ls.byID[id]; st == nil {
		st = ls.add(id)
	}
	return lib, st, true
}

// add makes the state of a library. Call with ls.mu held.
func (ls *libraries) add(id string) *libState {
	st := &libState{id: id}
	if n := len(ls.free); n > 0 {
		st.num, ls.free = ls.free[n-1], ls.free[:n-1]
		ls.byNum[st.num] = st
	} else {
		st.num = uint32(len(ls.byNum))
		ls.byNum = append(ls.byNum, st)
	}
	st.catalog = catalog.New(ls.index, id, func(l *catalog.Library) { ls.observe(st, l) })
	ls.byID[id] = st
	return st
}

// drop forgets a library's state. Call with ls.mu held.
func (ls *libraries) drop(id string) {
	delete(ls.unread, id)
	st := ls.byID[id]
	if st == nil {
		return
	}
	delete(ls.byID, id)
	st.dropped = true
	ls.setRoot(st, "")
	ls.reindex(st, nil)
	delete(ls.large, st.num)
	ls.byNum[st.num] = nil
	ls.free = append(ls.free, st.num)
}

// observe notes the Library a library's catalog made current.
func (ls *libraries) observe(st *libState, l *catalog.Library) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if st.dropped {
		return
	}
	ls.setRoot(st, l.State.RootID)
	switch n := l.Len(); {
	case !st.large && (n >= largeLibrary || st.num > maxHeldNumber):
		ls.reindex(st, nil)
		st.large = true
		ls.large[st.num] = st
	case st.large && n < largeLibrary/2 && st.num <= maxHeldNumber:
		st.large = false
		delete(ls.large, st.num)
	}
	if !st.large {
		ls.reindex(st, l)
	}
}

// reindex makes holders hold the folders of l (nil: none) for a library,
// in place of those of the Library it held: the folders that differ, or,
// when holders cannot fit them, every folder of every library, in a larger
// holders. Call with ls.mu held.
func (ls *libraries) reindex(st *libState, l *catalog.Library) {
	if l != nil && !ls.holders.fits(l.Len()) {
		n := l.Len()
		for _, other := range ls.byID {
			if other.indexed != nil {
				n += other.indexed.Len()
			}
		}
		h := newHolders(ls.holders.seed, n)
		for _, other := range ls.byID {
			catalog.Diff(nil, other.indexed, func(id string) { h.add(id, other.num) }, nil)
		}
		ls.holders = h
	}
	catalog.Diff(st.indexed, l, func(id string) { ls.holders.add(id, st.num) }, func(id string) { ls.holders.remove(id, st.num) })
	st.indexed = l
}

// setRoot notes a library's root folder ("": none). Call with ls.mu held.
func (ls *libraries) setRoot(st *libState, rootID string) {
	if st.rootID == rootID {
		return
	}
	if ls.roots[st.rootID] == st.num {
		delete(ls.roots, st.rootID)
	}
	st.rootID = rootID
	if rootID == "" {
		return
	}
	if _, taken := ls.roots[rootID]; taken {
		ls.roots[rootID] = several
	} else {
		ls.roots[rootID] = st.num
	}
}

// mayHold returns, sorted, the IDs of the libraries whose catalogs may hold
// a folder: those holders names, and the large ones.
func (ls *libraries) mayHold(folderID string) []string {
	ls.mu.RLock()
	defer ls.mu.RUnlock()
	var ids []string
	ls.holders.lookup(folderID, func(num uint32) {
		if id := ls.byNum[num].id; !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	})
	for _, st := range ls.large {
		ids = append(ids, st.id)
	}
	slices.Sort(ids)
	return ids
}

// rootedAt returns, sorted, the IDs of the libraries whose catalogs are
// rooted at a folder.
func (ls *libraries) rootedAt(folderID string) []string {
	ls.mu.RLock()
	defer ls.mu.RUnlock()
	switch num, ok := ls.roots[folderID]; {
	case !ok:
		return nil
	case num != several:
		return []string{ls.byNum[num].id}
	}
	var ids []string
	for _, st := range ls.byID {
		if st.rootID == folderID {
			ids = append(ids, st.id)
		}
	}
	slices.Sort(ids)
	return ids
}

// unreadIDs returns the libraries of the set whose state in the index was
// never read.
func (ls *libraries) unreadIDs() []string {
	ls.mu.RLock()
	defer ls.mu.RUnlock()
	if len(ls.unread) == 0 {
		return nil
	}
	return slices.Collect(maps.Keys(ls.unread))
}

// read notes that a library's state in the index was read.
func (ls *libraries) read(id string) {
	ls.mu.RLock()
	_, unread := ls.unread[id]
	ls.mu.RUnlock()
	if unread {
		ls.mu.Lock()
		delete(ls.unread, id)
		ls.mu.Unlock()
	}
}

// built tells whether a catalog of a library of the set was made.
func (ls *libraries) built(id string) bool {
	ls.mu.RLock()
	defer ls.mu.RUnlock()
	st := ls.byID[id]
	return st != nil && st.catalog.Current() != nil
}

// library returns the library at the revision of state (or a later one),
// bringing its catalog there first if it is behind. The update is shared
// by every request waiting for it, so it does not end when the request
// that started it does.
func (st *libState) library(ctx context.Context, state *fm.LibraryState) (*catalog.Library, error) {
	if l := st.catalog.Current(); l != nil && l.State.Revision >= state.Revision && l.State.RootID == state.RootID {
		return l, nil
	}
	return st.catalog.Update(context.WithoutCancel(ctx), state)
}

// show returns what the answers of the library show of lib, its
// definition now.
func (st *libState) show(lib fm.Library, domain func(name string) *Domain) *libraryShown {
	if p := st.shown.Load(); p != nil && p.def == lib {
		return p
	}
	p := &libraryShown{def: lib, json: newLibraryJSON(&lib), configTag: configTag(&lib, domain(lib.Domain))}
	st.shown.Store(p)
	return p
}
