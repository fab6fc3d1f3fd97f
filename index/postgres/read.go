package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	fm "github.com/foldermirror/foldermirror"
	"github.com/jackc/pgx/v5"
)

var _ fm.IndexReader = (*DB)(nil)

// Folder flags, as the flags column holds them.
const (
	flagOwnRestricted = 1 << iota
	flagRestricted
	flagWritersCanShare
)

const folderColumns = "id, parent_id, name, resource_key, definition_id, flags, permission_set, own_set"

// folderColumnsOf is folderColumns of the table named alias in a query.
func folderColumnsOf(alias string) string {
	return alias + "." + strings.ReplaceAll(folderColumns, ", ", ", "+alias+".")
}

// scanFolder reads a row of folderColumns, and then of columns into extra.
func scanFolder(row pgx.Row, extra ...any) (*fm.Folder, error) {
	f := &fm.Folder{}
	var name, rk, def, set, own []byte
	var flags int16
	if err := row.Scan(append([]any{&f.ID, &f.ParentID, &name, &rk, &def, &flags, &set, &own}, extra...)...); err != nil {
		return nil, err
	}
	f.Name, f.ResourceKey, f.DefinitionID = string(name), string(rk), string(def)
	f.OwnRestrictedDownload = flags&flagOwnRestricted != 0
	f.RestrictedDownload = flags&flagRestricted != 0
	f.WritersCanShare = flags&flagWritersCanShare != 0
	if len(set) != len(f.PermissionSet) || len(own) != len(f.OwnSet) {
		return nil, fmt.Errorf("folder %s: %w", f.ID, fm.ErrCorrupt)
	}
	copy(f.PermissionSet[:], set)
	copy(f.OwnSet[:], own)
	return f, nil
}

// folderFlags returns the flags column of a folder.
func folderFlags(f *fm.Folder) int16 {
	var flags int16
	if f.OwnRestrictedDownload {
		flags |= flagOwnRestricted
	}
	if f.RestrictedDownload {
		flags |= flagRestricted
	}
	if f.WritersCanShare {
		flags |= flagWritersCanShare
	}
	return flags
}

func notSynced(libraryID string) error {
	return fm.Errorf(fm.ENOTFOUND, "Library %s has not been synced.", libraryID)
}

func folderNotFound(id string) error {
	return fm.Errorf(fm.ENOTFOUND, "Folder %s not found.", id)
}

// wrap names the database and what was being done in an error, but for
// the vocabulary's own errors.
func (db *DB) wrap(what string, err error) error {
	var e *fm.Error
	if err == nil || errors.As(err, &e) {
		return err
	}
	return fmt.Errorf("%s in index database %s: %w", what, db.where, err)
}

// Library returns the state of a synced library, as this process last read
// or wrote it; ENOTFOUND if never synced.
func (db *DB) Library(_ context.Context, libraryID string) (*fm.LibraryState, error) {
	r, err := db.library(libraryID)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, notSynced(libraryID)
	}
	state := r.LibraryState
	return &state, nil
}

// snapshot runs fn in a read-only transaction that sees one state of the
// database, with the library's row as that state has it.
func (db *DB) snapshot(ctx context.Context, what, libraryID string, fn func(tx pgx.Tx, r *record) error) error {
	if _, err := db.library(libraryID); err != nil {
		return err
	}
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		r, err := scanRecord(tx.QueryRow(ctx, "SELECT "+libraryColumns+" FROM libraries WHERE id = $1", libraryID))
		if errors.Is(err, pgx.ErrNoRows) {
			return notSynced(libraryID)
		}
		if err != nil {
			return err
		}
		return fn(tx, r)
	})
	return db.wrap(what+" of "+libraryID, err)
}

// Folder returns one folder of a library; ENOTFOUND if it has none such.
// One statement, one round trip: it reads the library's row and the folder
// of its current generation as one state of the database.
func (db *DB) Folder(ctx context.Context, libraryID, folderID string) (*fm.Folder, error) {
	if _, err := db.library(libraryID); err != nil {
		return nil, err
	}
	f, err := scanFolder(db.pool.QueryRow(ctx, "SELECT "+folderColumnsOf("f")+` FROM libraries l
		JOIN folders f ON f.library = l.id AND f.generation = l.generation WHERE l.id = $1 AND f.id = $2`, libraryID, folderID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, folderNotFound(folderID)
	}
	return f, db.wrap("read a folder of "+libraryID, err)
}

var _ fm.FoldersReader = (*DB)(nil)

// Folders returns the folders among ids that a library has, each once, in
// no set order, read in one round trip: lookupSize a statement, each
// reading the tree then committed.
func (db *DB) Folders(ctx context.Context, libraryID string, ids []string) ([]fm.Folder, error) {
	if _, err := db.library(libraryID); err != nil {
		return nil, err
	}
	var out []fm.Folder
	b := &pgx.Batch{}
	for part := range slices.Chunk(slices.Compact(slices.Sorted(slices.Values(ids))), lookupSize) {
		b.Queue("SELECT "+folderColumnsOf("f")+` FROM libraries l CROSS JOIN unnest($2::text[]) u(id)
			JOIN folders f ON f.library = l.id AND f.generation = l.generation AND f.id = u.id WHERE l.id = $1`, libraryID, part).
			Query(func(rows pgx.Rows) error {
				for rows.Next() {
					f, err := scanFolder(rows)
					if err != nil {
						return err
					}
					out = append(out, *f)
				}
				return rows.Err()
			})
	}
	err := db.pool.SendBatch(ctx, b).Close()
	if err != nil {
		return nil, db.wrap("read folders of "+libraryID, err)
	}
	return out, nil
}

var _ fm.ParentsReader = (*DB)(nil)

// Parents returns those of ids that have children in a library, each once,
// in no set order, read in one round trip: lookupSize a statement, each
// reading the tree then committed.
func (db *DB) Parents(ctx context.Context, libraryID string, ids []string) ([]string, error) {
	if _, err := db.library(libraryID); err != nil {
		return nil, err
	}
	var out []string
	b := &pgx.Batch{}
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	ids = slices.DeleteFunc(ids, func(id string) bool { return id == "" }) // the root's parent
	for part := range slices.Chunk(ids, lookupSize) {
		b.Queue(`SELECT u.id FROM libraries l CROSS JOIN unnest($2::text[]) u(id) WHERE l.id = $1 AND EXISTS
			(SELECT 1 FROM folders f WHERE f.library = l.id AND f.generation = l.generation AND f.parent_id = u.id)`, libraryID, part).
			Query(func(rows pgx.Rows) error {
				for rows.Next() {
					var id string
					if err := rows.Scan(&id); err != nil {
						return err
					}
					out = append(out, id)
				}
				return rows.Err()
			})
	}
	if err := db.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, db.wrap("read the parents among folders of "+libraryID, err)
	}
	return out, nil
}

// readFolder reads a folder of the library's current tree.
func readFolder(ctx context.Context, q pgx.Tx, r *record, id string) (*fm.Folder, error) {
	f, err := scanFolder(q.QueryRow(ctx, "SELECT "+folderColumns+" FROM folders WHERE library = $1 AND generation = $2 AND id = $3",
		r.ID, r.Generation, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, folderNotFound(id)
	}
	return f, err
}

// Permissions returns a folder's permissions in Drive's order.
func (db *DB) Permissions(ctx context.Context, libraryID, folderID string) ([]fm.Permission, error) {
	var perms []fm.Permission
	err := db.snapshot(ctx, "read permissions", libraryID, func(tx pgx.Tx, r *record) error {
		f, err := readFolder(ctx, tx, r, folderID)
		if err != nil {
			return err
		}
		perms, err = readSet(ctx, tx, r, f.PermissionSet)
		return err
	})
	return perms, err
}

// PermissionSet returns the permissions of a set of the library's tree.
func (db *DB) PermissionSet(ctx context.Context, libraryID string, key fm.PermissionSetKey) ([]fm.Permission, error) {
	var perms []fm.Permission
	err := db.snapshot(ctx, "read permissions", libraryID, func(tx pgx.Tx, r *record) error {
		var err error
		perms, err = readSet(ctx, tx, r, key)
		return err
	})
	return perms, err
}

// readSet reads a permission set of the library's current tree.
func readSet(ctx context.Context, q pgx.Tx, r *record, key fm.PermissionSetKey) ([]fm.Permission, error) {
	var list []byte
	err := q.QueryRow(ctx, "SELECT list FROM permission_sets WHERE library = $1 AND generation = $2 AND key = $3",
		r.ID, r.Generation, key[:]).Scan(&list)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fm.Errorf(fm.ENOTFOUND, "Permission set not found.")
	}
	if err != nil {
		return nil, err
	}
	return fm.DecodePermissions(list)
}

// ReadLibrary hands the library's sets, then its folders, to rd, all read
// in one transaction.
func (db *DB) ReadLibrary(ctx context.Context, libraryID string, rd fm.LibraryReader) (*fm.LibraryState, error) {
	var state fm.LibraryState
	err := db.snapshot(ctx, "read the library", libraryID, func(tx pgx.Tx, r *record) error {
		state = r.LibraryState
		if err := readSets(ctx, tx, r, nil, rd.PermissionSet); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, "SELECT "+folderColumns+" FROM folders WHERE library = $1 AND generation = $2", r.ID, r.Generation)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			f, err := scanFolder(rows)
			if err != nil {
				return err
			}
			if err := rd.Folder(f); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return &state, nil
}

// readSets hands the library's permission sets (those of keys only, unless
// nil) to fn.
func readSets(ctx context.Context, tx pgx.Tx, r *record, keys [][]byte, fn func(fm.PermissionSet) error) error {
	query, args := "SELECT key, list FROM permission_sets WHERE library = $1 AND generation = $2", []any{r.ID, r.Generation}
	if keys != nil {
		query, args = query+" AND key = ANY($3)", append(args, keys)
	}
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	return scanSets(rows, fn)
}

// scanSets hands each permission set of rows (key, list) to fn, and closes
// rows.
func scanSets(rows pgx.Rows, fn func(fm.PermissionSet) error) error {
	defer rows.Close()
	for rows.Next() {
		var key, list []byte
		if err := rows.Scan(&key, &list); err != nil {
			return err
		}
		perms, err := fm.DecodePermissions(list)
		if err != nil {
			return err
		}
		if err := fn(fm.PermissionSet{Key: fm.PermissionSetKey(key), Permissions: perms}); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Changes returns the folders the library's revisions after since wrote or
// removed, as they are now, from its log.
func (db *DB) Changes(ctx context.Context, libraryID string, since uint64) (*fm.ChangeSet, error) {
	var cs *fm.ChangeSet
	err := db.snapshot(ctx, "read the changes", libraryID, func(tx pgx.Tx, r *record) error {
		var err error
		cs, err = changeSet(ctx, tx, r, since)
		return err
	})
	return cs, err
}

func changeSet(ctx context.Context, tx pgx.Tx, r *record, since uint64) (*fm.ChangeSet, error) {
	cs := &fm.ChangeSet{State: r.LibraryState}
	switch r.Catchup(since, r.Revision) {
	case fm.CatchupNone:
		return cs, nil
	case fm.CatchupReread:
		cs.Reread = true
		return cs, nil
	}
	rows, err := tx.Query(ctx, "SELECT DISTINCT folder_id FROM changes WHERE library = $1 AND revision > $2 LIMIT $3",
		r.ID, since, fm.MaxChangeSet+1)
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	if !fm.ChangeSetFits(len(ids)) {
		cs.Reread = true
		return cs, nil
	}
	rows, err = tx.Query(ctx, "SELECT "+folderColumns+" FROM folders WHERE library = $1 AND generation = $2 AND id = ANY($3)",
		r.ID, r.Generation, ids)
	if err != nil {
		return nil, err
	}
	written, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (fm.Folder, error) {
		f, err := scanFolder(row)
		if err != nil {
			return fm.Folder{}, err
		}
		return *f, nil
	})
	if err != nil {
		return nil, err
	}
	cs.Written = written
	found := map[string]bool{}
	var keys [][]byte
	seen := map[fm.PermissionSetKey]bool{}
	for _, f := range written {
		found[f.ID] = true
		if !seen[f.PermissionSet] {
			seen[f.PermissionSet] = true
			keys = append(keys, f.PermissionSet[:])
		}
	}
	for _, id := range ids {
		if !found[id] {
			cs.Removed = append(cs.Removed, id)
		}
	}
	err = readSets(ctx, tx, r, keys, func(s fm.PermissionSet) error {
		cs.Sets = append(cs.Sets, s)
		return nil
	})
	return cs, err
}

// Snapshot returns every folder of a library with its permissions, sorted by
// ID. It is meant for checks and tests.
func (db *DB) Snapshot(ctx context.Context, libraryID string) ([]fm.SyncedFolder, error) {
	var out []fm.SyncedFolder
	err := db.snapshot(ctx, "read the library", libraryID, func(tx pgx.Tx, r *record) error {
		sets := map[fm.PermissionSetKey][]fm.Permission{}
		err := readSets(ctx, tx, r, nil, func(s fm.PermissionSet) error {
			sets[s.Key] = s.Permissions
			return nil
		})
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, "SELECT "+folderColumns+" FROM folders WHERE library = $1 AND generation = $2 ORDER BY id COLLATE \"C\"",
			r.ID, r.Generation)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (fm.SyncedFolder, error) {
			f, err := scanFolder(row)
			if err != nil {
				return fm.SyncedFolder{}, err
			}
			perms, own := sets[f.PermissionSet], sets[f.OwnSet]
			if perms == nil {
				perms = []fm.Permission{}
			}
			if own == nil {
				own = []fm.Permission{}
			}
			return fm.SyncedFolder{Folder: *f, Permissions: perms, OwnPermissions: own}, nil
		})
		return err
	})
	return out, err
}
