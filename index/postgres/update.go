package postgres

import (
	"context"
	"errors"
	"slices"

	fm "github.com/foldermirror/foldermirror"
	"github.com/jackc/pgx/v5"
)

// UpdateLibrary runs fn on the library's current tree in one transaction:
// all of fn's changes, its new state and the log of the folders it touched
// are written together, or, when fn fails, none. The library's row is
// locked meanwhile, and the update refused while another process holds the
// library's lease. The revision grows by one if fn wrote to the tree or
// changed a field of the state readers see.
func (db *DB) UpdateLibrary(ctx context.Context, libraryID string, fn func(fm.LibraryTx) error) error {
	if _, err := db.library(libraryID); err != nil {
		return err
	}
	var rec *record
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		old, err := lockLibrary(ctx, tx, libraryID)
		if err != nil {
			return err
		}
		if old == nil {
			return notSynced(libraryID)
		}
		if err := db.fence(ctx, tx, libraryID); err != nil {
			return err
		}
		ltx := &libraryTx{ctx: ctx, tx: tx, rec: *old, touched: map[string]bool{}}
		if err := fn(ltx); err != nil {
			return err
		}
		rec = &ltx.rec
		if len(ltx.touched) > 0 || readerVisibleChange(&old.LibraryState, &rec.LibraryState) {
			rec.Revision = old.Revision + 1
			ids := make([]string, 0, len(ltx.touched))
			for id := range ltx.touched {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			if err := appendLog(ctx, tx, rec, ids); err != nil {
				return err
			}
		}
		return saveRecord(ctx, tx, rec)
	})
	if err != nil {
		return db.wrap("update library "+libraryID, err)
	}
	db.setLibrary(rec)
	return nil
}

// libraryTx implements fm.LibraryTx within a transaction.
type libraryTx struct {
	ctx context.Context
	tx  pgx.Tx
	rec record
	// touched are the folders written or removed.
	touched map[string]bool
}

func (l *libraryTx) State() fm.LibraryState { return l.rec.LibraryState }

// SetState keeps the ID, counts and revision, which the index maintains.
func (l *libraryTx) SetState(s fm.LibraryState) {
	s.ID, s.Folders, s.Permissions, s.Revision = l.rec.ID, l.rec.Folders, l.rec.Permissions, l.rec.Revision
	l.rec.LibraryState = s
}

func (l *libraryTx) Folder(id string) (*fm.Folder, error) { return readFolder(l.ctx, l.tx, &l.rec, id) }

func (l *libraryTx) Permissions(id string) (perms, own []fm.Permission, err error) {
	f, err := l.Folder(id)
	if err != nil {
		return nil, nil, err
	}
	if perms, err = readSet(l.ctx, l.tx, &l.rec, f.PermissionSet); err != nil {
		return nil, nil, err
	}
	own, err = readSet(l.ctx, l.tx, &l.rec, f.OwnSet)
	return perms, own, err
}

func (l *libraryTx) Children(id string) ([]string, error) {
	rows, err := l.tx.Query(l.ctx, "SELECT id FROM folders WHERE library = $1 AND generation = $2 AND parent_id = $3",
		l.rec.ID, l.rec.Generation, id)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

func (l *libraryTx) Put(sf fm.SyncedFolder) error {
	if err := l.unlink(sf.ID); err != nil {
		return err
	}
	var err error
	if sf.PermissionSet, err = l.putList(sf.Permissions); err != nil {
		return err
	}
	if sf.OwnSet, err = l.putList(sf.OwnPermissions); err != nil {
		return err
	}
	_, err = l.tx.Exec(l.ctx, `INSERT INTO folders (library, generation, id, parent_id, name, resource_key, definition_id, flags, permission_set, own_set)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, l.rec.ID, l.rec.Generation, sf.ID, sf.ParentID, []byte(sf.Name),
		[]byte(sf.ResourceKey), []byte(sf.DefinitionID), folderFlags(&sf.Folder), sf.PermissionSet[:], sf.OwnSet[:])
	if err != nil {
		return err
	}
	l.touched[sf.ID] = true
	l.rec.Folders++
	l.rec.Permissions += len(sf.Permissions)
	return nil
}

func (l *libraryTx) Replace(f *fm.Folder) error {
	tag, err := l.tx.Exec(l.ctx, `UPDATE folders SET parent_id = $4, name = $5, resource_key = $6, definition_id = $7, flags = $8
		WHERE library = $1 AND generation = $2 AND id = $3`, l.rec.ID, l.rec.Generation, f.ID, f.ParentID, []byte(f.Name),
		[]byte(f.ResourceKey), []byte(f.DefinitionID), folderFlags(f))
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return folderNotFound(f.ID)
	}
	l.touched[f.ID] = true
	return nil
}

func (l *libraryTx) Delete(id string) error { return l.unlink(id) }

// unlink removes a folder's row and its references to its permission sets,
// and takes them out of the counts; it does nothing for a folder the tree
// does not have.
func (l *libraryTx) unlink(id string) error {
	var set, own []byte
	err := l.tx.QueryRow(l.ctx, `DELETE FROM folders WHERE library = $1 AND generation = $2 AND id = $3
		RETURNING permission_set, own_set`, l.rec.ID, l.rec.Generation, id).Scan(&set, &own)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	n, err := l.dropSet(set)
	if err != nil {
		return err
	}
	if _, err := l.dropSet(own); err != nil {
		return err
	}
	l.touched[id] = true
	l.rec.Permissions -= n
	l.rec.Folders--
	return nil
}

// putList stores a list, or adds a reference to it, and returns its key.
func (l *libraryTx) putList(perms []fm.Permission) (fm.PermissionSetKey, error) {
	list := fm.AppendPermissions(nil, perms)
	key := fm.KeyOf(list)
	_, err := l.tx.Exec(l.ctx, `INSERT INTO permission_sets (library, generation, key, size, list, refs) VALUES ($1, $2, $3, $4, $5, 1)
		ON CONFLICT (library, generation, key) DO UPDATE SET refs = permission_sets.refs + 1`,
		l.rec.ID, l.rec.Generation, key[:], len(perms), list)
	return key, err
}

// dropSet removes a reference to a set, and the set with its last one; it
// returns the number of permissions in the set.
func (l *libraryTx) dropSet(key []byte) (int, error) {
	var refs int64
	var size int
	err := l.tx.QueryRow(l.ctx, `UPDATE permission_sets SET refs = refs - 1 WHERE library = $1 AND generation = $2 AND key = $3
		RETURNING refs, size`, l.rec.ID, l.rec.Generation, key).Scan(&refs, &size)
	if err != nil {
		return 0, err
	}
	if refs <= 0 {
		_, err = l.tx.Exec(l.ctx, "DELETE FROM permission_sets WHERE library = $1 AND generation = $2 AND key = $3",
			l.rec.ID, l.rec.Generation, key)
	}
	return size, err
}
