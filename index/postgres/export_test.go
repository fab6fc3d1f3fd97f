package postgres

import (
	"context"

	fm "github.com/foldermirror/foldermirror"
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
