package bolt

import (
	"context"

	fm "github.com/foldermirror/foldermirror"
	bbolt "go.etcd.io/bbolt"
)

var _ fm.IndexReader = (*DB)(nil)

// Library returns the state of a synced library; ENOTFOUND if never synced.
func (db *DB) Library(_ context.Context, libraryID string) (*fm.LibraryState, error) {
	rec := db.library(libraryID)
	if rec == nil {
		return nil, fm.Errorf(fm.ENOTFOUND, "Library %s has not been synced.", libraryID)
	}
	state := rec.LibraryState
	return &state, nil
}

// Folder returns one folder of a library, ENOTFOUND if the library has none such.
func (db *DB) Folder(_ context.Context, libraryID, folderID string) (*fm.Folder, error) {
	var f *fm.Folder
	err := db.bolt.View(func(tx *bbolt.Tx) error {
		t, err := currentTree(tx, libraryID)
		if err != nil {
			return err
		}
		f, err = t.folder(folderID)
		return err
	})
	return f, err
}

// Permissions returns a folder's permissions in Drive's order.
func (db *DB) Permissions(_ context.Context, libraryID, folderID string) ([]fm.Permission, error) {
	var perms []fm.Permission
	err := db.bolt.View(func(tx *bbolt.Tx) error {
		t, err := currentTree(tx, libraryID)
		if err != nil {
			return err
		}
		f, err := t.folder(folderID)
		if err != nil {
			return err
		}
		perms, err = t.permissions(f.PermissionSet)
		return err
	})
	return perms, err
}

// PermissionSet returns the permissions of a set of the library's tree.
func (db *DB) PermissionSet(_ context.Context, libraryID string, key fm.PermissionSetKey) ([]fm.Permission, error) {
	var perms []fm.Permission
	err := db.bolt.View(func(tx *bbolt.Tx) error {
		t, err := currentTree(tx, libraryID)
		if err != nil {
			return err
		}
		perms, err = t.permissions(key)
		return err
	})
	return perms, err
}

func folderNotFound(id string) error {
	return fm.Errorf(fm.ENOTFOUND, "Folder %s not found.", id)
}

// folder decodes a folder of the tree.
func (t *tree) folder(id string) (*fm.Folder, error) {
	v := t.folders.Get([]byte(id))
	if v == nil {
		return nil, folderNotFound(id)
	}
	f := &fm.Folder{}
	return f, decodeFolder(f, id, v)
}

// ReadLibrary hands the library's sets, then its folders, to r, all read in
// one transaction. The pages it read are released soon after (releaseSoon)
// for a small library, and all along (releasing) for a large one, whose
// pages would otherwise add up to the size of its tree.
func (db *DB) ReadLibrary(_ context.Context, libraryID string, r fm.LibraryReader) (*fm.LibraryState, error) {
	defer db.releaseAfter(libraryID)()
	var state fm.LibraryState
	err := db.bolt.View(func(tx *bbolt.Tx) error {
		t, _, rec, err := currentLibrary(tx, libraryID)
		if err != nil {
			return err
		}
		state = rec.LibraryState
		err = t.permsets.ForEach(func(k, v []byte) error {
			_, list := splitPermset(v)
			perms, err := fm.DecodePermissions(list)
			if err != nil {
				return err
			}
			return r.PermissionSet(fm.PermissionSet{Key: fm.PermissionSetKey(k), Permissions: perms})
		})
		if err != nil {
			return err
		}
		var f fm.Folder // one for all, its strings in the transaction's memory
		return t.folders.ForEach(func(k, v []byte) error {
			if err := borrowFolder(&f, k, v); err != nil {
				return err
			}
			return r.Folder(&f)
		})
	})
	if err != nil {
		return nil, err
	}
	return &state, nil
}

// Changes returns the folders the library's revisions after since wrote or
// removed, as they are now, from its log.
func (db *DB) Changes(_ context.Context, libraryID string, since uint64) (*fm.ChangeSet, error) {
	var cs *fm.ChangeSet
	err := db.bolt.View(func(tx *bbolt.Tx) error {
		t, lib, rec, err := currentLibrary(tx, libraryID)
		if err != nil {
			return err
		}
		ids, ok := []string(nil), true
		switch rec.Catchup(since, rec.Revision) {
		case fm.CatchupLog:
			ids, ok = loggedSince(lib, since)
		case fm.CatchupReread:
			ok = false
		}
		if !ok {
			cs = &fm.ChangeSet{Reread: true}
		} else if cs, err = changeSet(t, ids); err != nil {
			return err
		}
		cs.State = rec.LibraryState
		return nil
	})
	return cs, err
}

// Snapshot returns every folder of a library with its permissions, sorted by
// ID, read in one transaction. It is meant for checks and tests: a large
// library holds a read transaction open while it is read.
func (db *DB) Snapshot(_ context.Context, libraryID string) ([]fm.SyncedFolder, error) {
	defer db.release()
	var out []fm.SyncedFolder
	err := db.bolt.View(func(tx *bbolt.Tx) error {
		t, err := currentTree(tx, libraryID)
		if err != nil {
			return err
		}
		return t.folders.ForEach(func(k, v []byte) error {
			sf := fm.SyncedFolder{}
			if err := decodeFolder(&sf.Folder, string(k), v); err != nil {
				return err
			}
			var err error
			if sf.Permissions, err = t.permissions(sf.PermissionSet); err != nil {
				return err
			}
			if sf.OwnPermissions, err = t.permissions(sf.OwnSet); err != nil {
				return err
			}
			out = append(out, sf)
			return nil
		})
	})
	return out, err
}

// releaseAfter returns what releases the pages a read of the library maps
// once it ends: releasing all along for a library of releaseEvery folders
// or more, else releaseSoon.
func (db *DB) releaseAfter(libraryID string) func() {
	if rec := db.library(libraryID); rec != nil && rec.Folders >= releaseEvery {
		return db.releasing()
	}
	return db.releaseSoon
}
