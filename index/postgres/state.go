package postgres

import (
	"context"
	"maps"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/jackc/pgx/v5"
)

// record is a library's row: its state, the generation of its tree, and
// what its change log holds.
type record struct {
	fm.LibraryState
	fm.ChangeLog
	Generation uint64
}

const libraryColumns = `id, generation, root_id, drive_id, sharing_requires_organizer, start_page_token,
	last_full_sync, last_incremental_sync, folders, permissions, revision, log_start, log_entries`

// scanRecord reads a row of libraryColumns.
func scanRecord(row pgx.Row) (*record, error) {
	r := &record{}
	var full, incremental *time.Time
	var folders, perms int64
	err := row.Scan(&r.ID, &r.Generation, &r.RootID, &r.DriveID, &r.SharingRequiresOrganizer, &r.StartPageToken,
		&full, &incremental, &folders, &perms, &r.Revision, &r.LogStart, &r.LogEntries)
	if err != nil {
		return nil, err
	}
	r.Folders, r.Permissions = int(folders), int(perms)
	if full != nil {
		r.LastFullSync = full.UTC()
	}
	if incremental != nil {
		r.LastIncrementalSync = incremental.UTC()
	}
	return r, nil
}

// nullTime is t, or NULL for the zero time.
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// saveRecord writes a library's row in tx.
func saveRecord(ctx context.Context, tx pgx.Tx, r *record) error {
	_, err := tx.Exec(ctx, `INSERT INTO libraries (`+libraryColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
		ON CONFLICT (id) DO UPDATE SET generation = $2, root_id = $3, drive_id = $4,
			sharing_requires_organizer = $5, start_page_token = $6, last_full_sync = $7,
			last_incremental_sync = $8, folders = $9, permissions = $10, revision = $11,
			log_start = $12, log_entries = $13`,
		r.ID, r.Generation, r.RootID, r.DriveID, r.SharingRequiresOrganizer, r.StartPageToken,
		nullTime(r.LastFullSync), nullTime(r.LastIncrementalSync), r.Folders, r.Permissions, r.Revision,
		r.LogStart, r.LogEntries)
	return err
}

// setLibrary caches a library's row, as this process committed it.
func (db *DB) setLibrary(r *record) {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.libraries[r.ID] = r
}

// library returns the cached row of a library, nil if never synced.
func (db *DB) library(id string) (*record, error) {
	db.mu.RLock()
	defer db.mu.RUnlock()
	if !db.ready {
		return nil, db.unavailable()
	}
	return db.libraries[id], nil
}

// refresh reads the libraries' rows and the directories that changed,
// forgets the libraries whose row is gone, and tells OnChange of the
// libraries another process changed or deleted. A library this process
// wrote while the rows were read is kept as it wrote it: the row read may
// be older.
func (db *DB) refresh(ctx context.Context) error {
	db.mu.RLock()
	before := maps.Clone(db.libraries)
	db.mu.RUnlock()
	rows, err := db.pool.Query(ctx, "SELECT "+libraryColumns+" FROM libraries")
	if err != nil {
		return err
	}
	libs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*record, error) { return scanRecord(row) })
	if err != nil {
		return err
	}
	if err := db.refreshDirectories(ctx); err != nil {
		return err
	}
	changed := db.adopt(before, libs)
	if db.opts.OnChange != nil {
		for _, id := range changed {
			db.opts.OnChange(id)
		}
	}
	return nil
}

// adopt makes libs, the rows read, the libraries' states, but for those
// this process wrote since before was taken, and returns the IDs of the
// libraries whose state readers see changed, or that are gone.
func (db *DB) adopt(before map[string]*record, libs []*record) (changed []string) {
	db.mu.Lock()
	defer db.mu.Unlock()
	for _, r := range libs {
		was, announce := db.libraries[r.ID], db.unannounced[r.ID]
		delete(db.unannounced, r.ID)
		if was != before[r.ID] {
			if announce {
				changed = append(changed, r.ID)
			}
			continue // written by this process meanwhile
		}
		if announce || (db.ready && (was == nil || !was.SameView(r.LibraryState))) {
			changed = append(changed, r.ID)
		}
		db.libraries[r.ID] = r
	}
	read := make(map[string]bool, len(libs))
	for _, r := range libs {
		read[r.ID] = true
	}
	for id, was := range before {
		if !read[id] && db.libraries[id] == was {
			delete(db.libraries, id)
			delete(db.unannounced, id)
			changed = append(changed, id)
		}
	}
	if db.health != nil {
		db.logger.Info("the index database answers again", "database", db.where)
	}
	db.health = nil
	return changed
}
