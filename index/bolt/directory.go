package bolt

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	fm "github.com/foldermirror/foldermirror"
	bbolt "go.etcd.io/bbolt"
)

// Directory layout: directory/<domain>/ with
//
//	users         e-mail → 1 if suspended, 0 if not; then the user's directory ID
//	              (none in a directory stored by a foldermirror that did not keep IDs)
//	directGroups  member e-mail → the groups containing it directly, 0x00-separated
//	unreadable    e-mail of a nested group no admin could read → nothing
//	state         synced-at time

var (
	bucketDirectory    = []byte("directory")
	bucketUsers        = []byte("users")
	bucketDirectGroups = []byte("directGroups")
	bucketUnreadable   = []byte("unreadable")
)

var _ fm.DirectoryStore = (*DB)(nil)

// ReplaceDirectory replaces a domain's directory in one transaction, and
// resolves the groups of every member again, across every domain's
// directory.
func (db *DB) ReplaceDirectory(_ context.Context, snap *fm.DirectorySnapshot, _ fm.Fence) error {
	err := db.update("write the directory of "+snap.Domain, func(tx *bbolt.Tx) error {
		dirs, err := tx.CreateBucketIfNotExists(bucketDirectory)
		if err != nil {
			return err
		}
		if dirs.Bucket([]byte(snap.Domain)) != nil {
			if err := dirs.DeleteBucket([]byte(snap.Domain)); err != nil {
				return err
			}
		}
		dom, err := dirs.CreateBucket([]byte(snap.Domain))
		if err != nil {
			return err
		}
		return writeDirectory(dom, snap)
	})
	if err != nil {
		return err
	}
	db.directories.Replace(snap)
	return nil
}

func writeDirectory(dom *bbolt.Bucket, snap *fm.DirectorySnapshot) error {
	users, err := dom.CreateBucket(bucketUsers)
	if err != nil {
		return err
	}
	for email, user := range snap.Users {
		v := append([]byte{0}, user.ID...)
		if user.Suspended {
			v[0] = 1
		}
		if err := users.Put([]byte(email), v); err != nil {
			return err
		}
	}
	groups, err := dom.CreateBucket(bucketDirectGroups)
	if err != nil {
		return err
	}
	for member, gs := range snap.DirectGroups {
		if err := groups.Put([]byte(member), []byte(strings.Join(gs, "\x00"))); err != nil {
			return err
		}
	}
	unreadable, err := dom.CreateBucket(bucketUnreadable)
	if err != nil {
		return err
	}
	for _, group := range snap.Unreadable {
		if err := unreadable.Put([]byte(group), nil); err != nil {
			return err
		}
	}
	e := encoder{}
	e.byte(recordFormat)
	e.time(snap.SyncedAt)
	return dom.Put(keyState, e.buf)
}

// loadDirectories reads every domain's directory into memory and resolves
// their groups.
func (db *DB) loadDirectories(tx *bbolt.Tx) error {
	dirs := tx.Bucket(bucketDirectory)
	if dirs == nil {
		return nil
	}
	var snaps []*fm.DirectorySnapshot
	err := dirs.ForEachBucket(func(name []byte) error {
		snap, err := readDirectory(string(name), dirs.Bucket(name))
		if err != nil {
			return fmt.Errorf("directory of %s: %w", name, err)
		}
		if n := snap.UsersWithoutID(); n > 0 {
			logUsersWithoutID(db.logger, snap.Domain, n)
		}
		snaps = append(snaps, snap)
		return nil
	})
	db.directories.Replace(snaps...)
	return err
}

func readDirectory(domain string, dom *bbolt.Bucket) (*fm.DirectorySnapshot, error) {
	snap := &fm.DirectorySnapshot{Domain: domain, Users: map[string]fm.DirectoryUser{}, DirectGroups: map[string][]string{}}
	d := decoder{buf: dom.Get(keyState)}
	d.header()
	snap.SyncedAt = d.time()
	if err := d.done(); err != nil {
		return nil, err
	}
	users, groups := dom.Bucket(bucketUsers), dom.Bucket(bucketDirectGroups)
	if users == nil || groups == nil {
		return nil, errCorrupt
	}
	err := users.ForEach(func(k, v []byte) error {
		user := fm.DirectoryUser{Suspended: len(v) > 0 && v[0] == 1}
		if len(v) > 1 {
			user.ID = string(v[1:])
		}
		snap.Users[string(k)] = user
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = groups.ForEach(func(k, v []byte) error {
		snap.DirectGroups[string(k)] = strings.Split(string(v), "\x00")
		return nil
	})
	if err != nil {
		return nil, err
	}
	if unreadable := dom.Bucket(bucketUnreadable); unreadable != nil {
		err = unreadable.ForEach(func(k, _ []byte) error {
			snap.Unreadable = append(snap.Unreadable, string(k))
			return nil
		})
	}
	return snap, err
}

// logUsersWithoutID warns that a domain's stored directory has users
// without a directory ID: their Google tokens are refused until the next
// directory sync, which runs when the daemon starts.
func logUsersWithoutID(logger *slog.Logger, domain string, n int) {
	logger.Warn("the stored directory was read by a foldermirror that did not keep user IDs: "+
		"Google tokens of its users are refused until its next directory sync, at daemon start",
		"domain", domain, "usersWithoutID", n)
}

// Lookup implements fm.Directory from the synced directories.
func (db *DB) Lookup(ctx context.Context, email string) (fm.DirectoryEntry, error) {
	return db.directories.Lookup(ctx, email)
}
