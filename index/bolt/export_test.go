package bolt

import (
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"
)

// SetOpenTimeout sets, for t, how long Open waits for the lock of a file
// another process holds. Not for a parallel test: Open reads it.
func SetOpenTimeout(t *testing.T, d time.Duration) {
	old := openTimeout
	openTimeout = d
	t.Cleanup(func() { openTimeout = old })
}

// Generations returns how many trees the index holds for a library.
func (db *DB) Generations(libraryID string) int {
	n := 0
	_ = db.bolt.View(func(tx *bbolt.Tx) error {
		lib := tx.Bucket(bucketLibraries).Bucket([]byte(libraryID))
		if lib == nil {
			return nil
		}
		return lib.ForEachBucket(func(name []byte) error {
			if isGeneration(name) {
				n++
			}
			return nil
		})
	})
	return n
}

// LogBounds returns the first revision a library's log holds and its
// number of entries.
func (db *DB) LogBounds(libraryID string) (start, entries uint64) {
	rec := db.library(libraryID)
	return rec.LogStart, rec.LogEntries
}

// PruneLog prunes a library's log to at most keep entries, as appendLog does
// past fm.MaxLogEntries.
func (db *DB) PruneLog(libraryID string, keep uint64) error {
	var rec *libraryRecord
	err := db.bolt.Update(func(tx *bbolt.Tx) error {
		lib := tx.Bucket(bucketLibraries).Bucket([]byte(libraryID))
		r, err := readLibraryRecord(lib)
		if err != nil {
			return err
		}
		if err := pruneLog(lib.Bucket(bucketLog), r, keep); err != nil {
			return err
		}
		rec = r
		return lib.Put(keyState, encodeLibrary(r))
	})
	if err == nil {
		db.setLibrary(rec)
	}
	return err
}

// PagesWritten returns how many pages the index's commits have written
// since it was opened.
func (db *DB) PagesWritten() int64 {
	stats := db.bolt.Stats().TxStats
	return stats.GetWrite()
}
