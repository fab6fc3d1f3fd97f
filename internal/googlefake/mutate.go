package googlefake

import (
	"fmt"
	"slices"
)

// The mutators below are test helpers: they panic on an unknown ID. Each
// records a change for the file it touches and for every descendant whose
// effective permissions, trashed state or drive changed, as Drive does; but
// see LogItemAlone.

// reach says which changes a mutation logs.
type reach int

const (
	// itemOnly: the mutation changes the item alone (a name, a drive's
	// restrictions).
	itemOnly reach = iota
	// inheritance: a permission change or a move, whose effects on
	// descendants Drive may leave unlogged (LogItemAlone).
	inheritance
	// wholeSubtree: every descendant whose state changes is logged (trash).
	wholeSubtree
)

// LogItemAlone makes, when on, permission changes and moves (Share, Unshare,
// Move, AddParent, ForceParents, Modify, RemoveUser) log a change for the
// item alone, a "drive" change for a shared drive's root, and none for the
// descendants whose effective permissions (or trashed state, or drive)
// change with it: Drive does not promise one per descendant, notably for a
// shared drive's members. Trash, Untrash and Delete still log every item
// they touch. LogItemAlone(false), the default, logs them all.
func (s *Server) LogItemAlone(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.itemAlone = on
}

// Share adds a permission to a file and returns its ID; on a shared drive ID
// it adds a drive member. Sharing again with the same principal replaces the
// role (and, for domain/anyone, the discoverability), where the permission
// stands in the file's order.
func (s *Server) Share(fileID string, p Permission) string {
	p = normalize(p)
	id := permissionID(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mutate(fileID, inheritance, func(f *File) { f.grant(directPerm{id: id, p: p}) })
	return id
}

// grant sets a permission on the file: in place of the principal's, or
// after the others.
func (f *File) grant(d directPerm) {
	key := principalKey(d.p)
	if i := slices.IndexFunc(f.perms, func(o directPerm) bool { return principalKey(o.p) == key }); i >= 0 {
		f.perms[i] = d
		return
	}
	f.perms = append(f.perms, d)
}

// ShareAll is Share of each permission in turn, done as one mutation: the
// file's state is computed once, not once a permission, so a file shared
// with thousands is made at once. It returns the permissions' IDs.
func (s *Server) ShareAll(fileID string, ps []Permission) []string {
	ps = slices.Clone(ps)
	ids := make([]string, len(ps))
	for i, p := range ps {
		ps[i] = normalize(p)
		ids[i] = permissionID(ps[i])
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mutate(fileID, inheritance, func(f *File) {
		at := make(map[string]int, len(f.perms)+len(ps)) // principal → its place in f.perms
		for i, d := range f.perms {
			at[principalKey(d.p)] = i
		}
		for i, p := range ps {
			key := principalKey(p)
			if j, ok := at[key]; ok {
				f.perms[j] = directPerm{id: ids[i], p: p}
				continue
			}
			at[key] = len(f.perms)
			f.perms = append(f.perms, directPerm{id: ids[i], p: p})
		}
	})
	return ids
}

// Unshare removes the permission with that ID set on the file itself (on a
// shared drive ID: the member). It panics if the file has no such permission.
func (s *Server) Unshare(fileID, permissionID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mutate(fileID, inheritance, func(f *File) {
		i := slices.IndexFunc(f.perms, func(d directPerm) bool { return d.id == permissionID })
		if i < 0 {
			panic(fmt.Sprintf("googlefake: file %q has no permission %q", fileID, permissionID))
		}
		f.perms = slices.Delete(f.perms, i, i+1)
	})
}

// Rename changes a file's name, and its modifiedTime; on a shared drive ID
// it renames the drive.
func (s *Server) Rename(fileID, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mutate(fileID, itemOnly, func(f *File) {
		f.Name = name
		s.modified(f)
		if d := s.drives[f.ID]; d != nil {
			d.res.Name = name
		}
	})
}

// Move replaces all parents of a file by newParentID, and sets its
// modifiedTime (not its parents', old or new). Moving into or out of
// a shared drive moves the whole subtree to that drive (shared drive items
// have no owner; items leaving a shared drive are owned by the new parent's
// owner).
func (s *Server) Move(fileID, newParentID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	parent := s.checkParent(fileID, newParentID)
	s.mutate(fileID, inheritance, func(f *File) {
		f.Parents = []string{newParentID}
		s.modified(f)
		if f.DriveID != parent.DriveID {
			s.rehome(f, parent)
		}
	})
}

// AddParent gives a file one more parent, in the same drive, which sets
// its modifiedTime.
func (s *Server) AddParent(fileID, parentID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	parent := s.checkParent(fileID, parentID)
	if f := s.files[fileID]; f.DriveID != parent.DriveID {
		panic("googlefake: AddParent across drives")
	}
	s.mutate(fileID, inheritance, func(f *File) {
		if !slices.Contains(f.Parents, parentID) {
			f.Parents = append(f.Parents, parentID)
			s.modified(f)
		}
	})
}

// Trash moves a file to the trash; its descendants become trashed too.
func (s *Server) Trash(fileID string) {
	s.setTrashed(fileID, true)
}

// Untrash restores a file from the trash.
func (s *Server) Untrash(fileID string) {
	s.setTrashed(fileID, false)
}

func (s *Server) setTrashed(fileID string, trashed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mutate(fileID, wholeSubtree, func(f *File) { f.ExplicitlyTrashed = trashed })
}

// Delete permanently deletes a file and its descendants. A My Drive root
// cannot be deleted, nor a shared drive's root: DeleteSharedDrive deletes
// a shared drive.
func (s *Server) Delete(fileID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.mustFile(fileID)
	switch {
	case f.root && f.DriveID == "":
		panic("googlefake: cannot delete a My Drive root")
	case f.root:
		panic("googlefake: Delete of shared drive " + fileID + ": use DeleteSharedDrive")
	}
	s.deleteTree(f)
}

// deleteTree deletes f and its descendants, shared drives among them, and
// logs their removal.
func (s *Server) deleteTree(f *File) {
	gone := s.subtree(f)
	before := s.snapshots(gone)
	for _, g := range gone {
		s.link(g.ID, g.Parents, nil)
		delete(s.files, g.ID)
		delete(s.children, g.ID)
		delete(s.cache, g.ID)
		if s.drives[g.ID] != nil {
			delete(s.drives, g.ID)
			s.indexDrive(g)
		}
	}
	live := func(x *File) bool { return s.files[x.ID] == x }
	s.byCreated.keep(live)
	s.byModified.keep(live)
	for i, g := range gone {
		s.record(g, before[i])
	}
}

// Modify applies fn to the file record for any other property change
// (resource key, app properties, restrictions, owner, ...) and records the
// change. fn must not change the ID. It leaves modifiedTime as it is: see
// Touch and SetFileTimes.
func (s *Server) Modify(fileID string, fn func(f *File)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mutate(fileID, inheritance, fn)
}

// checkParent returns the new parent of a file, panicking when either is
// unknown or the parent is inside the file (a cycle).
func (s *Server) checkParent(fileID, parentID string) *File {
	f, parent := s.mustFile(fileID), s.mustFile(parentID)
	for _, x := range s.subtree(f) {
		if x == parent {
			panic(fmt.Sprintf("googlefake: %q is inside %q", parentID, fileID))
		}
	}
	return parent
}

// rehome moves f's subtree to the drive of parent.
func (s *Server) rehome(f, parent *File) {
	for _, x := range s.subtree(f) {
		s.rehomed(x, parent.DriveID)
		switch {
		case x.DriveID != "":
			x.Owner = ""
		case x.Owner == "":
			x.Owner = parent.Owner
		}
	}
}

// snapshot is what a change entry remembers of a file before the change.
type snapshot struct {
	state   *computed // nil: the file did not exist
	driveID string
}

func (s *Server) snapshots(files []*File) []snapshot {
	out := make([]snapshot, len(files))
	for i, f := range files {
		out[i] = snapshot{state: s.state(f), driveID: f.DriveID}
	}
	return out
}

// mutate applies fn to a file and records the changes it makes: for the file
// itself, and, as far as r reaches, for each descendant whose state changed.
func (s *Server) mutate(id string, r reach, fn func(f *File)) {
	f := s.mustFile(id)
	affected := []*File{f}
	if r != itemOnly {
		affected = s.subtree(f)
	}
	before := s.snapshots(affected)
	oldParents := slices.Clone(f.Parents)
	fn(f)
	f.ID = id
	s.link(id, oldParents, f.Parents)
	for _, a := range affected {
		delete(s.cache, a.ID)
	}
	if s.drives[id] != nil {
		s.indexDrive(f)
	}
	alone := r == inheritance && s.itemAlone
	for i, a := range affected {
		if a == f || !alone && (before[i].driveID != a.DriveID || !before[i].state.equal(s.state(a))) {
			s.record(a, before[i])
		}
	}
}

// record appends the change log entries for a change to f: a "drive" change
// for a shared drive's root, nothing for a My Drive root, a "file" change
// otherwise, and a second one in the old drive when the file left it. It
// tells the push channels that changes were recorded.
func (s *Server) record(f *File, before snapshot) {
	defer s.kickChannels()
	if f.root {
		if f.DriveID != "" {
			s.log.add(changeEntry{id: f.ID, driveID: f.ID, drive: true, before: before.state})
		}
		return
	}
	s.log.add(changeEntry{id: f.ID, driveID: f.DriveID, before: before.state})
	if before.state != nil && before.driveID != f.DriveID {
		s.log.add(changeEntry{id: f.ID, driveID: before.driveID, before: before.state})
	}
}
