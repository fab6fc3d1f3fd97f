package bolt

import (
	"bytes"
	"context"
	"slices"

	fm "github.com/foldermirror/foldermirror"
	bbolt "go.etcd.io/bbolt"
)

// UpdateLibrary runs fn on the library's current tree in one write
// transaction: all of fn's changes, its new state and the log of the
// folders it touched are written together, or, when fn fails, none. The
// revision grows by one if fn wrote to the tree or changed a field of the
// state readers see.
func (db *DB) UpdateLibrary(_ context.Context, libraryID string, _ fm.Fence, fn func(fm.LibraryTx) error) error {
	var rec *libraryRecord
	err := db.update("update library "+libraryID, func(tx *bbolt.Tx) error {
		t, lib, old, err := currentLibrary(tx, libraryID)
		if err != nil {
			return err
		}
		ltx := &libraryTx{tree: t, rec: *old, touched: map[string]bool{}}
		if err := fn(ltx); err != nil {
			return err
		}
		rec = &ltx.rec
		rec.Revision = old.NextRevision(rec.LibraryState, len(ltx.touched) > 0)
		if rec.Revision == old.Revision {
			return lib.Put(keyState, encodeLibrary(rec))
		}
		ids := make([]string, 0, len(ltx.touched))
		for id := range ltx.touched {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		if err := appendLog(lib, rec, rec.Revision, ids); err != nil {
			return err
		}
		return lib.Put(keyState, encodeLibrary(rec))
	})
	if err != nil {
		return err
	}
	db.setLibrary(rec)
	return nil
}

// libraryTx implements fm.LibraryTx on a tree within a write transaction.
type libraryTx struct {
	*tree
	rec libraryRecord
	// touched are the folders written or removed.
	touched map[string]bool
}

func (l *libraryTx) State() fm.LibraryState { return l.rec.LibraryState }

// SetState keeps the ID, counts and revision, which the index maintains.
func (l *libraryTx) SetState(s fm.LibraryState) { l.rec.LibraryState = l.rec.Adopt(s) }

func (l *libraryTx) Folder(id string) (*fm.Folder, error) { return l.folder(id) }

func (l *libraryTx) Permissions(id string) (perms, own []fm.Permission, err error) {
	f, err := l.folder(id)
	if err != nil {
		return nil, nil, err
	}
	if perms, err = l.permissions(f.PermissionSet); err != nil {
		return nil, nil, err
	}
	own, err = l.permissions(f.OwnSet)
	return perms, own, err
}

func (l *libraryTx) Children(id string) ([]string, error) {
	var ids []string
	prefix := childrenPrefix(id)
	c := l.children.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		ids = append(ids, string(k[len(prefix):]))
	}
	return ids, nil
}

func (l *libraryTx) Put(sf fm.SyncedFolder) error {
	if _, err := l.unlink(sf.ID); err != nil {
		return err
	}
	var err error
	if sf.PermissionSet, err = l.putList(sf.Permissions); err != nil {
		return err
	}
	if sf.OwnSet, err = l.putList(sf.OwnPermissions); err != nil {
		return err
	}
	if err := l.link(&sf.Folder); err != nil {
		return err
	}
	l.rec.Folders++
	l.rec.Permissions += len(sf.Permissions)
	return nil
}

func (l *libraryTx) Replace(f *fm.Folder) error {
	old, err := l.folder(f.ID)
	if err != nil {
		return err
	}
	if old.ParentID != "" {
		if err := l.children.Delete(childKey(old.ParentID, old.ID)); err != nil {
			return err
		}
	}
	kept := *f
	kept.PermissionSet, kept.OwnSet = old.PermissionSet, old.OwnSet
	return l.link(&kept)
}

func (l *libraryTx) Delete(id string) error {
	_, err := l.unlink(id)
	return err
}

// link writes a folder's record and its parent's children entry.
func (l *libraryTx) link(f *fm.Folder) error {
	l.touched[f.ID] = true
	if err := l.folders.Put([]byte(f.ID), encodeFolder(f)); err != nil {
		return err
	}
	if f.ParentID == "" {
		return nil
	}
	return l.children.Put(childKey(f.ParentID, f.ID), nil)
}

// unlink removes a folder's record, children entry and references to its
// permission sets, and takes them out of the counts; it returns the
// removed folder, nil if none.
func (l *libraryTx) unlink(id string) (*fm.Folder, error) {
	v := l.folders.Get([]byte(id))
	if v == nil {
		return nil, nil
	}
	old := &fm.Folder{}
	if err := decodeFolder(old, id, v); err != nil {
		return nil, err
	}
	l.touched[id] = true
	if old.ParentID != "" {
		if err := l.children.Delete(childKey(old.ParentID, id)); err != nil {
			return nil, err
		}
	}
	n, err := l.dropSet(old.PermissionSet)
	if err != nil {
		return nil, err
	}
	if _, err := l.dropSet(old.OwnSet); err != nil {
		return nil, err
	}
	l.rec.Permissions -= n
	l.rec.Folders--
	return old, l.folders.Delete([]byte(id))
}
