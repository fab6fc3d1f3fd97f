package index

import (
	"slices"

	bolt "go.etcd.io/bbolt"
)

// Generations returns how many trees the index holds for a library.
func (db *DB) Generations(libraryID string) int {
	n := 0
	_ = db.bolt.View(func(tx *bolt.Tx) error {
		lib := tx.Bucket(bucketLibraries).Bucket([]byte(libraryID))
		if lib == nil {
			return nil
		}
		return lib.ForEachBucket(func([]byte) error { n++; return nil })
	})
	return n
}

// OpenReadTransactions returns the number of read transactions now open.
func (db *DB) OpenReadTransactions() int { return db.bolt.Stats().OpenTxN }

// PermissionSets returns the references of each permission set of a
// library's current tree.
func (db *DB) PermissionSets(libraryID string) []uint64 {
	var refs []uint64
	_ = db.bolt.View(func(tx *bolt.Tx) error {
		t, err := currentTree(tx, libraryID)
		if err != nil {
			return err
		}
		return t.permsets.ForEach(func(_, v []byte) error {
			n, _ := splitPermset(v)
			refs = append(refs, n)
			return nil
		})
	})
	slices.Sort(refs)
	return refs
}
