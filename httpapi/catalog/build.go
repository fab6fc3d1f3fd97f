package catalog

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/internal/intern"
)

// builder makes a base from folders given in its order: depth first,
// siblings in the API's order, each after its parent.
type builder struct {
	b *base
	// IDs, back to back, and where each ends: the base's table is made of
	// them once all are added.
	data []byte
	ends []uint32
	// last is the number of the last folder added at each depth, and
	// plain whether its ID is plain (see flagEscapedID).
	last  []uint32
	plain []bool
}

// newBuilder returns a builder with room for n folders.
func newBuilder(n int) *builder {
	b := &base{size: make([]uint32, 0, n), parent: make([]uint32, 0, n),
		set: make([]uint32, 0, n), flags: make([]uint8, 0, n), record: make([]uint32, 0, n)}
	return &builder{b: b, ends: make([]uint32, 0, n)}
}

// add adds a folder at depth (0 for the root) under the last folder added
// at the depth above. resourceKey and definitionID are escaped already.
// The caller sees that each ID comes once.
func (bl *builder) add(id, name, resourceKey, definitionID string, set uint32, flags uint8, depth int) error {
	b := bl.b
	if depth > len(bl.last) {
		return fmt.Errorf("folder %s has no parent", id)
	}
	if len(b.arena) > math.MaxUint32 || len(bl.data) > math.MaxUint32 {
		return errors.New("the library's names are too long for one catalog (over 4 GB)")
	}
	n := uint32(len(bl.ends))
	bl.data = append(bl.data, id...)
	bl.ends = append(bl.ends, uint32(len(bl.data)))
	parent, plainID := none, plain(id)
	bl.last, bl.plain = append(bl.last[:depth], n), append(bl.plain[:depth], plainID)
	flags &^= flagEscapedID
	if depth > 0 {
		parent = bl.last[depth-1]
		plainID = plainID && bl.plain[depth-1]
	}
	if !plainID {
		flags |= flagEscapedID
	}
	b.record = append(b.record, uint32(len(b.arena)))
	b.arena = appendRecord(b.arena, name, resourceKey, definitionID)
	b.size = append(b.size, 1)
	b.parent = append(b.parent, parent)
	b.set = append(b.set, set)
	b.flags = append(b.flags, flags)
	return nil
}

// done sums the subtree sizes, makes the table of the IDs, and returns the
// base, its arena and IDs copied to slices of their length if growing left
// them an eighth or more of slack (see clipped): thousands of small
// catalogs would add it up.
func (bl *builder) done() *base {
	b := bl.b
	for n := len(b.size) - 1; n > 0; n-- {
		b.size[b.parent[n]] += b.size[n]
	}
	b.arena = clipped(b.arena)
	b.ids, _ = intern.FromParts(clipped(bl.data), bl.ends) // ends rise to len(data), as add made them
	return b
}

// clipped returns b, copied to a slice of its length if growing left it
// an eighth or more of slack.
func clipped(b []byte) []byte {
	if slack := cap(b) - len(b); slack > 0 && slack >= len(b)/8 {
		return slices.Clone(b)
	}
	return b
}

// flagsOf returns the flags of a View.
func flagsOf(v View) uint8 {
	var flags uint8
	if v.Restricted {
		flags |= flagRestricted
	}
	if v.WritersCanShare {
		flags |= flagWritersCanShare
	}
	return flags
}

// folderFlags returns the flags of an index's folder.
func folderFlags(f *fm.Folder) uint8 {
	var flags uint8
	if f.RestrictedDownload {
		flags |= flagRestricted
	}
	if f.WritersCanShare {
		flags |= flagWritersCanShare
	}
	return flags
}

// compact makes a new base of l's folders, l's delta folded in.
func (l *Library) compact() (*Library, error) {
	bl := newBuilder(l.Len())
	root := l.Root()
	if !root.Valid() {
		return nil, fmt.Errorf("library %s: its root %s is missing", l.State.ID, l.State.RootID)
	}
	add := func(r Ref, depth int) error {
		v := l.View(r)
		return bl.add(v.ID, v.Name, v.ResourceKey, v.DefinitionID, v.Set, flagsOf(v), depth)
	}
	if err := add(root, 0); err != nil {
		return nil, err
	}
	var err error
	l.Walk(root, func(r Ref, depth int) bool {
		if err == nil {
			err = add(r, depth+1)
		}
		return err == nil
	}, nil)
	if err != nil {
		return nil, err
	}
	b := bl.done()
	b.revision = l.State.Revision
	return &Library{State: l.State, base: b, grants: l.grants}, nil
}

// loader reads a whole library from an index (it is the LibraryReader the
// index hands the library to), then orders it into a base.
type loader struct {
	grants *grantTable
	ids    *intern.Tagged // folders, and parents named before they come
	// By folder number: its parent, its name's nameKey, and the rest of
	// what is kept of it together (see entry).
	parent  []uint32
	keys    []uint64
	entries []entry
	arena   []byte
	// pipe, while a large library is read, hands its folders to the
	// goroutine that adds them (see pipe); piped tells to make one.
	pipe  *pipe
	piped bool
}

// entry is what a loader holds of a folder, but its parent and key:
// together, since ordering the folders reads them in no order of their
// numbers.
type entry struct {
	record uint32 // in arena: name, escaped resource key and definition
	set    uint32
	// kids is where its children start in the list childLists makes: they
	// end where the next folder's start.
	kids uint32
	// idEnd is where its ID ends in the IDs' bytes: it starts where the
	// one before ends.
	idEnd uint32
	flags uint8
	read  bool
}

// newLoader returns a loader with room for about n folders (1,024 if n is
// 0, not known), so that a library of the size it had last fills it
// without growing it, and a small one, of which there may be thousands,
// takes no more room than it needs.
func newLoader(grants *grantTable, n int) *loader {
	n = cmp.Or(n, 1024)
	ld := &loader{grants: grants, ids: intern.NewTagged(n), parent: make([]uint32, 0, n),
		keys: make([]uint64, 0, n), entries: make([]entry, 0, n), arena: make([]byte, 0, n*bytesPerName)}
	ld.ids.Reserve(n * bytesPerID)
	ld.piped = n >= pipeFrom
	return ld
}

// loaders keeps the loaders of small libraries (below releaseFrom
// folders) for the next read. A base keeps nothing of its loader, so the
// thousands of small catalogs a daemon of many drives reads at start are
// read with the same few loaders' memory, rather than each leaving its
// loader's among the bases, where the heap stays fragmented.
var loaders sync.Pool

// loaderFor returns a loader for about n folders (see newLoader), one
// that loaders kept if there is one.
func loaderFor(grants *grantTable, n int) *loader {
	ld, ok := loaders.Get().(*loader)
	if !ok {
		return newLoader(grants, n)
	}
	n = cmp.Or(n, 1024)
	ld.grants = grants
	ld.ids.Reset(n)
	ld.parent, ld.keys, ld.entries, ld.arena = ld.parent[:0], ld.keys[:0], ld.entries[:0], ld.arena[:0]
	ld.piped = n >= pipeFrom
	return ld
}

// large tells whether the loader read a large library, whose memory is
// the system's again once it is done (see done).
func (ld *loader) large() bool { return len(ld.entries) >= releaseFrom }

// done gives the loader back to loaders once its base is made, unless it
// read a large library.
func (ld *loader) done() {
	ld.grants = nil // the catalog's now
	if !ld.large() {
		loaders.Put(ld)
	}
}

// Room a loader makes per folder for its ID and for its name and other
// strings: Drive's IDs are 33 bytes, most names shorter than 32.
const (
	bytesPerID   = 34
	bytesPerName = 36
)

// number returns the number of an ID, numbering it if it is new.
func (ld *loader) number(id string) uint32 {
	n, added := ld.ids.Intern(id)
	if added {
		ld.parent = append(ld.parent, none)
		ld.keys = append(ld.keys, 0)
		ld.entries = append(ld.entries, entry{idEnd: uint32(ld.ids.DataLen())})
	}
	return n
}

// PermissionSet implements fm.LibraryReader.
func (ld *loader) PermissionSet(set fm.PermissionSet) error {
	ld.grants.add(set)
	return nil
}

// Folder implements fm.LibraryReader.
func (ld *loader) Folder(f *fm.Folder) error {
	set, ok := ld.grants.lookup(f.PermissionSet)
	if !ok {
		return fmt.Errorf("folder %s refers to a permission set the index did not give", f.ID)
	}
	if ld.piped && ld.pipe == nil {
		ld.startPipe()
	}
	if ld.pipe != nil {
		return ld.pipe.put(f, set)
	}
	return ld.add(f.ID, f.ParentID, f.Name, f.ResourceKey, f.DefinitionID, set, folderFlags(f))
}

// add adds a folder the index gave.
func (ld *loader) add(id, parentID, name, resourceKey, definitionID string, set uint32, flags uint8) error {
	parent := none
	if parentID != "" {
		parent = ld.number(parentID)
	}
	n := ld.number(id)
	e := &ld.entries[n]
	if e.read {
		return fmt.Errorf("folder %s given twice", id)
	}
	if len(ld.arena) > math.MaxUint32 || ld.ids.DataLen() > math.MaxUint32 {
		return errors.New("the library's names are too long for one catalog (over 4 GB)")
	}
	ld.parent[n], ld.keys[n] = parent, nameKey(name)
	e.read, e.set, e.flags, e.record = true, set, flags, uint32(len(ld.arena))
	ld.arena = appendString(ld.arena, name)
	ld.arena = appendString(ld.arena, escape(resourceKey))
	ld.arena = appendString(ld.arena, escape(definitionID))
	return nil
}

// id returns folder n's ID.
func (ld *loader) id(n uint32) []byte {
	data, _ := ld.ids.Parts()
	start := uint32(0)
	if n > 0 {
		start = ld.entries[n-1].idEnd
	}
	return data[start:ld.entries[n].idEnd]
}

// children returns where folder n's children are in the list childLists
// made.
func (ld *loader) children(n uint32, kids []uint32) (start, end uint32) {
	end = uint32(len(kids))
	if int(n)+1 < len(ld.entries) {
		end = ld.entries[n+1].kids
	}
	return ld.entries[n].kids, end
}

// fields returns what folder n's record holds.
func (ld *loader) fields(n uint32) (name, resourceKey, definitionID string) {
	name, rest := nextString(ld.arena[ld.entries[n].record:])
	resourceKey, rest = nextString(rest)
	definitionID, _ = nextString(rest)
	return name, resourceKey, definitionID
}

// base orders what was read from root down, depth first, siblings by name
// then ID, into a base. Folders not under the root are left out. What the
// loader no longer needs is dropped as it goes, so that a large one and
// the base it makes do not both take their whole room.
func (ld *loader) base(rootID string) (*base, error) {
	root, ok := ld.ids.Lookup(rootID)
	if !ok || !ld.entries[root].read {
		return nil, fmt.Errorf("the root folder %s is not in the index", rootID)
	}
	kids := ld.childLists()
	ld.sortChildren(kids)
	if ld.large() {
		ld.ids.Release()
		ld.keys = nil
	}
	order, parent := ld.order(root, kids)
	return ld.emit(order, parent)
}

// childLists returns the folders read, by parent (see children).
func (ld *loader) childLists() []uint32 {
	next := make([]uint32, len(ld.entries)+1)
	for n, p := range ld.parent {
		if p != none && ld.entries[n].read {
			next[p+1]++
		}
	}
	for i := 1; i < len(next); i++ {
		next[i] += next[i-1]
	}
	for n := range ld.entries {
		ld.entries[n].kids = next[n]
	}
	kids := make([]uint32, next[len(next)-1])
	for n, p := range ld.parent {
		if p != none && ld.entries[n].read {
			kids[next[p]] = uint32(n)
			next[p]++
		}
	}
	return kids
}

// sortChildren sorts each folder's children (see childLists) in the API's
// order: by their names' keys (nameKey), then, where those are equal, by
// name then ID. The keys of a folder's children are copied together
// before they are sorted: they are compared many times, and the names
// themselves, far apart in memory, rarely.
func (ld *loader) sortChildren(kids []uint32) {
	type child struct {
		key uint64
		n   uint32
	}
	var list []child
	for p := range uint32(len(ld.entries)) {
		start, end := ld.children(p, kids)
		group := kids[start:end]
		if len(group) < 2 {
			continue
		}
		list = list[:0]
		for _, n := range group {
			list = append(list, child{ld.keys[n], n})
		}
		slices.SortFunc(list, func(a, b child) int {
			if c := cmp.Compare(a.key, b.key); c != 0 {
				return c
			}
			an, _, _ := ld.fields(a.n)
			bn, _, _ := ld.fields(b.n)
			return compareNames(an, unsafeString(ld.id(a.n)), bn, unsafeString(ld.id(b.n)))
		})
		for i, c := range list {
			group[i] = c.n
		}
	}
}

// order returns the folders under root (root first) in the order of the
// base: depth first, children in the order of kids; and the position of
// each one's parent in that order (none for the root).
func (ld *loader) order(root uint32, kids []uint32) (order, parent []uint32) {
	order, parent = make([]uint32, 0, len(ld.entries)), make([]uint32, 0, len(ld.entries))
	type frame struct{ pos, next, end uint32 }
	order, parent = append(order, root), append(parent, none)
	start, end := ld.children(root, kids)
	stack := []frame{{0, start, end}}
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if top.next == top.end {
			stack = stack[:len(stack)-1]
			continue
		}
		n := kids[top.next]
		top.next++
		pos := uint32(len(order))
		order, parent = append(order, n), append(parent, top.pos)
		if start, end := ld.children(n, kids); start < end {
			stack = append(stack, frame{pos, start, end})
		}
	}
	return slices.Clip(order), slices.Clip(parent)
}

// emit makes the base of the folders in order, whose parents are at the
// positions parent gives: their IDs and their table on one core, their
// records on another, since each reads its folders' own far apart.
func (ld *loader) emit(order, parent []uint32) (*base, error) {
	n := len(order)
	b := &base{size: make([]uint32, n), parent: parent, set: make([]uint32, n), flags: make([]uint8, n),
		record: make([]uint32, n)}
	plainIDs := make([]bool, n)
	var wg sync.WaitGroup
	wg.Go(func() {
		data, ends := make([]byte, 0, ld.ids.DataLen()), make([]uint32, n)
		for pos, f := range order {
			id := ld.id(f)
			data = append(data, id...)
			ends[pos], plainIDs[pos] = uint32(len(data)), plain(unsafeString(id))
		}
		b.ids, _ = intern.FromParts(slices.Clip(data), ends) // ends rise to len(data)
	})
	// A base's record is the loader's and a byte, and the name escaped if
	// it needs escaping (rarely).
	arena := make([]byte, 0, len(ld.arena)+n)
	for pos, f := range order {
		e := &ld.entries[f]
		if len(arena) > math.MaxUint32 {
			break
		}
		name, rk, def := ld.fields(f)
		b.record[pos], b.set[pos], b.flags[pos] = uint32(len(arena)), e.set, e.flags
		arena = appendRecord(arena, name, rk, def)
	}
	wg.Wait()
	if len(arena) > math.MaxUint32 {
		return nil, errors.New("the library's names are too long for one catalog (over 4 GB)")
	}
	b.arena = clipped(arena)
	for pos := range b.size {
		b.size[pos] = 1
		if !plainIDs[pos] || pos > 0 && !plainIDs[parent[pos]] {
			b.flags[pos] |= flagEscapedID
		}
	}
	for pos := n - 1; pos > 0; pos-- {
		b.size[parent[pos]] += b.size[pos]
	}
	return b, nil
}
