package postgres

import (
	"context"
	"net"

	fm "github.com/foldermirror/foldermirror"
	"github.com/jackc/pgx/v5"
)

// Generation returns the generation a full sync writes.
func Generation(w fm.FullSyncWriter) uint64 { return w.(*fullSync).generation }

// Renew renews a lease once, as its renewals do.
func Renew(ctx context.Context, l fm.Lease) error { return l.(*lease).renewOnce(ctx) }

// MigrationLock is the advisory lock the schema is migrated under.
const MigrationLock = migrationLock

// Setting returns a setting of the connections of the pool, or of the
// renewals' if renewals is set.
func Setting(ctx context.Context, db *DB, renewals bool, name string) (string, error) {
	pool := db.pool
	if renewals {
		pool = db.renewals
	}
	var value string
	err := pool.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&value)
	return value, err
}

// LogBounds returns the first revision a library's log holds and its
// number of entries, as this process last read or wrote them.
func (db *DB) LogBounds(libraryID string) (start, entries uint64) {
	r, err := db.library(libraryID)
	if err != nil || r == nil {
		return 0, 0
	}
	return r.LogStart, r.LogEntries
}

// PruneLog prunes a library's log to at most keep entries, as appendLog does
// past fm.MaxLogEntries.
func (db *DB) PruneLog(libraryID string, keep uint64) error {
	ctx := context.Background()
	var rec *record
	err := db.fenced(ctx, "prune the log of "+libraryID, libraryID, fm.Fence{}, func(tx pgx.Tx) error {
		r, err := lockLibrary(ctx, tx, libraryID)
		if err != nil {
			return err
		}
		if err := pruneLog(ctx, tx, r, keep); err != nil {
			return err
		}
		rec = r
		return saveRecord(ctx, tx, r)
	})
	if err == nil {
		db.setLibrary(rec)
	}
	return err
}

// SetTxLimits makes the updates of db send their writes once statements
// are queued, and forget what they read once they know folders folders.
func SetTxLimits(db *DB, statements, folders int) {
	db.txLimits = txLimits{statements: statements, folders: folders}
}

// DriveRowVersions returns the version of the row of each drive of a
// domain: the transaction that last wrote it (xmin).
func DriveRowVersions(ctx context.Context, db *DB, domain string) (map[string]string, error) {
	rows, err := db.pool.Query(ctx, "SELECT id, xmin::text FROM discovered_drives WHERE domain = $1", domain)
	if err != nil {
		return nil, err
	}
	versions := map[string]string{}
	var id, xmin string
	_, err = pgx.ForEachRow(rows, []any{&id, &xmin}, func() error {
		versions[id] = xmin
		return nil
	})
	return versions, err
}

// Refresh reads what other processes committed, once, as Run does every
// Options.Poll.
func Refresh(ctx context.Context, db *DB) error { return db.refresh(ctx) }

// OpenWrapped is Open, each connection of the pool (not the renewals')
// wrapped by wrap.
func OpenWrapped(url string, opts Options, wrap func(net.Conn) net.Conn) (*DB, error) {
	return open(url, opts, wrap)
}
