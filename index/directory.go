package index

import (
	"context"
	"fmt"
	"strings"

	fm "github.com/foldermirror/foldermirror"
	bolt "go.etcd.io/bbolt"
)

// Directory layout: directory/<domain>/ with
//
//	users    e-mail → 1 if suspended, 0 if not
//	groups   member e-mail → its groups, 0x00-separated
//	state    synced-at time
var (
	bucketDirectory = []byte("directory")
	bucketUsers     = []byte("users")
	bucketGroups    = []byte("groups")
)

var _ fm.DirectoryStore = (*DB)(nil)

// ReplaceDirectory replaces a domain's directory in one transaction.
func (db *DB) ReplaceDirectory(_ context.Context, snap *fm.DirectorySnapshot) error {
	err := db.update("write the directory of "+snap.Domain, func(tx *bolt.Tx) error {
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
	db.mu.Lock()
	db.directories[snap.Domain] = snap
	db.mu.Unlock()
	return nil
}

func writeDirectory(dom *bolt.Bucket, snap *fm.DirectorySnapshot) error {
	users, err := dom.CreateBucket(bucketUsers)
	if err != nil {
		return err
	}
	for email, suspended := range snap.Users {
		v := []byte{0}
		if suspended {
			v[0] = 1
		}
		if err := users.Put([]byte(email), v); err != nil {
			return err
		}
	}
	groups, err := dom.CreateBucket(bucketGroups)
	if err != nil {
		return err
	}
	for member, gs := range snap.Groups {
		if err := groups.Put([]byte(member), []byte(strings.Join(gs, "\x00"))); err != nil {
			return err
		}
	}
	e := encoder{}
	e.byte(recordFormat)
	e.time(snap.SyncedAt)
	return dom.Put(keyState, e.buf)
}

// loadDirectories reads every domain's directory into memory.
func (db *DB) loadDirectories(tx *bolt.Tx) error {
	dirs := tx.Bucket(bucketDirectory)
	if dirs == nil {
		return nil
	}
	return dirs.ForEachBucket(func(name []byte) error {
		snap, err := readDirectory(string(name), dirs.Bucket(name))
		if err != nil {
			return fmt.Errorf("directory of %s: %w", name, err)
		}
		db.directories[snap.Domain] = snap
		return nil
	})
}

func readDirectory(domain string, dom *bolt.Bucket) (*fm.DirectorySnapshot, error) {
	snap := &fm.DirectorySnapshot{Domain: domain, Users: map[string]bool{}, Groups: map[string][]string{}}
	d := decoder{buf: dom.Get(keyState)}
	d.header()
	snap.SyncedAt = d.time()
	if err := d.done(); err != nil {
		return nil, err
	}
	users, groups := dom.Bucket(bucketUsers), dom.Bucket(bucketGroups)
	if users == nil || groups == nil {
		return nil, errCorrupt
	}
	err := users.ForEach(func(k, v []byte) error {
		snap.Users[string(k)] = len(v) > 0 && v[0] == 1
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = groups.ForEach(func(k, v []byte) error {
		snap.Groups[string(k)] = strings.Split(string(v), "\x00")
		return nil
	})
	return snap, err
}

// Lookup implements fm.Directory from the synced directories: a known user is
// listed, not suspended, in its domain's directory; its groups come from
// every domain's.
func (db *DB) Lookup(_ context.Context, email string) (bool, []string, error) {
	email = strings.ToLower(email)
	db.mu.RLock()
	defer db.mu.RUnlock()
	known := false
	if snap := db.directories[fm.EmailDomain(email)]; snap != nil {
		suspended, listed := snap.Users[email]
		known = listed && !suspended
	}
	var groups []string
	for _, snap := range db.directories {
		groups = append(groups, snap.Groups[email]...)
	}
	return known, groups, nil
}
