package syncer

import (
	"context"
	"fmt"
	"slices"
	"strings"

	fm "github.com/foldermirror/foldermirror"
	"golang.org/x/sync/errgroup"
	drive "google.golang.org/api/drive/v3"
	"google.golang.org/api/googleapi"
)

// Inherited permissions in an incremental sync. Drive need not send a
// change for each descendant of a folder whose permissions change (a share,
// an unshare, a shared drive's members, a move, a deleted account). Within
// the sync's transaction, the list of each descendant is made again from
// its own permissions and its parent's new list (fm.InheritPermissions),
// from the index alone, level by level down to where a list does not
// change. A folder Drive did send keeps Drive's list. Where Drive's answers
// do not tell a descendant's list (see fm.InheritPermissions), the
// transaction is rolled back, that folder is read from Drive as if Drive had
// sent it, and the transaction runs again.

// askDrive: the lists of these folders are for Drive to tell.
type askDrive struct{ ids []string }

func (a *askDrive) Error() string {
	return fmt.Sprintf("the lists of %d folders are for Drive to tell: %s", len(a.ids), strings.Join(a.ids, ", "))
}

// inherit makes the list of a staged folder that only inherits from its
// parent's: staged, or as tx holds it.
func (p *plan) inherit(tx fm.LibraryTx, n *node, depth int) error {
	if p.made[n.ID] {
		return nil
	}
	if depth > maxDepth {
		return fmt.Errorf("folder %s: a cycle of parents", n.ID)
	}
	var parentList []fm.Permission
	if parent, ok := p.staged[n.ParentID]; ok {
		if parent.inherits && parent.ParentID != "" {
			if err := p.inherit(tx, parent, depth+1); err != nil {
				return err
			}
		}
		parentList = parent.Permissions
	} else {
		var err error
		if parentList, _, err = tx.Permissions(n.ParentID); err != nil {
			return fmt.Errorf("permissions of folder %s: %w", n.ParentID, err)
		}
	}
	n.Permissions, _, _ = fm.InheritPermissions(nil, parentList)
	n.OwnPermissions = nil
	p.made[n.ID] = true
	return nil
}

// carryDown makes again the lists of the descendants of the folders whose
// list changed, from their own permissions and their parent's list, down to
// where a list does not change. Folders Drive sent keep Drive's list (those
// that only inherit are made again too). Folders whose list Drive must tell
// go to p.ask; p.carried counts the folders written that Drive did not send.
func (p *plan) carryDown(tx fm.LibraryTx, changed []string) error {
	c := &carrier{tx: tx, lists: map[fm.PermissionSetKey][]fm.Permission{}, made: map[inheritance]inherited{},
		asked: map[string]bool{}, carried: map[string]bool{}}
	for queue := changed; len(queue) > 0; {
		id := queue[0]
		queue = queue[1:]
		kids, err := tx.Children(id)
		if err != nil {
			return err
		}
		var parent *fm.Folder
		if len(kids) > 0 {
			if parent, err = tx.Folder(id); err != nil {
				return err
			}
		}
		for _, k := range kids {
			if n, ok := p.staged[k]; ok && !n.inherits {
				continue // Drive's list
			}
			listChanged, err := p.carryTo(c, parent, k)
			if err != nil {
				return err
			}
			if listChanged {
				queue = append(queue, k)
			}
		}
	}
	return nil
}

// carryTo makes again the list of a child of parent, and tells whether it
// changed.
func (p *plan) carryTo(c *carrier, parent *fm.Folder, id string) (bool, error) {
	child, err := c.tx.Folder(id)
	if err != nil {
		return false, err
	}
	made, err := c.inherited(child, parent)
	switch {
	case err != nil:
		return false, err
	case !made.known:
		if !c.asked[id] {
			c.asked[id] = true
			p.ask = append(p.ask, id)
		}
		return false, nil
	case made.list == child.PermissionSet && made.own == child.OwnSet:
		return false, nil
	}
	if err := c.tx.Put(fm.SyncedFolder{Folder: *child, Permissions: made.perms, OwnPermissions: made.ownPerms}); err != nil {
		return false, err
	}
	if _, staged := p.staged[id]; !staged && !c.carried[id] {
		c.carried[id] = true
		p.carried++
	}
	return made.list != child.PermissionSet, nil
}

// markOpaque makes opaque the own permissions of the staged folders whose
// list, as Drive gave it, is not the one made from their own permissions
// and their parent's list, now final (fm.ListFollows), as a full sync does.
// Folders mostly repeat their lists, which the sync keeps one copy of
// (permissionLists) as the index's transaction does of a parent's: each
// case is told once for each copy of the three lists.
func (p *plan) markOpaque(tx fm.LibraryTx) error {
	parents := map[string][]fm.Permission{}
	follows := map[listsCase]bool{}
	for _, n := range p.order {
		if n.ParentID == "" || n.inherits || slices.ContainsFunc(n.OwnPermissions, func(p fm.Permission) bool { return p.Opaque }) {
			continue
		}
		parent, ok := parents[n.ParentID]
		if !ok {
			var err error
			if parent, _, err = tx.Permissions(n.ParentID); err != nil {
				return fmt.Errorf("permissions of folder %s: %w", n.ParentID, err)
			}
			parents[n.ParentID] = parent
		}
		key := listsCase{list: sameList(n.Permissions), own: sameList(n.OwnPermissions), parent: sameList(parent)}
		follow, told := follows[key]
		if !told {
			follow = fm.ListFollows(n.Permissions, n.OwnPermissions, parent)
			follows[key] = follow
		}
		if follow {
			continue
		}
		n.OwnPermissions = fm.OpaquePermissions(n.Permissions)
		if err := tx.Put(n.SyncedFolder); err != nil {
			return err
		}
	}
	return nil
}

// listsCase is a folder's list, own permissions and parent's list, each
// told by the copy it is (listCopy): equal lists in other copies are
// other cases, told again.
type listsCase struct{ list, own, parent listCopy }

// listCopy is a list's first element and length: the same copy of a list,
// which a map key holding it keeps from being freed, so that no other list
// can take its place.
type listCopy struct {
	first *fm.Permission
	len   int
}

func sameList(perms []fm.Permission) listCopy {
	c := listCopy{len: len(perms)}
	if len(perms) > 0 {
		c.first = &perms[0]
	}
	return c
}

// carrier makes lists from the index, each distinct one once.
type carrier struct {
	tx    fm.LibraryTx
	lists map[fm.PermissionSetKey][]fm.Permission // decoded lists by key
	made  map[inheritance]inherited
	// asked are the folders whose list Drive must tell; carried, those
	// written that Drive did not send.
	asked, carried map[string]bool
}

// inheritance is what a folder's list is made of: its own permissions and
// its parent's list.
type inheritance struct{ own, parent fm.PermissionSetKey }

// inherited is a list made, with the folder's own permissions as listed.
type inherited struct {
	known           bool
	perms, ownPerms []fm.Permission
	list, own       fm.PermissionSetKey
}

// inherited returns the list of child under parent as tx holds it.
func (c *carrier) inherited(child, parent *fm.Folder) (inherited, error) {
	key := inheritance{own: child.OwnSet, parent: parent.PermissionSet}
	if made, ok := c.made[key]; ok {
		return made, nil
	}
	parentList, err := c.list(parent)
	if err != nil {
		return inherited{}, err
	}
	_, own, err := c.tx.Permissions(child.ID)
	if err != nil {
		return inherited{}, fmt.Errorf("permissions of folder %s: %w", child.ID, err)
	}
	var made inherited
	if made.perms, made.ownPerms, made.known = fm.InheritPermissions(own, parentList); made.known {
		made.list, made.own = fm.NewPermissionSet(made.perms).Key, fm.NewPermissionSet(made.ownPerms).Key
	}
	c.made[key] = made
	return made, nil
}

// list returns a folder's list.
func (c *carrier) list(f *fm.Folder) ([]fm.Permission, error) {
	if l, ok := c.lists[f.PermissionSet]; ok {
		return l, nil
	}
	l, _, err := c.tx.Permissions(f.ID)
	if err != nil {
		return nil, fmt.Errorf("permissions of folder %s: %w", f.ID, err)
	}
	c.lists[f.PermissionSet] = l
	return l, nil
}

// reread reads folders from Drive as if Drive had sent a change for each:
// placed in the library, or removed from it, with the permissions Drive
// lists for them. storage.concurrency calls at a time.
func (p *plan) reread(ctx context.Context, ids []string) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(1, p.concurrency))
	files := make([]*drive.File, len(ids))
	for i, id := range ids {
		g.Go(func() error {
			f, err := p.svc.Files.Get(id).Fields(googleapi.Field(fileFields)).SupportsAllDrives(true).Context(gctx).Do()
			if isNotFound(err) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("read folder %s again: %w", id, err)
			}
			files[i] = f
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	var read []*node
	for i, id := range ids {
		f := files[i]
		if f == nil || f.Trashed || f.MimeType != folderMimeType {
			p.remove(id)
			continue
		}
		placed, err := p.place(ctx, f)
		if err != nil {
			return err
		}
		if !placed {
			p.remove(id)
			continue
		}
		read = append(read, p.staged[id])
	}
	return p.readPermissions(ctx, read, p.root)
}
