package postgres

import (
	"context"
	"fmt"
	"slices"

	fm "github.com/foldermirror/foldermirror"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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
		ltx := newLibraryTx(ctx, tx, *old, db.txLimits)
		if err := fn(ltx); err != nil {
			return err
		}
		if err := ltx.send(); err != nil {
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

// libraryTx implements fm.LibraryTx within a transaction. Its writes are
// queued, then sent together, pipelined, in one round trip: once there
// are enough of them (limits), when State needs the counts they change,
// and when fn is done. Its reads need no queued write sent first: they
// answer from the overlay, which knows every folder written, and read the
// database for the rest, which no queued write changes.
type libraryTx struct {
	ctx    context.Context
	tx     pgx.Tx
	rec    record
	limits txLimits
	// touched are the folders written or removed.
	touched map[string]bool
	// unreferenced are the keys of sets that lost their last reference.
	unreferenced [][]byte
	// queued are the writes not sent yet.
	queued *pgx.Batch
	known  *overlay
	// err is why sending writes failed: the transaction is lost.
	err error
}

// txLimits bound what an update keeps in memory: the statements it queues
// before sending them, and the folders its overlay knows before it sends
// what is queued and forgets them.
type txLimits struct{ statements, folders int }

// defaultTxLimits: a thousand statements are about 330 folders put; a
// hundred thousand folders known, about 30 MB.
var defaultTxLimits = txLimits{statements: 1000, folders: 100_000}

func newLibraryTx(ctx context.Context, tx pgx.Tx, rec record, limits txLimits) *libraryTx {
	return &libraryTx{ctx: ctx, tx: tx, rec: rec, limits: limits, touched: map[string]bool{},
		queued: &pgx.Batch{}, known: newOverlay()}
}

// State sends the writes queued, whose results the counts follow. If
// that fails, so does the update (see send), and the counts it returns
// may be behind.
func (l *libraryTx) State() fm.LibraryState {
	_ = l.send()
	return l.rec.LibraryState
}

// SetState keeps the ID, counts and revision, which the index maintains.
func (l *libraryTx) SetState(s fm.LibraryState) { l.rec.LibraryState = l.rec.Adopt(s) }

// send sends the writes queued, in one round trip. Once it failed, it
// returns that failure ever after: so does every call, and the update.
func (l *libraryTx) send() error {
	if l.err != nil || l.queued.Len() == 0 {
		return l.err
	}
	b := l.queued
	l.queued = &pgx.Batch{}
	l.err = l.tx.SendBatch(l.ctx, b).Close()
	return l.err
}

// sendIfFull sends the writes queued once there are limits.statements.
func (l *libraryTx) sendIfFull() error {
	if l.queued.Len() < l.limits.statements {
		return l.err
	}
	return l.send()
}

// Put queues its statements. For a folder the overlay knows is there, its
// row is rewritten, and if its sets change, the new ones are stored or
// referenced once more and the old ones once less. Else the old row, if
// any, is unlinked, the sets stored or referenced once more, and the new
// row inserted.
func (l *libraryTx) Put(sf fm.SyncedFolder) error {
	if err := l.ready(); err != nil {
		return err
	}
	list, own := fm.AppendPermissions(nil, sf.Permissions), fm.AppendPermissions(nil, sf.OwnPermissions)
	sf.PermissionSet, sf.OwnSet = fm.KeyOf(list), fm.KeyOf(own)
	switch old, known := l.known.folder(sf.ID); {
	case old != nil:
		l.queueRewrite(&sf.Folder)
		if old.PermissionSet != sf.PermissionSet || old.OwnSet != sf.OwnSet {
			l.queuePutSets(&sf, list, own)
			l.queueRelease(old)
			l.rec.Permissions += len(sf.Permissions)
		}
	default:
		if !known {
			l.queueUnlink(sf.ID)
		}
		l.queuePutSets(&sf, list, own)
		l.queued.Queue(`INSERT INTO folders (library, generation, id, parent_id, name, resource_key, definition_id, flags, permission_set, own_set)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, l.rec.ID, l.rec.Generation, sf.ID, sf.ParentID, []byte(sf.Name),
			[]byte(sf.ResourceKey), []byte(sf.DefinitionID), folderFlags(&sf.Folder), sf.PermissionSet[:], sf.OwnSet[:])
		l.rec.Folders++
		l.rec.Permissions += len(sf.Permissions)
	}
	l.known.put(sf.Folder)
	l.known.setList(sf.PermissionSet, sf.Permissions)
	l.known.setList(sf.OwnSet, sf.OwnPermissions)
	l.touched[sf.ID] = true
	return l.sendIfFull()
}

// queuePutSets queues the storing of a folder's sets (list and own,
// encoded), or one more reference to each.
func (l *libraryTx) queuePutSets(sf *fm.SyncedFolder, list, own []byte) {
	if sf.PermissionSet == sf.OwnSet {
		l.queued.Queue(putSetSQL, l.rec.ID, l.rec.Generation, sf.PermissionSet[:], len(sf.Permissions), list, 2)
		return
	}
	l.queued.Queue(putSetsSQL, l.rec.ID, l.rec.Generation, sf.PermissionSet[:], len(sf.Permissions), list, 1,
		sf.OwnSet[:], len(sf.OwnPermissions), own)
}

// queueRewrite queues the rewriting of the row of a folder that is there.
func (l *libraryTx) queueRewrite(f *fm.Folder) {
	l.queued.Queue(`UPDATE folders SET parent_id = $4, name = $5, resource_key = $6, definition_id = $7, flags = $8,
		permission_set = $9, own_set = $10 WHERE library = $1 AND generation = $2 AND id = $3`,
		l.rec.ID, l.rec.Generation, f.ID, f.ParentID, []byte(f.Name), []byte(f.ResourceKey), []byte(f.DefinitionID),
		folderFlags(f), f.PermissionSet[:], f.OwnSet[:]).Exec(func(tag pgconn.CommandTag) error {
		if tag.RowsAffected() != 1 {
			return fmt.Errorf("folder %s of library %s: rewritten, not found: %w", f.ID, l.rec.ID, fm.ErrCorrupt)
		}
		return nil
	})
}

// releaseSQL takes the references of a folder ($3: its list, $4: its own
// permissions) from its sets, and returns, of each, its key, size and
// references left.
const releaseSQL = `UPDATE permission_sets p SET refs = p.refs - (p.key = $3)::int - (p.key = $4)::int
	WHERE p.library = $1 AND p.generation = $2 AND p.key IN ($3, $4) RETURNING p.key, p.size, p.refs`

// queueRelease queues the release of the sets of old, a folder's row being
// rewritten: its list's size leaves the count; sets left without
// references are noted, as unlinked does.
func (l *libraryTx) queueRelease(old *fm.Folder) {
	l.queued.Queue(releaseSQL, l.rec.ID, l.rec.Generation, old.PermissionSet[:], old.OwnSet[:]).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var key []byte
			var size int
			var refs int64
			if err := rows.Scan(&key, &size, &refs); err != nil {
				return err
			}
			if fm.PermissionSetKey(key) == old.PermissionSet {
				l.rec.Permissions -= size
			}
			if refs <= 0 {
				l.unreferenced = append(l.unreferenced, key)
			}
		}
		return rows.Err()
	})
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

// Replace queues the rewriting of the folder's row, with the sets it has,
// once it knows the folder is there.
func (l *libraryTx) Replace(f *fm.Folder) error {
	old, err := l.Folder(f.ID)
	if err != nil {
		return err
	}
	g := *f
	g.PermissionSet, g.OwnSet = old.PermissionSet, old.OwnSet
	l.queueRewrite(&g)
	l.known.put(g)
	l.touched[f.ID] = true
	return l.sendIfFull()
}

// Delete queues the removal of the folder's row, unless the tree is known
// to have no such folder.
func (l *libraryTx) Delete(id string) error {
	if err := l.ready(); err != nil {
		return err
	}
	if f, known := l.known.folder(id); known && f == nil {
		return nil
	}
	l.queueUnlink(id)
	l.known.remove(id)
	return l.sendIfFull()
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
func (l *libraryTx) queueUnlink(id string) {
	l.queued.Queue(unlinkSQL, l.rec.ID, l.rec.Generation, id).QueryRow(l.unlinked(id))
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
