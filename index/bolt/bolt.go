// Package bolt is foldermirror's bbolt backend: it keeps each library's
// folder tree, permissions and sync state, and answers the reads of the API.
//
// Layout (bucket → contents):
//
//	meta                        schema → version
//	libraries/<libraryID>       state → library record (current generation, sync state, log bounds);
//	                            retired → the last revision of the library deleted, in its place
//	libraries/<libraryID>/log   revision (8 bytes) folderID → nothing: the folders each revision changed
//	libraries/<libraryID>/catalog  the API's catalog of the library, in chunks (see catalog.go)
//	libraries/<libraryID>/g<N>  one generation of the library's tree:
//	    folders     folderID → folder record, with the keys of its permission sets
//	    children    parentID 0x00 childID → nothing
//	    permsets    key → references, Drive permissions in Drive's order (see permsets.go)
//	directory/<domain>          the domain's users and group memberships
//	pushChannels                channelID → push channel record (see push.go)
//	discoveries/<domain>        state → the domain's discovery of shared drives (see discovery.go)
//	discoveries/<domain>/drives driveID → the drive's record
//
// A full sync writes a new generation in batches and then switches the
// library's record to it in one transaction, so readers see the old tree or
// the new one, never a mix. Generations no record points to (left by a crash
// or an aborted sync) are dropped at Open.
//
// Writes go in one transaction per logical batch, never with NoSync. Large
// reads and writes (a whole library, a full sync) touch much of the file,
// which bbolt reads through a memory map: the pages they touched are then
// released from the process (see release), so that its resident memory does
// not grow with the file.
package bolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	fm "github.com/foldermirror/foldermirror"
	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// SchemaVersion is the version of the layout above. Open refuses a newer
// one, empties one older than 4, and brings a 4 or a 5 up to date (see
// upgrades).
const SchemaVersion = "6"

// FileName is the name of the index file inside the data directory.
const FileName = "index.db"

var (
	bucketMeta      = []byte("meta")
	bucketLibraries = []byte("libraries")
	bucketFolders   = []byte("folders")
	bucketChildren  = []byte("children")
	bucketPermsets  = []byte("permsets")
	bucketLog       = []byte("log")
	keySchema       = []byte("schema")
	keyState        = []byte("state")
	keyRetired      = []byte("retired")
)

// openTimeout bounds the wait for the file lock another process may hold
// (a variable for the tests).
var openTimeout = 2 * time.Second

// DB is an open index. It is safe for concurrent use.
type DB struct {
	bolt   *bbolt.DB
	path   string
	logger *slog.Logger

	mu        sync.RWMutex
	libraries map[string]*libraryRecord // cache of every library record
	// directories holds every domain's directory, for lookups.
	directories fm.Directories

	// releaseMu guards releaseTimer, the release releaseSoon has due
	// (nil: none), and closed.
	releaseMu    sync.Mutex
	releaseTimer *time.Timer
	closed       bool
}

// Open opens (creating if needed) the index in dataDir.
func Open(dataDir string, logger *slog.Logger) (*DB, error) {
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		return nil, fmt.Errorf("create data directory %s: %w", dataDir, err)
	}
	path := filepath.Join(dataDir, FileName)
	// The array freelist (the file's freelist is the same either way): a
	// commit takes most of its pages one at a time, which it takes off the
	// front of the sorted free IDs, where the hashmap freelist pays map
	// operations for each: an update that writes some 1,300 pages (1,000
	// folders of 100,000 renamed, a third moved) took 1.4 to 2 ms less CPU
	// in medians of 30, alternating with a copy of the file on the hashmap
	// freelist in one process.
	b, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: openTimeout, FreelistType: bbolt.FreelistArrayType})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("open index %s: locked by another process (is a foldermirror daemon running?)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("open index %s: %w", path, err)
	}
	db := &DB{bolt: b, path: path, logger: logger, libraries: map[string]*libraryRecord{}}
	if err := db.init(); err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("open index %s: %w", path, err)
	}
	return db, nil
}

// Path returns the index file's path.
func (db *DB) Path() string { return db.path }

// Close closes the index, waiting for running transactions to end.
func (db *DB) Close() error {
	db.releaseMu.Lock()
	db.closed = true
	if db.releaseTimer != nil {
		db.releaseTimer.Stop()
	}
	db.releaseMu.Unlock()
	return db.bolt.Close()
}

var _ fm.Index = (*DB)(nil)

// Connect returns nil: the file was read at Open, and there is nothing
// to reach.
func (db *DB) Connect(context.Context) error { return nil }

// ConnectRetrying returns nil, as Connect does.
func (db *DB) ConnectRetrying(context.Context) error { return nil }

// Watch returns at once: no other process shares the file (Open locks
// it), so there is nothing to follow.
func (db *DB) Watch(context.Context) {}

// init checks the schema (creating it in a new file), drops orphan
// generations and loads the library records.
func (db *DB) init() error {
	return db.bolt.Update(func(tx *bbolt.Tx) error {
		if err := checkSchema(tx, db.logger); err != nil {
			return err
		}
		if err := db.loadDirectories(tx); err != nil {
			return err
		}
		if _, err := tx.CreateBucketIfNotExists(bucketPushChannels); err != nil {
			return err
		}
		libs, err := tx.CreateBucketIfNotExists(bucketLibraries)
		if err != nil {
			return err
		}
		return libs.ForEachBucket(func(name []byte) error {
			lib := libs.Bucket(name)
			rec, err := readLibraryRecord(lib)
			if err != nil {
				return fmt.Errorf("library %s: %w", name, err)
			}
			if err := dropOrphanGenerations(lib, rec, db.logger); err != nil {
				return err
			}
			if rec != nil {
				db.libraries[string(name)] = rec
			}
			return nil
		})
	})
}

// checkSchema creates the schema in a new file, and refuses a file of
// another program or of a newer foldermirror. An index of an older
// foldermirror is emptied: it only mirrors Drive, and the next syncs fill
// it again.
func checkSchema(tx *bbolt.Tx, logger *slog.Logger) error {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		foreign := false
		_ = tx.ForEach(func([]byte, *bbolt.Bucket) error { foreign = true; return nil })
		if foreign {
			return errors.New("not a foldermirror index (no schema version)")
		}
		return createSchema(tx)
	}
	v := string(meta.Get(keySchema))
	switch {
	case v == SchemaVersion:
		return nil
	case upgradable(v):
		return upgrade(tx, meta, v, logger)
	case olderSchema(v):
		logger.Warn("the index was written by an older foldermirror; it is emptied and filled again by the next syncs",
			"schema", v, "now", SchemaVersion)
		return emptyIndex(tx)
	}
	return fmt.Errorf("index schema version %q is not one this foldermirror reads (%q): it was written by a newer foldermirror", v, SchemaVersion)
}

// upgrades are the steps that bring an index of schema n to schema n+1,
// by n: one for each schema from the oldest kept on.
var upgrades = map[int]func(tx *bbolt.Tx, logger *slog.Logger) error{
	4: upgradeFrom4,
	5: upgradeFrom5,
}

// upgradable tells whether an index of schema v is brought up to date.
func upgradable(v string) bool {
	n, err := strconv.Atoi(v)
	return err == nil && upgrades[n] != nil
}

// upgrade brings an index of an upgradable schema v up to date, a step
// after the other, in the transaction that opens it.
func upgrade(tx *bbolt.Tx, meta *bbolt.Bucket, v string, logger *slog.Logger) error {
	n, _ := strconv.Atoi(v)
	for ; upgrades[n] != nil; n++ {
		if err := upgrades[n](tx, logger); err != nil {
			return fmt.Errorf("upgrade the index from schema %d: %w", n, err)
		}
	}
	return meta.Put(keySchema, []byte(SchemaVersion))
}

// upgradeFrom4 brings an index of schema 4 to schema 5. Its layout is the
// same, but what some of its versions wrote is not: the permission lists a
// sync made from a parent's (of shared-drive folders that only inherit,
// and those an incremental sync made again) were sorted by permission ID,
// not in Drive's order, and the earliest left each folder's own
// permissions out. Each library's changes token is dropped, so that its
// next sync is a full one that writes them again; until it ends, the
// index serves what it holds.
func upgradeFrom4(tx *bbolt.Tx, logger *slog.Logger) error {
	if libs := tx.Bucket(bucketLibraries); libs != nil {
		err := libs.ForEachBucket(func(name []byte) error {
			lib := libs.Bucket(name)
			rec, err := readLibraryRecord(lib)
			if err != nil || rec == nil {
				return err
			}
			rec.StartPageToken = ""
			return lib.Put(keyState, encodeLibrary(rec))
		})
		if err != nil {
			return err
		}
	}
	logger.Info("the index was written by an earlier foldermirror: each library's next sync is a full one, which puts its permission lists in Drive's order",
		"schema", "4", "now", SchemaVersion)
	return nil
}

// upgradeFrom5 brings an index of schema 5 to schema 6, which keeps the
// domains' discoveries of shared drives: it makes their bucket.
func upgradeFrom5(tx *bbolt.Tx, _ *slog.Logger) error {
	_, err := tx.CreateBucketIfNotExists(bucketDiscoveries)
	return err
}

// olderSchema tells whether v is the version of an older layout.
func olderSchema(v string) bool {
	n, err := strconv.Atoi(v)
	current, _ := strconv.Atoi(SchemaVersion)
	return err == nil && n >= 1 && n < current
}

// createSchema makes what a new index of the current schema starts with.
func createSchema(tx *bbolt.Tx) error {
	meta, err := tx.CreateBucket(bucketMeta)
	if err != nil {
		return err
	}
	if _, err := tx.CreateBucket(bucketDiscoveries); err != nil {
		return err
	}
	return meta.Put(keySchema, []byte(SchemaVersion))
}

// emptyIndex deletes every bucket and writes the current schema.
func emptyIndex(tx *bbolt.Tx) error {
	var names [][]byte
	_ = tx.ForEach(func(name []byte, _ *bbolt.Bucket) error { names = append(names, bytes.Clone(name)); return nil })
	for _, name := range names {
		if err := tx.DeleteBucket(name); err != nil {
			return err
		}
	}
	return createSchema(tx)
}

func readLibraryRecord(lib *bbolt.Bucket) (*libraryRecord, error) {
	v := lib.Get(keyState)
	if v == nil {
		return nil, nil
	}
	return decodeLibrary(v)
}

func dropOrphanGenerations(lib *bbolt.Bucket, rec *libraryRecord, logger *slog.Logger) error {
	var orphans [][]byte
	err := lib.ForEachBucket(func(name []byte) error {
		if isGeneration(name) && (rec == nil || !bytes.Equal(name, generationKey(rec.Generation))) {
			orphans = append(orphans, bytes.Clone(name))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, name := range orphans {
		logger.Info("dropping unfinished tree", "generation", string(name))
		if err := lib.DeleteBucket(name); err != nil {
			return err
		}
	}
	return nil
}

func generationKey(gen uint64) []byte { return fmt.Appendf(nil, "g%016x", gen) }

// isGeneration tells a generation's bucket from the library's others.
func isGeneration(name []byte) bool { return len(name) == 17 && name[0] == 'g' }

// update runs fn in a write transaction; a failure (a full disk, say) names
// what was being written and the index file.
func (db *DB) update(what string, fn func(tx *bbolt.Tx) error) error {
	if err := db.bolt.Update(fn); err != nil {
		return fmt.Errorf("%s in index %s: %w", what, db.path, err)
	}
	return nil
}

// release gives back to the system the pages of the index file the process
// has mapped: they stay in the page cache, and are mapped again when read.
// It runs under a read transaction, so bbolt cannot remap the file meanwhile.
// A failure only leaves the pages mapped, so it is logged.
func (db *DB) release() {
	err := db.bolt.View(func(tx *bbolt.Tx) error {
		return unmapPages(tx.DB().Info().Data, uintptr(tx.Size()))
	})
	if err != nil {
		db.logger.Debug("could not release the index's mapped pages", "err", err)
	}
}

// releaseSoon releases the mapped pages releaseInterval from now, unless a
// release is due already. Reads of many small libraries (thousands of
// catalogs made at start) then cost a release every releaseInterval, not
// one each: releasing walks the mapping of the whole file, and the pages
// every read needs (the buckets' upper levels) are faulted in again after
// each. What stays mapped meanwhile is what releaseInterval of reading maps.
func (db *DB) releaseSoon() {
	db.releaseMu.Lock()
	defer db.releaseMu.Unlock()
	if db.releaseTimer != nil || db.closed {
		return
	}
	db.releaseTimer = time.AfterFunc(releaseInterval, func() {
		db.releaseMu.Lock()
		defer db.releaseMu.Unlock()
		db.releaseTimer = nil
		if !db.closed { // Close waits for the release, holding releaseMu
			db.release()
		}
	})
}

// releaseInterval is how often releasing releases the mapped pages.
const releaseInterval = 10 * time.Millisecond

// releasing releases the index's mapped pages every releaseInterval until the
// function it returns is called, and once more then. It bounds what a
// transaction that reads many pages and cannot be cut, such as dropping a
// tree (bbolt reads every page of a bucket it deletes), leaves mapped:
// releasing pages a transaction reads is safe, they are read again from
// the page cache.
func (db *DB) releasing() (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(releaseInterval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				db.release()
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		db.release()
	}
}

// library returns the cached record of a library, nil if never synced.
func (db *DB) library(id string) *libraryRecord {
	db.mu.RLock()
	defer db.mu.RUnlock()
	return db.libraries[id]
}

func (db *DB) setLibrary(rec *libraryRecord) {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.libraries[rec.ID] = rec
}

// tree is the buckets of one generation of a library, within a transaction.
type tree struct {
	folders, children, permsets *bbolt.Bucket
}

func openTree(gen *bbolt.Bucket) (*tree, error) {
	t := &tree{
		folders:  gen.Bucket(bucketFolders),
		children: gen.Bucket(bucketChildren),
		permsets: gen.Bucket(bucketPermsets),
	}
	if t.folders == nil || t.children == nil || t.permsets == nil {
		return nil, errors.New("incomplete tree buckets")
	}
	return t, nil
}

func createTree(gen *bbolt.Bucket) (*tree, error) {
	for _, name := range [][]byte{bucketFolders, bucketChildren, bucketPermsets} {
		if _, err := gen.CreateBucket(name); err != nil {
			return nil, err
		}
	}
	return openTree(gen)
}

// currentTree opens the tree readers see for a library, or returns ENOTFOUND.
func currentTree(tx *bbolt.Tx, libraryID string) (*tree, error) {
	t, _, _, err := currentLibrary(tx, libraryID)
	return t, err
}

// currentLibrary opens the tree readers see for a library and returns it
// with the library's bucket and record, or returns ENOTFOUND.
func currentLibrary(tx *bbolt.Tx, libraryID string) (*tree, *bbolt.Bucket, *libraryRecord, error) {
	notSynced := fm.Errorf(fm.ENOTFOUND, "Library %s has not been synced.", libraryID)
	lib := tx.Bucket(bucketLibraries).Bucket([]byte(libraryID))
	if lib == nil {
		return nil, nil, nil, notSynced
	}
	rec, err := readLibraryRecord(lib)
	if err != nil {
		return nil, nil, nil, err
	}
	if rec == nil {
		return nil, nil, nil, notSynced
	}
	gen := lib.Bucket(generationKey(rec.Generation))
	if gen == nil {
		return nil, nil, nil, fmt.Errorf("library %s: generation %d missing", libraryID, rec.Generation)
	}
	t, err := openTree(gen)
	if err != nil {
		return nil, nil, nil, err
	}
	return t, lib, rec, nil
}

// Info says where the index file is and how large.
func (db *DB) Info(context.Context) fm.IndexInfo {
	info := fm.IndexInfo{Kind: "bbolt", Location: db.path, Ready: true}
	if fi, err := os.Stat(db.path); err == nil {
		info.SizeBytes = fi.Size()
	}
	return info
}
