package syncer

import (
	"maps"
	"slices"
	"time"

	fm "github.com/foldermirror/foldermirror"
)

// apply writes the plan in tx: staged folders first (so that a folder moving
// away from a leaving folder is not taken with it), then the leaving
// subtrees; then the lists of the descendants of folders whose list
// changed are made again (carryDown), the own permissions of folders whose
// list Drive gave do not follow their parent's are made opaque
// (markOpaque), restrictedDownload is made right
// wherever it may have changed, and the new token is saved. It returns the
// folders written or removed; an *askDrive error when Drive must first tell
// the lists of some folders.
func (p *plan) apply(tx fm.LibraryTx, token string, now time.Time) (int, error) {
	p.made, p.ask, p.carried = map[string]bool{}, nil, 0
	if err := p.prefetch(tx); err != nil {
		return 0, err
	}
	applied := 0
	var changed []string
	for _, n := range p.order {
		listChanged, err := p.put(tx, n)
		if err != nil {
			return 0, err
		}
		if listChanged {
			changed = append(changed, n.ID)
		}
		applied++
	}
	for id := range p.removed {
		n, err := deleteSubtree(tx, id)
		if err != nil {
			return 0, err
		}
		applied += n
	}
	if err := p.carryDown(tx, changed); err != nil {
		return 0, err
	}
	if len(p.ask) > 0 {
		return 0, &askDrive{ids: p.ask}
	}
	if err := p.markOpaque(tx); err != nil {
		return 0, err
	}
	applied += p.carried
	for _, n := range p.order {
		if err := fixRestricted(tx, n.ID); err != nil {
			return 0, err
		}
	}
	st := tx.State()
	st.StartPageToken = token
	st.LastIncrementalSync = now
	if d := p.driveChanged; d != nil {
		st.SharingRequiresOrganizer = d.Restrictions != nil && d.Restrictions.SharingFoldersRequiresOrganizerPermission
	}
	tx.SetState(st)
	return applied, nil
}

// prefetch gives tx, when it can take them, the folders the plan read from
// the index (fm.LibrarySeeder); it reads ahead, when tx can, what apply
// reads: the folders staged, leaving, or met while planning, and the
// children of those staged or leaving.
func (p *plan) prefetch(tx fm.LibraryTx) error {
	if s, ok := tx.(fm.LibrarySeeder); ok {
		s.Seed(p.revision, p.indexed)
	}
	pf, ok := tx.(fm.LibraryPrefetcher)
	if !ok {
		return nil
	}
	ids := slices.Collect(maps.Keys(p.indexed))
	var parents []string
	for _, n := range p.order {
		ids = append(ids, n.ID, n.ParentID)
		parents = append(parents, n.ID)
	}
	for id := range p.removed {
		ids = append(ids, id)
		parents = append(parents, id)
	}
	return pf.Prefetch(ids, parents)
}

// put writes a staged folder (one that only inherits with its list made
// from its parent's), and tells whether its list changed, so that its
// descendants' are made again.
func (p *plan) put(tx fm.LibraryTx, n *node) (bool, error) {
	if n.inherits && n.ParentID != "" {
		if err := p.inherit(tx, n, 0); err != nil {
			return false, err
		}
	}
	old, err := tx.Folder(n.ID)
	switch {
	case fm.ErrorCode(err) == fm.ENOTFOUND:
		old = nil
		n.RestrictedDownload = n.OwnRestrictedDownload // fixed below
	case err != nil:
		return false, err
	default:
		n.RestrictedDownload = old.RestrictedDownload // fixed below (see fixRestricted)
	}
	if err := tx.Put(n.SyncedFolder); err != nil {
		return false, err
	}
	if old == nil {
		return true, nil
	}
	now, err := tx.Folder(n.ID) // with the key of its list
	if err != nil {
		return false, err
	}
	return old.PermissionSet != now.PermissionSet, nil
}

// deleteSubtree removes a folder and everything under it; it returns how
// many folders went.
func deleteSubtree(tx fm.LibraryTx, id string) (int, error) {
	if _, err := tx.Folder(id); fm.ErrorCode(err) == fm.ENOTFOUND {
		return 0, nil
	} else if err != nil {
		return 0, err
	}
	n := 0
	for stack := []string{id}; len(stack) > 0; n++ {
		cur := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		kids, err := tx.Children(cur)
		if err != nil {
			return 0, err
		}
		stack = append(stack, kids...)
		if err := tx.Delete(cur); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// fixRestricted sets a staged folder's restrictedDownload from its own
// flag and its parent's restrictedDownload, and carries a change down its
// subtree. Until it is fixed, a folder the index had keeps its
// restrictedDownload, which its children followed: a parent fixed after
// its child carries down what changed, and a parent whose restriction did
// not change has children that are right. So every folder ends with its
// own flag or its parent's restriction, as from the root down.
func fixRestricted(tx fm.LibraryTx, id string) error {
	f, err := tx.Folder(id)
	if err != nil {
		return err
	}
	restricted := f.OwnRestrictedDownload
	if !restricted && f.ParentID != "" {
		parent, err := tx.Folder(f.ParentID)
		if err != nil && fm.ErrorCode(err) != fm.ENOTFOUND {
			return err
		}
		restricted = parent != nil && parent.RestrictedDownload
	}
	if f.RestrictedDownload == restricted {
		return nil
	}
	f.RestrictedDownload = restricted
	if err := tx.Replace(f); err != nil {
		return err
	}
	return propagateRestriction(tx, id, restricted)
}

// propagateRestriction updates the children of a folder whose effective
// restriction is restricted, and theirs, down to the ones already right.
func propagateRestriction(tx fm.LibraryTx, id string, restricted bool) error {
	kids, err := tx.Children(id)
	if err != nil {
		return err
	}
	for _, k := range kids {
		c, err := tx.Folder(k)
		if err != nil {
			return err
		}
		want := c.OwnRestrictedDownload || restricted
		if c.RestrictedDownload == want {
			continue
		}
		c.RestrictedDownload = want
		if err := tx.Replace(c); err != nil {
			return err
		}
		if err := propagateRestriction(tx, k, want); err != nil {
			return err
		}
	}
	return nil
}
