package bolt

import (
	"bytes"
	"context"
	"slices"

	fm "github.com/foldermirror/foldermirror"
	bbolt "go.etcd.io/bbolt"
)

var (
	_ fm.FoldersReader = (*DB)(nil)
	_ fm.ParentsReader = (*DB)(nil)
)

// Folders returns the folders among ids that a library has, each once, in
// order of ID, read in one transaction: an incremental sync reads the
// folders its changes reach so, rather than one transaction each.
func (db *DB) Folders(_ context.Context, libraryID string, ids []string) ([]fm.Folder, error) {
	if db.library(libraryID) == nil {
		return nil, nil
	}
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	out := make([]fm.Folder, 0, len(ids))
	err := db.viewSyncedTree(libraryID, func(t *tree) error {
		c := t.folders.Cursor()
		for _, id := range ids {
			v := getFolder(c, id)
			if v == nil {
				continue
			}
			out = append(out, fm.Folder{})
			if err := decodeFolder(&out[len(out)-1], id, v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Parents returns those of ids that have children in a library, each once,
// read in one transaction.
func (db *DB) Parents(_ context.Context, libraryID string, ids []string) ([]string, error) {
	if db.library(libraryID) == nil {
		return nil, nil
	}
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	ids = slices.DeleteFunc(ids, func(id string) bool { return id == "" }) // the root's parent
	var out []string
	err := db.viewSyncedTree(libraryID, func(t *tree) error {
		c := t.children.Cursor()
		var prefix []byte
		for _, id := range ids {
			prefix = appendChildKey(prefix[:0], id, "") // the prefix of id's children keys
			if k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) {
				out = append(out, id)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// viewSyncedTree calls fn with the tree readers see for a library, in a
// read transaction; not at all if the library has not been synced.
func (db *DB) viewSyncedTree(libraryID string, fn func(t *tree) error) error {
	return db.bolt.View(func(tx *bbolt.Tx) error {
		t, err := currentTree(tx, libraryID)
		if fm.ErrorCode(err) == fm.ENOTFOUND {
			return nil
		} else if err != nil {
			return err
		}
		return fn(t)
	})
}
