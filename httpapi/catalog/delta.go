package catalog

import "maps"

// folder is a folder a delta holds: new, or changed since the base.
type folder struct {
	id, parentID                                 string
	name, escapedName, resourceKey, definitionID string
	set                                          uint32
	flags                                        uint8
}

func (f *folder) load(isRoot bool, v *View) {
	*v = View{ID: f.id, ParentID: f.parentID, Name: f.name, EscapedName: f.escapedName,
		ResourceKey: f.resourceKey, DefinitionID: f.definitionID, IsRoot: isRoot, Set: f.set,
		Restricted: f.flags&flagRestricted != 0, WritersCanShare: f.flags&flagWritersCanShare != 0,
		EscapedID: f.flags&flagEscapedID != 0}
}

// delta is what changed since a base: the folders written (as they are now,
// by ID), the base folders gone, and, for each parent whose children
// changed, its children in order. A Library's delta is never changed: a
// change makes a new delta. A nil delta holds nothing.
type delta struct {
	folders  map[string]*folder
	removed  map[string]bool
	children map[string][]Ref
	// dirty marks the base folders the delta knows of (changed, gone, or
	// whose children changed), so that a walk of the base looks up the
	// delta for those alone.
	dirty []uint64
	// new counts the folders not in the base; gone the base folders gone.
	new, gone int
}

// clone returns a copy of d (an empty delta for nil) to change.
func (d *delta) clone(baseLen int) *delta {
	if d == nil {
		return &delta{folders: map[string]*folder{}, removed: map[string]bool{}, children: map[string][]Ref{},
			dirty: make([]uint64, (baseLen+63)/64)}
	}
	return &delta{folders: maps.Clone(d.folders), removed: maps.Clone(d.removed), children: maps.Clone(d.children),
		dirty: append([]uint64(nil), d.dirty...), new: d.new, gone: d.gone}
}

func (d *delta) mark(b uint32) {
	if b != none {
		d.dirty[b/64] |= 1 << (b % 64)
	}
}

func (d *delta) isDirty(b uint32) bool { return d.dirty[b/64]&(1<<(b%64)) != 0 }

// size is how much the delta holds, to decide when to make a new base.
func (d *delta) size() int {
	if d == nil {
		return 0
	}
	return len(d.folders) + len(d.removed) + len(d.children)
}

func (d *delta) added() int {
	if d == nil {
		return 0
	}
	return d.new
}

func (d *delta) removedCount() int {
	if d == nil {
		return 0
	}
	return d.gone
}

// bytes estimates the memory the delta holds.
func (d *delta) bytes() int {
	if d == nil {
		return 0
	}
	n := 8 * len(d.dirty)
	for id, f := range d.folders {
		n += 160 + len(id) + len(f.parentID) + len(f.name) + len(f.escapedName) + len(f.resourceKey) + len(f.definitionID)
	}
	for id, list := range d.children {
		n += 64 + len(id) + 16*cap(list)
	}
	return n + 64*len(d.removed)
}
