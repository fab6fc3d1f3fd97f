package catalog

import (
	"fmt"
	"slices"

	fm "github.com/foldermirror/foldermirror"
)

// A delta is folded into a new base once it holds a compactShare-th of the
// base's folders, or minDeltaToCompact, whichever is more. (Variables, so
// that tests can make it happen often.)
var (
	compactShare      = 16
	minDeltaToCompact = 4096
)

// apply returns the Library that cs's changes make of l. grants is the
// table l's grants come from; cs's sets are added to it.
func (l *Library) apply(grants *grantTable, cs *fm.ChangeSet) (*Library, error) {
	for _, s := range cs.Sets {
		grants.add(s)
	}
	d := l.delta.clone(l.base.len())
	next := &Library{State: cs.State, base: l.base, delta: d}
	affected := map[string]bool{}
	for _, id := range cs.Removed {
		l.remove(d, id, affected)
	}
	byParent := map[string][]string{}
	for i := range cs.Written {
		f := &cs.Written[i]
		if err := l.write(d, grants, f, affected); err != nil {
			return nil, err
		}
		if f.ParentID != "" {
			byParent[f.ParentID] = append(byParent[f.ParentID], f.ID)
		}
	}
	next.grants = grants.view()
	for parent := range affected {
		next.orderChildren(l, d, parent, byParent[parent])
	}
	if d.size() > max(minDeltaToCompact, l.base.len()/compactShare) {
		return next.compact()
	}
	return next, nil
}

// remove takes a folder out of the new delta d, and notes its parent's
// children as changed.
func (l *Library) remove(d *delta, id string, affected map[string]bool) {
	r, ok := l.Lookup(id)
	if !ok {
		return
	}
	affected[l.View(r).ParentID] = true
	if r.d != nil {
		delete(d.folders, id)
		if r.b == none {
			d.new--
		}
	}
	if r.b != none && !d.removed[id] {
		d.removed[id] = true
		d.gone++
		d.mark(r.b)
	}
	delete(d.children, id)
}

// write puts a folder, as the index has it now, in the new delta d, and
// notes the parents whose children it changed.
func (l *Library) write(d *delta, grants *grantTable, f *fm.Folder, affected map[string]bool) error {
	set, ok := grants.lookup(f.PermissionSet)
	if !ok {
		return fmt.Errorf("folder %s refers to a permission set the changes did not give", f.ID)
	}
	nf := &folder{id: f.ID, parentID: f.ParentID, name: f.Name, escapedName: escape(f.Name),
		resourceKey: escape(f.ResourceKey), definitionID: escape(f.DefinitionID), set: set, flags: folderFlags(f)}
	if !plain(f.ID) || !plain(f.ParentID) {
		nf.flags |= flagEscapedID
	}
	b, inBase := l.base.ids.Lookup(f.ID)
	if !inBase {
		b = none
	}
	if _, had := d.folders[f.ID]; !had && b == none {
		d.new++
	}
	d.folders[f.ID] = nf
	if d.removed[f.ID] {
		delete(d.removed, f.ID)
		d.gone--
	}
	d.mark(b)
	old, existed := l.Lookup(f.ID)
	if !existed {
		affected[f.ParentID] = true
		return nil
	}
	// The parent's children change if the folder moved or was renamed; a
	// parent listing its children explicitly holds the folder's old self.
	was := l.View(old)
	if was.ParentID != f.ParentID || was.Name != f.Name {
		affected[was.ParentID] = true
	}
	if _, listed := d.children[f.ParentID]; listed || was.ParentID != f.ParentID || was.Name != f.Name {
		affected[f.ParentID] = true
	}
	return nil
}

// orderChildren gives a parent whose children changed its children in
// order: those it had in prev, but for those gone or moved, and the folders
// written under it.
func (l *Library) orderChildren(prev *Library, d *delta, parentID string, written []string) {
	if parentID == "" {
		return
	}
	parent, ok := l.Lookup(parentID)
	if !ok {
		delete(d.children, parentID)
		return
	}
	type child struct {
		ref      Ref
		name, id string
	}
	var kids []child
	seen := map[string]bool{}
	keep := func(id string) {
		if seen[id] {
			return
		}
		seen[id] = true
		if r, ok := l.Lookup(id); ok {
			if v := l.View(r); v.ParentID == parentID {
				kids = append(kids, child{r, v.Name, v.ID})
			}
		}
	}
	if was, ok := prev.Lookup(parentID); ok {
		prev.Children(was, func(r Ref) bool {
			keep(prev.View(r).ID)
			return true
		})
	}
	for _, id := range written {
		keep(id)
	}
	slices.SortFunc(kids, func(a, b child) int { return compareNames(a.name, a.id, b.name, b.id) })
	list := make([]Ref, len(kids))
	for i, k := range kids {
		list[i] = k.ref
	}
	d.children[parentID] = list
	d.mark(parent.b)
}
