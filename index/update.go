package index

import (
	"bytes"
	"context"

	fm "github.com/foldermirror/foldermirror"
	bolt "go.etcd.io/bbolt"
)

// UpdateLibrary runs fn on the library's current tree in one write
// transaction: all of fn's changes and its new state are written together,
// or, when fn fails, none. The revision grows by one if fn wrote to the tree
// or changed a field of the state readers see.
func (db *DB) UpdateLibrary(_ context.Context, libraryID string, fn func(fm.LibraryTx) error) error {
	var rec *libraryRecord
	err := db.update("update library "+libraryID, func(tx *bolt.Tx) error {
		t, lib, old, err := currentLibrary(tx, libraryID)
		if err != nil {
			return err
		}
		ltx := &libraryTx{tree: t, rec: *old}
		if err := fn(ltx); err != nil {
			return err
		}
		rec = &ltx.rec
		if ltx.wrote || readerVisibleChange(&old.LibraryState, &rec.LibraryState) {
			rec.Revision = old.Revision + 1
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
	// wrote tells whether the tree was written to.
	wrote bool
}

func (l *libraryTx) State() fm.LibraryState { return l.rec.LibraryState }

// SetState keeps the ID, counts and revision, which the index maintains.
func (l *libraryTx) SetState(s fm.LibraryState) {
	s.ID, s.Folders, s.Permissions, s.Revision = l.rec.ID, l.rec.Folders, l.rec.Permissions, l.rec.Revision
	l.rec.LibraryState = s
}

func (l *libraryTx) Folder(id string) (*fm.Folder, error) { return l.folder(id) }

func (l *libraryTx) Children(id string) ([]string, error) {
	var ids []string
	prefix := childrenPrefix(id)
	c := l.children.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		ids = append(ids, string(v))
	}
	return ids, nil
}

func (l *libraryTx) Put(sf fm.SyncedFolder) error {
	old, err := l.unlink(sf.ID)
	if err != nil {
		return err
	}
	l.wrote = true
	if err := l.putFolder(&sf); err != nil {
		return err
	}
	if old == nil {
		l.rec.Folders++
	}
	l.rec.Permissions += len(sf.Permissions)
	return nil
}

func (l *libraryTx) Replace(f *fm.Folder) error {
	old, permset, err := l.folderRecord(f.ID)
	if err != nil {
		return err
	}
	l.wrote = true
	if old.ParentID != "" {
		if err := l.children.Delete(childKey(old.ParentID, old.Name, old.ID)); err != nil {
			return err
		}
	}
	if err := l.folders.Put([]byte(f.ID), encodeFolder(f, permset)); err != nil {
		return err
	}
	if f.ParentID == "" {
		return nil
	}
	return l.children.Put(childKey(f.ParentID, f.Name, f.ID), []byte(f.ID))
}

func (l *libraryTx) Delete(id string) error {
	old, err := l.unlink(id)
	if err != nil || old == nil {
		return err
	}
	l.rec.Folders--
	return nil
}

// unlink removes a folder's record, children entry and permissions, and
// takes them out of the counts; it returns the removed folder, nil if none.
func (l *libraryTx) unlink(id string) (*fm.Folder, error) {
	key := []byte(id)
	v := l.folders.Get(key)
	if v == nil {
		return nil, nil
	}
	old, permset, err := decodeFolder(id, v)
	if err != nil {
		return nil, err
	}
	l.wrote = true
	if old.ParentID != "" {
		if err := l.children.Delete(childKey(old.ParentID, old.Name, id)); err != nil {
			return nil, err
		}
	}
	n, err := l.dropPermset(permset)
	if err != nil {
		return nil, err
	}
	l.rec.Permissions -= n
	return old, l.folders.Delete(key)
}
