package postgres

import (
	"context"
	"errors"
	"slices"

	fm "github.com/foldermirror/foldermirror"
	"github.com/jackc/pgx/v5"
)

// UpdateLibrary runs fn on the library's current tree in one transaction,
// fenced by fence: all of fn's changes, its new state and the log of the
// folders it touched are written together, or, when fn fails, none. The
// library's row is locked meanwhile. The revision grows by one if fn wrote
// to the tree or changed a field of the state readers see.
func (db *DB) UpdateLibrary(ctx context.Context, libraryID string, fence fm.Fence, fn func(fm.LibraryTx) error) error {
	if _, err := db.library(libraryID); err != nil {
		return err
	}
	var rec *record
	err := db.fenced(ctx, "update library "+libraryID, libraryID, fence, func(tx pgx.Tx) error {
		old, err := lockLibrary(ctx, tx, libraryID)
		if err != nil {
			return err
		}
		if old == nil {
			return notSynced(libraryID)
		}
		ltx := &libraryTx{ctx: ctx, tx: tx, rec: *old, touched: map[string]bool{}}
		if err := fn(ltx); err != nil {
			return err
		}
		if err := ltx.dropUnreferenced(); err != nil {
			return err
		}
		rec = &ltx.rec
		rec.Revision = old.NextRevision(rec.LibraryState, len(ltx.touched) > 0)
		if rec.Revision != old.Revision {
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
		return err
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
	// unreferenced are the keys of sets that lost their last reference.
	unreferenced [][]byte
}

func (l *libraryTx) State() fm.LibraryState { return l.rec.LibraryState }

// SetState keeps the ID, counts and revision, which the index maintains.
func (l *libraryTx) SetState(s fm.LibraryState) { l.rec.LibraryState = l.rec.Adopt(s) }

func (l *libraryTx) Folder(id string) (*fm.Folder, error) { return readFolder(l.ctx, l.tx, &l.rec, id) }

// Permissions reads the folder's two lists in one round trip.
func (l *libraryTx) Permissions(id string) (perms, own []fm.Permission, err error) {
	var list, ownList []byte
	err = l.tx.QueryRow(l.ctx, `SELECT s.list, o.list FROM folders f
		JOIN permission_sets s ON s.library = f.library AND s.generation = f.generation AND s.key = f.permission_set
		JOIN permission_sets o ON o.library = f.library AND o.generation = f.generation AND o.key = f.own_set
		WHERE f.library = $1 AND f.generation = $2 AND f.id = $3`, l.rec.ID, l.rec.Generation, id).Scan(&list, &ownList)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, folderNotFound(id)
	}
	if err != nil {
		return nil, nil, err
	}
	if perms, err = fm.DecodePermissions(list); err != nil {
		return nil, nil, err
	}
	own, err = fm.DecodePermissions(ownList)
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

// Put sends its statements in one batch, one round trip: the old row
// unlinked, the sets stored or referenced once more, the new row.
func (l *libraryTx) Put(sf fm.SyncedFolder) error {
	b := &pgx.Batch{}
	l.queueUnlink(b, sf.ID)
	list, own := fm.AppendPermissions(nil, sf.Permissions), fm.AppendPermissions(nil, sf.OwnPermissions)
	sf.PermissionSet, sf.OwnSet = fm.KeyOf(list), fm.KeyOf(own)
	if sf.PermissionSet == sf.OwnSet {
		b.Queue(putSetSQL, l.rec.ID, l.rec.Generation, sf.PermissionSet[:], len(sf.Permissions), list, 2)
	} else {
		b.Queue(putSetsSQL, l.rec.ID, l.rec.Generation, sf.PermissionSet[:], len(sf.Permissions), list, 1,
			sf.OwnSet[:], len(sf.OwnPermissions), own)
	}
	b.Queue(`INSERT INTO folders (library, generation, id, parent_id, name, resource_key, definition_id, flags, permission_set, own_set)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, l.rec.ID, l.rec.Generation, sf.ID, sf.ParentID, []byte(sf.Name),
		[]byte(sf.ResourceKey), []byte(sf.DefinitionID), folderFlags(&sf.Folder), sf.PermissionSet[:], sf.OwnSet[:])
	if err := l.tx.SendBatch(l.ctx, b).Close(); err != nil {
		return err
	}
	l.touched[sf.ID] = true
	l.rec.Folders++
	l.rec.Permissions += len(sf.Permissions)
	return nil
}

// putSetSQL stores a permission set ($3: key, $4: size, $5: list) with $6
// references, or adds them to the set stored already; putSetsSQL does so
// for that set and another ($7, $8, $9) with one reference.
const (
	putSetSQL  = insertSets + `($1, $2, $3, $4, $5, $6)` + addRefs
	putSetsSQL = insertSets + `($1, $2, $3, $4, $5, $6), ($1, $2, $7, $8, $9, 1)` + addRefs
	insertSets = `INSERT INTO permission_sets (library, generation, key, size, list, refs) VALUES `
	addRefs    = ` ON CONFLICT (library, generation, key) DO UPDATE SET refs = permission_sets.refs + EXCLUDED.refs`
)

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

func (l *libraryTx) Delete(id string) error {
	return l.unlinked(id)(l.tx.QueryRow(l.ctx, unlinkSQL, l.rec.ID, l.rec.Generation, id))
}

// unlinkSQL removes a folder's row ($3) and a reference to each of its
// permission sets, in one statement, and returns how many rows it removed,
// the size of the folder's list, and the keys of the sets it left without
// references (dropUnreferenced removes them once the update is over, if
// nothing referred to them again meanwhile).
const unlinkSQL = `WITH gone AS (
		DELETE FROM folders WHERE library = $1 AND generation = $2 AND id = $3 RETURNING permission_set, own_set
	), dropped AS (
		UPDATE permission_sets p SET refs = p.refs - (p.key = g.permission_set)::int - (p.key = g.own_set)::int
		FROM gone g WHERE p.library = $1 AND p.generation = $2 AND p.key IN (g.permission_set, g.own_set)
		RETURNING p.key, p.size, p.refs
	)
	SELECT (SELECT count(*) FROM gone),
		coalesce((SELECT d.size FROM dropped d JOIN gone g ON d.key = g.permission_set), 0),
		coalesce((SELECT array_agg(key) FROM dropped WHERE refs <= 0), '{}')`

// queueUnlink queues the removal of a folder's row (unlinkSQL).
func (l *libraryTx) queueUnlink(b *pgx.Batch, id string) {
	b.Queue(unlinkSQL, l.rec.ID, l.rec.Generation, id).QueryRow(l.unlinked(id))
}

// unlinked reads unlinkSQL's row for folder id, taking what it removed out
// of the counts; nothing was, for a folder the tree does not have.
func (l *libraryTx) unlinked(id string) func(pgx.Row) error {
	return func(row pgx.Row) error {
		var removed int64
		var size int
		var unreferenced [][]byte
		if err := row.Scan(&removed, &size, &unreferenced); err != nil || removed == 0 {
			return err
		}
		l.touched[id] = true
		l.unreferenced = append(l.unreferenced, unreferenced...)
		l.rec.Permissions -= size
		l.rec.Folders--
		return nil
	}
}

// dropUnreferenced removes the permission sets that lost their last
// reference during the update and did not get one again.
func (l *libraryTx) dropUnreferenced() error {
	if len(l.unreferenced) == 0 {
		return nil
	}
	_, err := l.tx.Exec(l.ctx, "DELETE FROM permission_sets WHERE library = $1 AND generation = $2 AND key = ANY($3) AND refs <= 0",
		l.rec.ID, l.rec.Generation, l.unreferenced)
	return err
}
