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
	// last is the number of the last folder added at each depth.
	last []uint32
}

// newBuilder returns a builder with room for n folders whose IDs take
// idBytes and whose records about recordBytes (0: not known): a base made
// from a loader, which knows both, has its IDs' table and its arena made
// without growing, and so without the slack of growing (thousands of small
// catalogs add it up; done clips what slack is left).
func newBuilder(n, idBytes, recordBytes int) *builder {
	b := &base{ids: intern.New(n), size: make([]uint32, 0, n), parent: make([]uint32, 0, n),
		set: make([]uint32, 0, n), flags: make([]uint8, 0, n), record: make([]uint32, 0, n),
		arena: make([]byte, 0, recordBytes)}
	b.ids.Reserve(idBytes)
	return &builder{b: b}
}

// add adds a folder at depth (0 for the root) under the last folder added
// at the depth above. resourceKey and definitionID are escaped already.
func (bl *builder) add(id, name, resourceKey, definitionID string, set uint32, flags uint8, depth int) error {
	b := bl.b
	n, added := b.ids.Intern(id)
	if !added {
		return fmt.Errorf("folder %s met twice", id)
	}
	if depth > len(bl.last) {
		return fmt.Errorf("folder %s has no parent", id)
	}
	parent := none
	if depth > 0 {
		parent = bl.last[depth-1]
	}
	bl.last = append(bl.last[:depth], n)
	if len(b.arena) > math.MaxUint32 {
		return errors.New("the library's names are too long for one catalog (over 4 GB)")
	}
	flags &^= flagEscapedID
	if !plain(id) || (parent != none && !plain(unsafeString(b.ids.Bytes(parent)))) {
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

// done sums the subtree sizes and returns the base, its arena copied to
// one of its length if growing left it an eighth or more of slack.
func (bl *builder) done() *base {
	b := bl.b
	for n := len(b.size) - 1; n > 0; n-- {
		b.size[b.parent[n]] += b.size[n]
	}
	if slack := cap(b.arena) - len(b.arena); slack > 0 && slack >= len(b.arena)/8 {
		b.arena = slices.Clone(b.arena)
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
	bl := newBuilder(l.Len(), 0, 0)
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
	return &Library{State: l.State, base: bl.done(), grants: l.grants}, nil
}

// loader reads a whole library from an index (it is the LibraryReader the
// index hands the library to), then orders it into a base.
type loader struct {
	grants *grantTable
	ids    *intern.Table // folders, and parents named before they come
	// by folder number:
	parent []uint32
	set    []uint32
	flags  []uint8
	record []uint32 // in arena: name, escaped resource key and definition
	read   []bool
	arena  []byte
}

// newLoader returns a loader with room for about n folders (1,024 if n is
// 0, not known), so that a library of the size it had last fills it
// without growing it, and a small one, of which there may be thousands,
// takes no more room than it needs.
func newLoader(grants *grantTable, n int) *loader {
	n = cmp.Or(n, 1024)
	ld := &loader{grants: grants, ids: intern.New(n),
		parent: make([]uint32, 0, n), set: make([]uint32, 0, n), flags: make([]uint8, 0, n),
		record: make([]uint32, 0, n), read: make([]bool, 0, n), arena: make([]byte, 0, n*bytesPerName)}
	ld.ids.Reserve(n * bytesPerID)
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
	ld.parent, ld.set, ld.flags = ld.parent[:0], ld.set[:0], ld.flags[:0]
	ld.record, ld.read, ld.arena = ld.record[:0], ld.read[:0], ld.arena[:0]
	return ld
}

// done gives the loader back to loaders once its base is made, unless it
// read a large library, whose memory is the system's again at once.
func (ld *loader) done() {
	ld.grants = nil // the catalog's now
	if ld.ids.Len() < releaseFrom {
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
		ld.set = append(ld.set, 0)
		ld.flags = append(ld.flags, 0)
		ld.record = append(ld.record, 0)
		ld.read = append(ld.read, false)
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
	parent := none
	if f.ParentID != "" {
		parent = ld.number(f.ParentID)
	}
	n := ld.number(f.ID)
	if ld.read[n] {
		return fmt.Errorf("folder %s given twice", f.ID)
	}
	if len(ld.arena) > math.MaxUint32 {
		return errors.New("the library's names are too long for one catalog (over 4 GB)")
	}
	ld.read[n], ld.parent[n], ld.set[n], ld.flags[n] = true, parent, set, folderFlags(f)
	ld.record[n] = uint32(len(ld.arena))
	ld.arena = appendString(ld.arena, f.Name)
	ld.arena = appendString(ld.arena, escape(f.ResourceKey))
	ld.arena = appendString(ld.arena, escape(f.DefinitionID))
	return nil
}

// fields returns what folder n's record holds.
func (ld *loader) fields(n uint32) (name, resourceKey, definitionID string) {
	name, rest := nextString(ld.arena[ld.record[n]:])
	resourceKey, rest = nextString(rest)
	definitionID, _ = nextString(rest)
	return name, resourceKey, definitionID
}

// base orders what was read from root down, depth first, siblings by name
// then ID, into a base. Folders not under the root are left out.
func (ld *loader) base(rootID string) (*base, error) {
	root, ok := ld.ids.Lookup(rootID)
	if !ok || !ld.read[root] {
		return nil, fmt.Errorf("the root folder %s is not in the index", rootID)
	}
	start, kids := ld.childLists()
	names := func(n uint32) (string, string) {
		name, _, _ := ld.fields(n)
		return name, unsafeString(ld.ids.Bytes(n))
	}
	for p := range len(start) - 1 {
		slices.SortFunc(kids[start[p]:start[p+1]], func(a, b uint32) int {
			an, aid := names(a)
			bn, bid := names(b)
			return compareNames(an, aid, bn, bid)
		})
	}
	// A base's record is the loader's and a byte, and the name escaped
	// if it needs escaping (rarely).
	bl := newBuilder(ld.ids.Len(), ld.ids.DataLen(), len(ld.arena)+ld.ids.Len())
	type frame struct{ next, end uint32 }
	add := func(n uint32, depth int) error {
		name, rk, def := ld.fields(n)
		return bl.add(unsafeString(ld.ids.Bytes(n)), name, rk, def, ld.set[n], ld.flags[n], depth)
	}
	if err := add(root, 0); err != nil {
		return nil, err
	}
	stack := []frame{{start[root], start[root+1]}}
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if top.next == top.end {
			stack = stack[:len(stack)-1]
			continue
		}
		n := kids[top.next]
		top.next++
		if err := add(n, len(stack)); err != nil {
			return nil, err
		}
		stack = append(stack, frame{start[n], start[n+1]})
	}
	return bl.done(), nil
}

// childLists returns the folders read by parent: those of folder p are
// kids[start[p]:start[p+1]].
func (ld *loader) childLists() (start, kids []uint32) {
	start = make([]uint32, ld.ids.Len()+1)
	for n, p := range ld.parent {
		if ld.read[n] && p != none {
			start[p+1]++
		}
	}
	for i := 1; i < len(start); i++ {
		start[i] += start[i-1]
	}
	kids = make([]uint32, start[len(start)-1])
	next := append([]uint32(nil), start[:len(start)-1]...)
	for n, p := range ld.parent {
		if ld.read[n] && p != none {
			kids[next[p]] = uint32(n)
			next[p]++
		}
	}
	return start, kids
}
