package bolt

import (
	"context"
	"slices"

	fm "github.com/foldermirror/foldermirror"
	bbolt "go.etcd.io/bbolt"
)

var _ fm.FoldersReader = (*DB)(nil)

// Folders returns the folders among ids that a library has, each once, in
// order of ID, read in one transaction: an incremental sync reads the
// folders its changes reach so, rather than one transaction each.
func (db *DB) Folders(_ context.Context, libraryID string, ids []string) ([]fm.Folder, error) {
	if db.library(libraryID) == nil {
		return nil, nil
	}
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	out := make([]fm.Folder, 0, len(ids))
	err := db.bolt.View(func(tx *bbolt.Tx) error {
		t, err := currentTree(tx, libraryID)
		if fm.ErrorCode(err) == fm.ENOTFOUND {
			return nil
		} else if err != nil {
			return err
		}
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
