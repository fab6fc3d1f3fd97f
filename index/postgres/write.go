package postgres

import (
	"context"
	"errors"
	"fmt"

	fm "github.com/foldermirror/foldermirror"
	"github.com/jackc/pgx/v5"
)

var _ fm.IndexWriter = (*DB)(nil)

// fullSync writes a library's new tree into a generation readers do not see
// until Commit. Each of its writes is a transaction fenced by its fence.
type fullSync struct {
	db         *DB
	ctx        context.Context
	libraryID  string
	fence      fm.Fence
	generation uint64
	// base is the library's row when the sync began (nil if none): Commit
	// fails if another sync committed since.
	base    *record
	lastID  string
	folders int
	perms   int
	sizes   map[fm.PermissionSetKey]int
	refs    map[fm.PermissionSetKey]int64
	done    bool
}

// BeginFullSync drops what a sync of the library that never committed left
// (a generation no row points to: under the library's lease, no other sync
// writes one), and starts a new generation, numbered from a sequence.
func (db *DB) BeginFullSync(ctx context.Context, libraryID string, fence fm.Fence) (fm.FullSyncWriter, error) {
	if _, err := db.library(libraryID); err != nil {
		return nil, err
	}
	fs := &fullSync{db: db, ctx: ctx, libraryID: libraryID, fence: fence,
		sizes: map[fm.PermissionSetKey]int{}, refs: map[fm.PermissionSetKey]int64{}}
	err := db.fenced(ctx, "begin a full sync of "+libraryID, libraryID, fence, func(tx pgx.Tx) error {
		base, err := lockLibrary(ctx, tx, libraryID)
		if err != nil {
			return err
		}
		var current uint64
		if base != nil {
			current = base.Generation
		}
		if err := dropGenerations(ctx, tx, libraryID, "generation <> $2", current); err != nil {
			return err
		}
		fs.base = base
		return tx.QueryRow(ctx, "SELECT nextval('generations')").Scan(&fs.generation)
	})
	if err != nil {
		return nil, err
	}
	return fs, nil
}

// dropGenerations deletes the rows of a library's generations that match
// where ($2 is arg).
func dropGenerations(ctx context.Context, tx pgx.Tx, libraryID, where string, arg uint64) error {
	for _, table := range []string{"folders", "permission_sets"} {
		if _, err := tx.Exec(ctx, "DELETE FROM "+table+" WHERE library = $1 AND "+where, libraryID, arg); err != nil {
			return err
		}
	}
	return nil
}

func (fs *fullSync) check() error {
	if fs.done {
		return errors.New("full sync already finished")
	}
	return nil
}

// PutPermissionSets copies sets into the new generation, without
// references yet.
func (fs *fullSync) PutPermissionSets(sets []fm.PermissionSet) error {
	if err := fs.check(); err != nil {
		return err
	}
	rows := make([][]any, 0, len(sets))
	for _, s := range sets {
		if _, ok := fs.sizes[s.Key]; ok {
			continue
		}
		fs.sizes[s.Key] = len(s.Permissions)
		rows = append(rows, []any{fs.libraryID, fs.generation, s.Key[:], len(s.Permissions), fm.AppendPermissions(nil, s.Permissions), 0})
	}
	return fs.write("write permissions of "+fs.libraryID, func(tx pgx.Tx) error {
		_, err := tx.CopyFrom(fs.ctx, pgx.Identifier{"permission_sets"},
			[]string{"library", "generation", "key", "size", "list", "refs"}, pgx.CopyFromRows(rows))
		return err
	})
}

// write runs fn in a transaction fenced by the sync's fence.
func (fs *fullSync) write(what string, fn func(pgx.Tx) error) error {
	return fs.db.fenced(fs.ctx, what, fs.libraryID, fs.fence, fn)
}

// PutFolders copies folders into the new generation.
func (fs *fullSync) PutFolders(folders []fm.Folder) error {
	if err := fs.check(); err != nil {
		return err
	}
	rows := make([][]any, 0, len(folders))
	for i := range folders {
		f := &folders[i]
		if fs.folders+i > 0 && f.ID <= fs.lastID {
			return fmt.Errorf("folder %s put after %s: folders must come in ascending order of ID", f.ID, fs.lastID)
		}
		fs.lastID = f.ID
		n, ok := fs.sizes[f.PermissionSet]
		if _, own := fs.sizes[f.OwnSet]; !ok || !own {
			return fmt.Errorf("folder %s refers to a permission set not put", f.ID)
		}
		fs.perms += n
		rows = append(rows, []any{fs.libraryID, fs.generation, f.ID, f.ParentID, []byte(f.Name), []byte(f.ResourceKey),
			[]byte(f.DefinitionID), folderFlags(f), f.PermissionSet[:], f.OwnSet[:]})
	}
	err := fs.write("write folders of "+fs.libraryID, func(tx pgx.Tx) error {
		_, err := tx.CopyFrom(fs.ctx, pgx.Identifier{"folders"},
			[]string{"library", "generation", "id", "parent_id", "name", "resource_key", "definition_id", "flags", "permission_set", "own_set"},
			pgx.CopyFromRows(rows))
		return err
	})
	if err != nil {
		return err
	}
	for i := range folders {
		fs.refs[folders[i].PermissionSet]++
		fs.refs[folders[i].OwnSet]++
	}
	fs.folders += len(folders)
	return nil
}

// PutChildren does nothing: folders are indexed by parent.
func (fs *fullSync) PutChildren([]fm.ChildLink) error { return fs.check() }

// Commit, in one fenced transaction: checks that no other sync committed
// the library since BeginFullSync, writes the sets' references, measures
// the drift from the tree being replaced and logs it, and switches the
// library's row to the new generation. The old generation is deleted
// afterwards.
func (fs *fullSync) Commit(state fm.LibraryState) (fm.Drift, error) {
	if err := fs.check(); err != nil {
		return fm.Drift{}, err
	}
	ctx := fs.ctx
	var drift fm.Drift
	var rec *record
	err := fs.write("commit the full sync of "+fs.libraryID, func(tx pgx.Tx) error {
		prev, err := lockLibrary(ctx, tx, fs.libraryID)
		if err != nil {
			return err
		}
		if err := fs.unchangedSince(prev); err != nil {
			return err
		}
		if err := fs.writeRefs(ctx, tx); err != nil {
			return err
		}
		state = fm.LibraryState{ID: fs.libraryID, Folders: fs.folders, Permissions: fs.perms}.Adopt(state)
		rec = &record{LibraryState: state, Generation: fs.generation}
		if drift, err = fs.switchTo(ctx, tx, prev, rec); err != nil {
			return err
		}
		return saveRecord(ctx, tx, rec)
	})
	if err != nil {
		return fm.Drift{}, err
	}
	fs.done = true
	fs.db.setLibrary(rec)
	err = fs.write("drop an old tree of "+fs.libraryID, func(tx pgx.Tx) error {
		return dropGenerations(ctx, tx, fs.libraryID, "generation < $2", fs.generation)
	})
	if err != nil {
		fs.db.logger.Warn("could not drop an old tree; the next full sync drops it", "library", fs.libraryID, "err", err)
	}
	fs.analyzeIfLarge(ctx)
	return drift, nil
}

// analyzeFrom is the fewest folders a full sync writes for it to update
// the tables' statistics itself.
const analyzeFrom = 1000

// analyzeIfLarge updates the tables' statistics (ANALYZE) after a full
// sync that wrote a large share of them: statistics from before it (of
// empty tables, after the first) would have PostgreSQL scan them whole for
// each folder an incremental sync looks up. A sync of fewer than
// analyzeFrom folders, or of less than a tenth of what the tables held,
// leaves them to autovacuum: ANALYZE samples the whole table, and ten
// thousand small drives synced each with one would keep the server busy
// with nothing else (23 at once, from three replicas).
func (fs *fullSync) analyzeIfLarge(ctx context.Context) {
	if fs.folders < analyzeFrom {
		return
	}
	var rows float64 // -1: never analyzed
	err := fs.db.pool.QueryRow(ctx, "SELECT reltuples FROM pg_class WHERE oid = 'folders'::regclass").Scan(&rows)
	if err == nil && float64(fs.folders) < rows/10 {
		return
	}
	if err == nil {
		_, err = fs.db.pool.Exec(ctx, "ANALYZE folders, permission_sets")
	}
	if err != nil {
		fs.db.logger.Warn("could not update the index tables' statistics", "library", fs.libraryID, "err", err)
	}
}

// unchangedSince refuses to commit over prev, the library's row now, if it
// is not the one the sync began from: another sync committed since (a
// compare-and-swap, the fence's second line).
func (fs *fullSync) unchangedSince(prev *record) error {
	switch {
	case prev == nil && fs.base == nil:
		return nil
	case prev != nil && fs.base != nil && prev.Generation == fs.base.Generation && prev.Revision == fs.base.Revision:
		return nil
	}
	return fmt.Errorf("%s: another sync committed the library since this full sync began: nothing written", fs.libraryID)
}

// lockLibrary reads a library's row and locks it until tx ends; nil if the
// library has none yet.
func lockLibrary(ctx context.Context, tx pgx.Tx, libraryID string) (*record, error) {
	r, err := scanRecord(tx.QueryRow(ctx, "SELECT "+libraryColumns+" FROM libraries WHERE id = $1 FOR UPDATE", libraryID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return r, err
}

// writeRefs writes the references counted while folders were put, and
// drops the sets no folder refers to.
func (fs *fullSync) writeRefs(ctx context.Context, tx pgx.Tx) error {
	keys := make([][]byte, 0, len(fs.refs))
	refs := make([]int64, 0, len(fs.refs))
	for k, n := range fs.refs {
		keys = append(keys, k[:])
		refs = append(refs, n)
	}
	_, err := tx.Exec(ctx, `UPDATE permission_sets p SET refs = u.refs
		FROM unnest($3::bytea[], $4::bigint[]) AS u(key, refs)
		WHERE p.library = $1 AND p.generation = $2 AND p.key = u.key`, fs.libraryID, fs.generation, keys, refs)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, "DELETE FROM permission_sets WHERE library = $1 AND generation = $2 AND refs = 0", fs.libraryID, fs.generation)
	return err
}

// switchTo completes rec, the new tree's row, from prev, the replaced one
// (nil if none): the revision fm.LibraryState.NextRevision gives it (the
// tree changed if it drifted), and what drifted logged, or the log started
// afresh (fm.KeepsLog). A first tree has the first revision, or, if the
// library was deleted, the one after its last. It returns the drift.
func (fs *fullSync) switchTo(ctx context.Context, tx pgx.Tx, prev, rec *record) (fm.Drift, error) {
	if prev == nil {
		retired, err := unretire(ctx, tx, fs.libraryID)
		if err != nil {
			return fm.Drift{}, err
		}
		rec.Revision = max(fm.FirstRevision, retired+1)
		rec.ChangeLog = fm.FreshLog(rec.Revision)
		return fm.Drift{}, nil
	}
	drift, err := measureDrift(ctx, tx, fs.libraryID, prev.Generation, fs.generation)
	if err != nil {
		return fm.Drift{}, err
	}
	rec.Revision = prev.NextRevision(rec.LibraryState, drift.Total() > 0)
	rec.ChangeLog = prev.ChangeLog
	if rec.Revision == prev.Revision {
		return drift, nil
	}
	if !fm.KeepsLog(prev.LibraryState, rec.LibraryState, drift) {
		return drift, resetLog(ctx, tx, rec)
	}
	n, err := logDrift(ctx, tx, fs.libraryID, prev.Generation, fs.generation, rec.Revision)
	if err != nil {
		return fm.Drift{}, err
	}
	return drift, addedToLog(ctx, tx, rec, n)
}

// unretire returns the last revision of the library if it was deleted,
// and forgets it; 0 if it was not.
func unretire(ctx context.Context, tx pgx.Tx, libraryID string) (uint64, error) {
	var revision uint64
	err := tx.QueryRow(ctx, "DELETE FROM retired_libraries WHERE id = $1 RETURNING revision", libraryID).Scan(&revision)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return revision, err
}

// driftJoin pairs the folders of two generations of a library by ID.
const driftJoin = `FROM (SELECT * FROM folders WHERE library = $1 AND generation = $2) o
	FULL JOIN (SELECT * FROM folders WHERE library = $1 AND generation = $3) n ON o.id = n.id
	WHERE o.id IS NULL OR n.id IS NULL OR (o.parent_id, o.name, o.resource_key, o.definition_id, o.flags, o.permission_set, o.own_set)
		IS DISTINCT FROM (n.parent_id, n.name, n.resource_key, n.definition_id, n.flags, n.permission_set, n.own_set)`

// measureDrift counts the folders added, removed and changed between two
// generations.
func measureDrift(ctx context.Context, tx pgx.Tx, libraryID string, old, cur uint64) (fm.Drift, error) {
	var d fm.Drift
	err := tx.QueryRow(ctx, `SELECT count(*) FILTER (WHERE o.id IS NULL), count(*) FILTER (WHERE n.id IS NULL),
		count(*) FILTER (WHERE o.id IS NOT NULL AND n.id IS NOT NULL) `+driftJoin, libraryID, old, cur).
		Scan(&d.Added, &d.Removed, &d.Changed)
	return d, err
}

// logDrift logs the folders that differ between two generations under a
// revision, and returns how many.
func logDrift(ctx context.Context, tx pgx.Tx, libraryID string, old, cur, revision uint64) (int64, error) {
	tag, err := tx.Exec(ctx, `INSERT INTO changes (library, revision, folder_id)
		SELECT $1, $4, coalesce(n.id, o.id) `+driftJoin, libraryID, old, cur, revision)
	return tag.RowsAffected(), err
}

// Abort drops the unfinished tree; after Commit it does nothing.
func (fs *fullSync) Abort() error {
	if fs.done {
		return nil
	}
	fs.done = true
	// Unfenced: the generation is this sync's own, which no other writes.
	// It is kept if a commit whose answer was lost made it the library's.
	ctx := context.WithoutCancel(fs.ctx) // an abort after a cancellation still cleans up
	err := pgx.BeginFunc(ctx, fs.db.pool, func(tx pgx.Tx) error {
		return dropGenerations(ctx, tx, fs.libraryID,
			"generation = $2 AND NOT EXISTS (SELECT FROM libraries WHERE id = $1 AND generation = $2)", fs.generation)
	})
	return fs.db.wrap("drop the unfinished tree of "+fs.libraryID, err)
}

// libraryRows are the tables that keep a library's rows, but for its
// state, with the column that names the library.
var libraryRows = []struct{ table, column string }{
	{"folders", "library"},
	{"permission_sets", "library"},
	{"changes", "library"},
	{"scheduled_runs", "name"},
}

// DeleteLibrary deletes every row of the library (its state, the folders
// and permission sets of its trees, its change log, its scheduled runs)
// in one transaction fenced by fence, a fence of the library's lease or
// the zero Fence while no process holds it, and keeps its last revision
// in retired_libraries (see switchTo). The other replicas forget the
// library at their next refresh.
func (db *DB) DeleteLibrary(ctx context.Context, libraryID string, fence fm.Fence) error {
	err := db.fenced(ctx, "delete library "+libraryID, libraryID, fence, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `WITH gone AS (DELETE FROM libraries WHERE id = $1 RETURNING id, revision)
			INSERT INTO retired_libraries (id, revision) SELECT id, revision FROM gone
			ON CONFLICT (id) DO UPDATE SET revision = excluded.revision`, libraryID)
		if err != nil {
			return err
		}
		for _, r := range libraryRows {
			if _, err := tx.Exec(ctx, "DELETE FROM "+r.table+" WHERE "+r.column+" = $1", libraryID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	delete(db.libraries, libraryID)
	return nil
}
