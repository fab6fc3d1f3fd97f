package postgres

import (
	"context"
	"encoding/json"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/jackc/pgx/v5"
)

// ReplaceDirectory makes snap its domain's directory, for every replica, in
// a transaction fenced by fence.
func (db *DB) ReplaceDirectory(ctx context.Context, snap *fm.DirectorySnapshot, fence fm.Fence) error {
	data, err := encodeDirectory(snap)
	if err != nil {
		return err
	}
	var version int64
	err = db.fenced(ctx, "write the directory of "+snap.Domain, fm.DirectoryLease(snap.Domain), fence, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `INSERT INTO directories (domain, snapshot, version) VALUES ($1, $2, 1)
			ON CONFLICT (domain) DO UPDATE SET snapshot = $2, version = directories.version + 1
			RETURNING version`, snap.Domain, data).Scan(&version)
	})
	if err != nil {
		return err
	}
	db.directories.Replace(snap)
	db.mu.Lock()
	db.dirs[snap.Domain] = version
	db.mu.Unlock()
	return nil
}

// Lookup implements fm.Directory from the directories read.
func (db *DB) Lookup(ctx context.Context, email string) (fm.DirectoryEntry, error) {
	return db.directories.Lookup(ctx, email)
}

// refreshDirectories reads the directories whose version changed.
func (db *DB) refreshDirectories(ctx context.Context) error {
	rows, err := db.pool.Query(ctx, "SELECT domain, version FROM directories")
	if err != nil {
		return err
	}
	defer rows.Close()
	var stale []string
	versions := map[string]int64{}
	for rows.Next() {
		var domain string
		var version int64
		if err := rows.Scan(&domain, &version); err != nil {
			return err
		}
		versions[domain] = version
		db.mu.RLock()
		known := db.dirs[domain]
		db.mu.RUnlock()
		if known != version {
			stale = append(stale, domain)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(stale) == 0 {
		return nil
	}
	snaps, err := db.readDirectories(ctx, stale)
	if err != nil {
		return err
	}
	db.directories.Replace(snaps...)
	db.mu.Lock()
	for _, d := range stale {
		db.dirs[d] = versions[d]
	}
	db.mu.Unlock()
	return nil
}

// readDirectories reads the snapshots of domains.
func (db *DB) readDirectories(ctx context.Context, domains []string) ([]*fm.DirectorySnapshot, error) {
	rows, err := db.pool.Query(ctx, "SELECT snapshot FROM directories WHERE domain = ANY($1)", domains)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (*fm.DirectorySnapshot, error) {
		var data []byte
		if err := row.Scan(&data); err != nil {
			return nil, err
		}
		snap, err := decodeDirectory(data)
		if err != nil {
			return nil, err
		}
		if n := snap.UsersWithoutID(); n > 0 {
			db.logger.Warn("the stored directory was read by a foldermirror that did not keep user IDs: "+
				"Google tokens of its users are refused until its next directory sync, at daemon start",
				"domain", snap.Domain, "usersWithoutID", n)
		}
		return snap, nil
	})
}

// storedDirectory is a directory snapshot as the directories table keeps
// it, in JSON. Users and IDs are two maps so that every version reads every
// other's: a snapshot stored by a foldermirror that did not keep IDs has
// none (its users' Google tokens are refused until the next directory sync),
// and one that does not know IDs ignores them.
type storedDirectory struct {
	Domain string
	// Users maps each user's e-mail to whether it is suspended.
	Users map[string]bool
	// IDs maps each user's e-mail to its directory ID.
	IDs          map[string]string `json:",omitempty"`
	DirectGroups map[string][]string
	Unreadable   []string
	SyncedAt     time.Time
}

// encodeDirectory returns the stored form of a snapshot.
func encodeDirectory(snap *fm.DirectorySnapshot) ([]byte, error) {
	s := storedDirectory{Domain: snap.Domain, Users: make(map[string]bool, len(snap.Users)),
		IDs: make(map[string]string, len(snap.Users)), DirectGroups: snap.DirectGroups,
		Unreadable: snap.Unreadable, SyncedAt: snap.SyncedAt}
	for email, u := range snap.Users {
		s.Users[email] = u.Suspended
		if u.ID != "" {
			s.IDs[email] = u.ID
		}
	}
	return json.Marshal(&s)
}

// decodeDirectory reads a snapshot's stored form.
func decodeDirectory(data []byte) (*fm.DirectorySnapshot, error) {
	var s storedDirectory
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, err
	}
	snap := &fm.DirectorySnapshot{Domain: s.Domain, Users: make(map[string]fm.DirectoryUser, len(s.Users)),
		DirectGroups: s.DirectGroups, Unreadable: s.Unreadable, SyncedAt: s.SyncedAt}
	for email, suspended := range s.Users {
		snap.Users[email] = fm.DirectoryUser{ID: s.IDs[email], Suspended: suspended}
	}
	return snap, nil
}
