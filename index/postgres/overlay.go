package postgres

import (
	"maps"
	"slices"

	fm "github.com/foldermirror/foldermirror"
)

// overlay is what an update knows of the library's tree as its transaction
// has it, writes not sent yet included: the folders it read or wrote, the
// children of some, and permission lists. It is exact because, with the
// library's row locked, only the update itself writes the tree's rows: a
// folder the overlay does not know is as the database has it, and reading
// it needs no queued write sent first. The database's answers never
// override what the overlay knows (writes may be queued for those
// folders); lists never change under a key.
type overlay struct {
	// folders by ID; nil: the tree has no such folder.
	folders map[string]*fm.Folder
	// children are the IDs of the folders known, by parent.
	children map[string]map[string]struct{}
	// complete are the parents all of whose children are known: every row
	// naming them as parent was read, and every folder moved under them
	// since is known, having been written.
	complete map[string]bool
	lists    map[fm.PermissionSetKey][]fm.Permission
}

func newOverlay() *overlay {
	return &overlay{folders: map[string]*fm.Folder{}, children: map[string]map[string]struct{}{},
		complete: map[string]bool{}, lists: map[fm.PermissionSetKey][]fm.Permission{}}
}

// folder returns a copy of a folder known (nil if known to be absent), and
// whether it is known.
func (o *overlay) folder(id string) (*fm.Folder, bool) {
	f, ok := o.folders[id]
	if f == nil {
		return nil, ok
	}
	c := *f
	return &c, true
}

// put records a folder written, or read when not known yet.
func (o *overlay) put(f fm.Folder) {
	o.remove(f.ID)
	o.folders[f.ID] = &f
	kids := o.children[f.ParentID]
	if kids == nil {
		kids = map[string]struct{}{}
		o.children[f.ParentID] = kids
	}
	kids[f.ID] = struct{}{}
}

// remove records that the tree has no folder id.
func (o *overlay) remove(id string) {
	if old := o.folders[id]; old != nil {
		delete(o.children[old.ParentID], id)
	}
	o.folders[id] = nil
}

// learn records a folder read from the database, unless it is known.
func (o *overlay) learn(f *fm.Folder) {
	if _, ok := o.folders[f.ID]; !ok {
		o.put(*f)
	}
}

// learnAbsent records that the database has no folder id, unless it is
// known.
func (o *overlay) learnAbsent(id string) {
	if _, ok := o.folders[id]; !ok {
		o.folders[id] = nil
	}
}

// kids returns the children of a parent, sorted, if all are known.
func (o *overlay) kids(parent string) ([]string, bool) {
	if !o.complete[parent] {
		return nil, false
	}
	return slices.Sorted(maps.Keys(o.children[parent])), true
}

// list returns a copy of the list of a key, if known: never nil, as a
// list decoded.
func (o *overlay) list(key fm.PermissionSetKey) ([]fm.Permission, bool) {
	l, ok := o.lists[key]
	return append([]fm.Permission{}, l...), ok
}

// setList records the list of a key.
func (o *overlay) setList(key fm.PermissionSetKey, perms []fm.Permission) {
	if _, ok := o.lists[key]; !ok {
		o.lists[key] = append([]fm.Permission{}, perms...)
	}
}
