package bolt

import (
	"bytes"
	"encoding/binary"
	"slices"

	fm "github.com/foldermirror/foldermirror"
	bbolt "go.etcd.io/bbolt"
)

// Each library keeps a log of the folders each revision wrote or removed,
// so that a reader holding an older revision in memory (the API's catalog,
// another replica's) can catch up by reading those folders alone.
//
// The log holds every change of the revisions from the record's LogStart on.
// The root package's rules bound it (fm.ChangeLog, fm.PrunedLog, fm.KeepsLog,
// fm.ChangeSetFits): readers at an older revision then read the whole
// library again.

// logBucket returns a library's log bucket, creating it if needed.
func logBucket(lib *bbolt.Bucket) (*bbolt.Bucket, error) {
	return lib.CreateBucketIfNotExists(bucketLog)
}

// appendLog records that revision changed the folders ids, and drops the
// oldest revisions if the log grows past its bound.
func appendLog(lib *bbolt.Bucket, rec *libraryRecord, revision uint64, ids []string) error {
	log, err := logBucket(lib)
	if err != nil {
		return err
	}
	log.FillPercent = packedFill // keys grow with the revision
	// One key made again for each ID: bbolt copies the keys it keeps.
	var key []byte
	for _, id := range ids {
		key = appendLogKey(key[:0], revision, id)
		if err := log.Put(key, nil); err != nil {
			return err
		}
	}
	rec.LogEntries += uint64(len(ids))
	if rec.Overfull() {
		return pruneLog(log, rec, fm.PrunedLogSize)
	}
	return nil
}

// pruneLog deletes the revisions fm.PrunedLog drops to keep at most keep
// entries.
func pruneLog(log *bbolt.Bucket, rec *libraryRecord, keep uint64) error {
	rec.ChangeLog = fm.PrunedLog(rec.Revision, keep, logRevisions(log))
	c := log.Cursor()
	for k, _ := c.First(); len(k) >= 8 && binary.BigEndian.Uint64(k) < rec.LogStart; k, _ = c.First() {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// logRevisions counts the entries of each revision the log holds, newest
// first.
func logRevisions(log *bbolt.Bucket) []fm.LogRevision {
	var revs []fm.LogRevision
	c := log.Cursor()
	for k, _ := c.Last(); len(k) >= 8; k, _ = c.Prev() {
		rev := binary.BigEndian.Uint64(k)
		if n := len(revs); n > 0 && revs[n-1].Revision == rev {
			revs[n-1].Entries++
			continue
		}
		revs = append(revs, fm.LogRevision{Revision: rev, Entries: 1})
	}
	return revs
}

// resetLog empties the log: readers older than the record's revision must
// read the whole library again.
func resetLog(lib *bbolt.Bucket, rec *libraryRecord) error {
	if lib.Bucket(bucketLog) != nil {
		if err := lib.DeleteBucket(bucketLog); err != nil {
			return err
		}
	}
	rec.ChangeLog = fm.FreshLog(rec.Revision)
	return nil
}

// loggedSince returns the IDs of the folders changed after revision since,
// each once, and false when they are more than a ChangeSet holds
// (fm.ChangeSetFits).
func loggedSince(lib *bbolt.Bucket, since uint64) ([]string, bool) {
	log := lib.Bucket(bucketLog)
	if log == nil {
		return nil, true
	}
	seen := map[string]bool{}
	c := log.Cursor()
	for k, _ := c.Seek(revisionPrefix(since + 1)); k != nil; k, _ = c.Next() {
		id := string(k[8:])
		if !seen[id] {
			if !fm.ChangeSetFits(len(seen) + 1) {
				return nil, false
			}
			seen[id] = true
		}
	}
	ids := make([]string, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, true
}

// removedBetween returns the IDs of the old tree's folders that the new one
// lacks, reading both in order of ID.
func removedBetween(old, cur *tree) []string {
	var gone []string
	oc, nc := old.folders.Cursor(), cur.folders.Cursor()
	nk, _ := nc.First()
	for ok, _ := oc.First(); ok != nil; ok, _ = oc.Next() {
		for nk != nil && bytes.Compare(nk, ok) < 0 {
			nk, _ = nc.Next()
		}
		if nk == nil || !bytes.Equal(nk, ok) {
			gone = append(gone, string(ok))
		}
	}
	return gone
}

// changeSet reads the current records of the folders ids, with the sets
// they refer to.
func changeSet(t *tree, ids []string) (*fm.ChangeSet, error) {
	cs := &fm.ChangeSet{}
	sets := map[fm.PermissionSetKey]bool{}
	for _, id := range ids {
		v := t.folders.Get([]byte(id))
		if v == nil {
			cs.Removed = append(cs.Removed, id)
			continue
		}
		var f fm.Folder
		if err := decodeFolder(&f, id, v); err != nil {
			return nil, err
		}
		cs.Written = append(cs.Written, f)
		sets[f.PermissionSet] = true
	}
	for key := range sets {
		perms, err := t.permissions(key)
		if err != nil {
			return nil, err
		}
		cs.Sets = append(cs.Sets, fm.PermissionSet{Key: key, Permissions: perms})
	}
	return cs, nil
}
