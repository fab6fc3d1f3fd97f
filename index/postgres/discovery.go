package postgres

import (
	"context"
	"errors"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/jackc/pgx/v5"
)

var _ fm.DiscoveryStore = (*DB)(nil)

// Discoveries returns each domain's discovery, without its drives, in
// order of domain, as the database holds them now; EUNAVAILABLE before the
// index was reached.
func (db *DB) Discoveries(ctx context.Context) ([]fm.Discovery, error) {
	if !db.Ready() {
		return nil, db.unavailable()
	}
	rows, err := db.pool.Query(ctx, "SELECT domain, storage_account, at, error, revision FROM discoveries ORDER BY domain")
	if err != nil {
		return nil, db.wrap("read the discoveries", err)
	}
	discoveries, err := pgx.CollectRows(rows, scanDiscovery)
	return discoveries, db.wrap("read the discoveries", err)
}

// scanDiscovery reads a row of discoveries.
func scanDiscovery(row pgx.CollectableRow) (fm.Discovery, error) {
	var d fm.Discovery
	var at *time.Time
	var msg []byte
	if err := row.Scan(&d.Domain, &d.StorageAccount, &at, &msg, &d.Revision); err != nil {
		return d, err
	}
	if at != nil {
		d.At = at.UTC()
	}
	d.Error = string(msg)
	return d, nil
}

// DiscoveredDrives returns the drives of a domain's discovery, sorted by
// ID, with its revision, read by one statement, as the database holds them
// now; EUNAVAILABLE before the index was reached.
func (db *DB) DiscoveredDrives(ctx context.Context, domain string) ([]fm.DiscoveredDrive, uint64, error) {
	if !db.Ready() {
		return nil, 0, db.unavailable()
	}
	rows, err := db.pool.Query(ctx, `SELECT d.revision, s.id, s.name, s.hidden FROM discoveries d
		LEFT JOIN discovered_drives s ON s.domain = d.domain WHERE d.domain = $1 ORDER BY s.id`, domain)
	if err != nil {
		return nil, 0, db.wrap("read the discovered drives of "+domain, err)
	}
	var drives []fm.DiscoveredDrive
	var revision uint64
	var id *string // NULL: the domain has no drive
	var name []byte
	var hidden *bool
	_, err = pgx.ForEachRow(rows, []any{&revision, &id, &name, &hidden}, func() error {
		if id != nil {
			drives = append(drives, fm.DiscoveredDrive{ID: *id, Name: string(name), Hidden: *hidden})
		}
		return nil
	})
	if err != nil {
		return nil, 0, db.wrap("read the discovered drives of "+domain, err)
	}
	return drives, revision, nil
}

// PutDiscovery records a domain's discovery, for every replica, in a
// transaction fenced by fence (of the lease fm.DiscoveryLease of the
// domain's storage account, or the zero Fence while no process holds
// that lease). Given drives, it writes those that differ from the ones
// stored, and deletes those no longer found, growing the revision if any
// did: a discovery that finds what the last one did writes no drive.
func (db *DB) PutDiscovery(ctx context.Context, d fm.Discovery, fence fm.Fence) error {
	if d.Domain == "" {
		return errors.New("write a discovery: it names no domain")
	}
	var drives []fm.DiscoveredDrive
	if d.Drives != nil {
		drives = fm.DiscoveredDrivesSorted(d.Drives)
	}
	lease := fm.DiscoveryLease(d.StorageAccount)
	return db.fenced(ctx, "write the discovery of "+d.Domain, lease, fence, func(tx pgx.Tx) error {
		// The row, locked until the transaction ends, serializes the
		// writes of the domain's drives.
		_, err := tx.Exec(ctx, `INSERT INTO discoveries (domain, storage_account, at, error, revision)
			VALUES ($1, $2, $3, $4, 0)
			ON CONFLICT (domain) DO UPDATE SET storage_account = $2, at = $3, error = $4`,
			d.Domain, d.StorageAccount, nullTime(d.At), []byte(d.Error))
		if err != nil || d.Drives == nil {
			return err
		}
		changed, err := replaceDrives(ctx, tx, d.Domain, drives)
		if err != nil || !changed {
			return err
		}
		_, err = tx.Exec(ctx, "UPDATE discoveries SET revision = revision + 1 WHERE domain = $1", d.Domain)
		return err
	})
}

// replaceDrivesSQL makes a domain ($1) have the drives of IDs $2, names $3
// and hidden flags $4 (each ID once): it compares them with the rows
// stored, in the server, and writes only the rows that differ, deleting
// those of drives not given; it returns how many rows it wrote or deleted.
const replaceDrivesSQL = `WITH given AS (
		SELECT id COLLATE "C" AS id, name, hidden FROM unnest($2::text[], $3::bytea[], $4::boolean[]) AS g(id, name, hidden)
	), gone AS (
		DELETE FROM discovered_drives s WHERE s.domain = $1 AND NOT EXISTS (SELECT FROM given g WHERE g.id = s.id)
		RETURNING 1
	), differ AS (
		SELECT g.* FROM given g LEFT JOIN discovered_drives s ON s.domain = $1 AND s.id = g.id
		WHERE s.id IS NULL OR (s.name, s.hidden) IS DISTINCT FROM (g.name, g.hidden)
	), put AS (
		INSERT INTO discovered_drives (domain, id, name, hidden) SELECT $1, id, name, hidden FROM differ
		ON CONFLICT (domain, id) DO UPDATE SET name = excluded.name, hidden = excluded.hidden
		RETURNING 1
	)
	SELECT (SELECT count(*) FROM gone) + (SELECT count(*) FROM put)`

// replaceDrives makes a domain have drives (sorted by ID, each once) in
// tx, in one round trip, writing only what differs, and tells whether
// anything did.
func replaceDrives(ctx context.Context, tx pgx.Tx, domain string, drives []fm.DiscoveredDrive) (bool, error) {
	ids := make([]string, len(drives))
	names := make([][]byte, len(drives))
	hidden := make([]bool, len(drives))
	for i, d := range drives {
		ids[i], names[i], hidden[i] = d.ID, []byte(d.Name), d.Hidden
	}
	var written int64
	err := tx.QueryRow(ctx, replaceDrivesSQL, domain, ids, names, hidden).Scan(&written)
	return written > 0, err
}
