package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	fm "github.com/foldermirror/foldermirror"
	bbolt "go.etcd.io/bbolt"
)

var _ fm.IndexWriter = (*DB)(nil)

// fullSync writes a library's new tree into a generation readers do not see
// until Commit.
type fullSync struct {
	db         *DB
	libraryID  string
	generation uint64
	prev       *libraryRecord // the record of the tree being replaced, nil if none
	folders    int
	perms      int
	drift      fm.Drift
	matched    int // folders of the new tree found in the old one
	// lastID and lastLink are the last folder and link written: both come
	// in ascending order, and are appended to packed pages.
	lastID   string
	lastLink fm.ChildLink
	// lastSet is the key of the last set put; setsInOrder whether every
	// set came in ascending order of key so far, appended to packed pages.
	lastSet     fm.PermissionSetKey
	setsInOrder bool
	// sizes is the number of permissions of each set put.
	sizes map[fm.PermissionSetKey]int
	// refs counts the references to each set, written at Commit.
	refs map[fm.PermissionSetKey]uint64
	// drifted are the folders added or changed, while they are few enough
	// to be logged (fm.Drift.Loggable); nil past that.
	drifted []string
	// unreleased counts the folders written since mapped pages were last
	// released.
	unreleased int
	done       bool
}

// packedFill is how full pages written in key order are filled where no
// key is inserted between them later (the change log). Keys written out
// of order keep bbolt's default, which leaves room to insert.
const packedFill = 1.0

// treeFill is how full a full sync fills the pages of a tree, written in
// key order. An incremental sync rewrites some of them: a page it makes
// longer (a new folder, link or set; a longer name) is split in two when
// it is full, both pages written. A tenth left free holds a few such
// changes: the first incremental sync of 1,000 changes to 100,000 folders
// after a full one wrote 1,950 pages with full pages, 1,560 with these
// (and about 1,800 against 1,570 five syncs later), for a tree a tenth
// larger.
const treeFill = 0.9

// releaseEvery is how many sets, folders or links a full sync writes
// between releases of the index's mapped pages. The pages a transaction
// reads are few, but the kernel maps the cached pages around each one too:
// where a tree replaces another, whose pages surround those written,
// writing 10,000 folders and comparing them with the old tree maps about
// 5 MB.
const releaseEvery = 10_000

// BeginFullSync creates an empty generation for the library's new tree.
func (db *DB) BeginFullSync(_ context.Context, libraryID string, _ fm.Fence) (fm.FullSyncWriter, error) {
	fs := &fullSync{db: db, libraryID: libraryID, sizes: map[fm.PermissionSetKey]int{},
		refs: map[fm.PermissionSetKey]uint64{}, drifted: []string{}, setsInOrder: true}
	err := db.update("begin a full sync of "+libraryID, func(tx *bbolt.Tx) error {
		lib, err := tx.Bucket(bucketLibraries).CreateBucketIfNotExists([]byte(libraryID))
		if err != nil {
			return err
		}
		if fs.prev, err = readLibraryRecord(lib); err != nil {
			return err
		}
		fs.generation = nextGeneration(lib)
		gen, err := lib.CreateBucket(generationKey(fs.generation))
		if err != nil {
			return err
		}
		_, err = createTree(gen)
		return err
	})
	if err != nil {
		return nil, err
	}
	return fs, nil
}

// nextGeneration returns a number above every generation the library holds.
func nextGeneration(lib *bbolt.Bucket) uint64 {
	var highest uint64
	_ = lib.ForEachBucket(func(name []byte) error {
		var g uint64
		if _, err := fmt.Sscanf(string(name), "g%x", &g); err == nil && isGeneration(name) && g > highest {
			highest = g
		}
		return nil
	})
	return highest + 1
}

// trees opens the new tree and the one being replaced (nil if none).
func (fs *fullSync) trees(tx *bbolt.Tx) (cur, old *tree, err error) {
	lib := tx.Bucket(bucketLibraries).Bucket([]byte(fs.libraryID))
	if lib == nil {
		return nil, nil, errors.New("library bucket vanished")
	}
	open := func(generation uint64) (*tree, error) {
		gen := lib.Bucket(generationKey(generation))
		if gen == nil {
			return nil, fmt.Errorf("generation %d vanished", generation)
		}
		return openTree(gen)
	}
	if cur, err = open(fs.generation); err != nil || fs.prev == nil {
		return cur, nil, err
	}
	old, err = open(fs.prev.Generation)
	return cur, old, err
}

func (fs *fullSync) check() error {
	if fs.done {
		return errors.New("full sync already finished")
	}
	return nil
}

// PutPermissionSets stores sets, without references yet (Commit counts
// them). Sets that come in ascending order of key, as the syncer puts them,
// are appended to packed pages; others are inserted where they belong.
func (fs *fullSync) PutPermissionSets(sets []fm.PermissionSet) error {
	if err := fs.check(); err != nil {
		return err
	}
	inOrder, last := fs.setsInOrder, fs.lastSet
	for i, s := range sets {
		if (len(fs.sizes) > 0 || i > 0) && bytes.Compare(s.Key[:], last[:]) <= 0 {
			inOrder = false
		}
		last = s.Key
	}
	err := fs.db.update("write permissions of "+fs.libraryID, func(tx *bbolt.Tx) error {
		t, _, err := fs.trees(tx)
		if err != nil {
			return err
		}
		if inOrder {
			t.permsets.FillPercent = treeFill
		}
		for _, s := range sets {
			if err := t.putUncounted(s.Key, fm.AppendPermissions(nil, s.Permissions)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	fs.setsInOrder, fs.lastSet = inOrder, last
	for _, s := range sets {
		fs.sizes[s.Key] = len(s.Permissions)
	}
	fs.releaseSometimes(len(sets))
	return nil
}

// PutFolders writes a batch of folders in one transaction, appended to
// packed pages, and counts how they differ from the old tree.
func (fs *fullSync) PutFolders(folders []fm.Folder) error {
	if err := fs.check(); err != nil {
		return err
	}
	if err := fs.checkOrder(folders); err != nil {
		return err
	}
	var drift fm.Drift
	var matched, perms int
	var drifted []string
	err := fs.db.update("write folders of "+fs.libraryID, func(tx *bbolt.Tx) error {
		t, old, err := fs.trees(tx)
		if err != nil {
			return err
		}
		t.folders.FillPercent = treeFill
		// The batch's keys and records in one buffer: bbolt keeps what it
		// is given until the transaction commits.
		buf := make([]byte, 0, batchRecordsSize(folders))
		for i := range folders {
			f := &folders[i]
			n, ok := fs.sizes[f.PermissionSet]
			if _, own := fs.sizes[f.OwnSet]; !ok || !own {
				return fmt.Errorf("folder %s refers to a permission set not put", f.ID)
			}
			perms += n
			start := len(buf)
			buf = append(buf, f.ID...)
			key := buf[start:len(buf):len(buf)]
			buf = appendFolder(buf, f)
			record := buf[len(key)+start : len(buf) : len(buf)]
			if err := t.folders.Put(key, record); err != nil {
				return err
			}
			if old == nil {
				continue
			}
			switch was := old.folders.Get(key); {
			case was == nil:
				drift.Added++
				drifted = append(drifted, f.ID)
			case !bytes.Equal(was, record):
				drift.Changed++
				matched++
				drifted = append(drifted, f.ID)
			default:
				matched++
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i := range folders {
		fs.refs[folders[i].PermissionSet]++
		fs.refs[folders[i].OwnSet]++
	}
	fs.lastID = folders[len(folders)-1].ID
	fs.folders += len(folders)
	fs.perms += perms
	fs.matched += matched
	fs.drift.Added += drift.Added
	fs.drift.Changed += drift.Changed
	if fs.drifted != nil {
		fs.drifted = append(fs.drifted, drifted...)
		if !fs.drift.Loggable() {
			fs.drifted = nil
		}
	}
	fs.releaseSometimes(len(folders))
	return nil
}

// batchRecordsSize is about the size of the keys and records of folders.
func batchRecordsSize(folders []fm.Folder) int {
	n := 0
	for i := range folders {
		n += len(folders[i].ID) + folderRecordSize(&folders[i])
	}
	return n
}

// checkOrder refuses folders that do not come in ascending order of ID.
func (fs *fullSync) checkOrder(folders []fm.Folder) error {
	if len(folders) == 0 {
		return errors.New("no folders to put")
	}
	last := fs.lastID
	for i := range folders {
		if fs.folders+i > 0 && folders[i].ID <= last {
			return fmt.Errorf("folder %s put after %s: folders must come in ascending order of ID", folders[i].ID, last)
		}
		last = folders[i].ID
	}
	return nil
}

// PutChildren writes links in one transaction, appended to packed pages.
func (fs *fullSync) PutChildren(links []fm.ChildLink) error {
	if err := fs.check(); err != nil {
		return err
	}
	last := fs.lastLink
	for _, l := range links {
		if compareLinks(l, last) <= 0 && last != (fm.ChildLink{}) {
			return fmt.Errorf("link %s→%s put after %s→%s: links must come in ascending order", l.ParentID, l.ChildID, last.ParentID, last.ChildID)
		}
		last = l
	}
	err := fs.db.update("write the tree of "+fs.libraryID, func(tx *bbolt.Tx) error {
		t, _, err := fs.trees(tx)
		if err != nil {
			return err
		}
		t.children.FillPercent = treeFill
		// The batch's keys in one buffer: bbolt keeps what it is given
		// until the transaction commits.
		size := 0
		for _, l := range links {
			size += len(l.ParentID) + 1 + len(l.ChildID)
		}
		buf := make([]byte, 0, size)
		for _, l := range links {
			start := len(buf)
			buf = appendChildKey(buf, l.ParentID, l.ChildID)
			if err := t.children.Put(buf[start:len(buf):len(buf)], nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	fs.lastLink = last
	fs.releaseSometimes(len(links))
	return nil
}

func compareLinks(a, b fm.ChildLink) int {
	if c := strings.Compare(a.ParentID, b.ParentID); c != 0 {
		return c
	}
	return strings.Compare(a.ChildID, b.ChildID)
}

// releaseSometimes releases the index's mapped pages once enough was written.
func (fs *fullSync) releaseSometimes(n int) {
	if fs.unreleased += n; fs.unreleased >= releaseEvery {
		fs.unreleased = 0
		fs.db.release()
	}
}

// refsBatch is how many sets' references writeRefs writes in a
// transaction.
const refsBatch = 2000

// writeRefs writes the references counted while folders were put, and
// drops the sets no folder refers to: in order of key, refsBatch sets a
// transaction, releasing the mapped pages read after each, so that neither
// the pages of every set nor a transaction rewriting them all are held at
// once.
func (fs *fullSync) writeRefs() error {
	keys := slices.SortedFunc(maps.Keys(fs.sizes), func(a, b fm.PermissionSetKey) int { return bytes.Compare(a[:], b[:]) })
	for batch := range slices.Chunk(keys, refsBatch) {
		err := fs.db.update("write the permissions of "+fs.libraryID, func(tx *bbolt.Tx) error {
			t, _, err := fs.trees(tx)
			if err != nil {
				return err
			}
			for _, key := range batch {
				if fs.refs[key] == 0 {
					if err := t.permsets.Delete(key[:]); err != nil {
						return err
					}
					continue
				}
				if err := t.setRefs(key, fs.refs[key]); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		fs.db.release()
	}
	return nil
}

// Commit writes the permission set references, then, in one transaction,
// the state, switching readers to the new tree, and the log of what
// drifted. The old tree is dropped afterwards. The revision grows from the
// replaced record's when the tree drifted or a field of the state readers
// see changed.
func (fs *fullSync) Commit(state fm.LibraryState) (fm.Drift, error) {
	if err := fs.check(); err != nil {
		return fm.Drift{}, err
	}
	if err := fs.writeRefs(); err != nil {
		return fm.Drift{}, err
	}
	removed, err := fs.removed()
	if err != nil {
		return fm.Drift{}, err
	}
	state = fm.LibraryState{ID: fs.libraryID, Folders: fs.folders, Permissions: fs.perms}.Adopt(state)
	var drift fm.Drift
	var rec *libraryRecord
	var old []byte
	err = fs.db.update("commit the full sync of "+fs.libraryID, func(tx *bbolt.Tx) error {
		lib := tx.Bucket(bucketLibraries).Bucket([]byte(fs.libraryID))
		if lib == nil {
			return errors.New("library bucket vanished")
		}
		prev, err := readLibraryRecord(lib)
		if err != nil {
			return err
		}
		if prev != nil {
			old = generationKey(prev.Generation)
		}
		rec, drift = fs.record(prev, retiredRevision(lib), state)
		if err := fs.log(lib, prev, rec, drift, removed); err != nil {
			return err
		}
		if err := lib.Delete(keyRetired); err != nil {
			return err
		}
		return lib.Put(keyState, encodeLibrary(rec))
	})
	if err != nil {
		return fm.Drift{}, err
	}
	fs.done = true
	fs.db.setLibrary(rec)
	if old != nil {
		fs.db.dropGeneration(fs.libraryID, old)
	}
	fs.db.release()
	return drift, nil
}

// record makes the library's new record, with the revision
// fm.LibraryState.NextRevision gives it: the tree changed if it drifted
// from the one it replaces, or was not compared with it. A first tree
// (prev nil) has the first revision, or, if the library was deleted, the
// one after its last (retired).
func (fs *fullSync) record(prev *libraryRecord, retired uint64, state fm.LibraryState) (*libraryRecord, fm.Drift) {
	rec := &libraryRecord{LibraryState: state, Generation: fs.generation}
	if prev == nil {
		rec.Revision = max(fm.FirstRevision, retired+1)
		rec.ChangeLog = fm.FreshLog(rec.Revision)
		return rec, fm.Drift{}
	}
	drift := fs.drift
	if fs.measured(prev) {
		drift.Removed = max(0, prev.Folders-fs.matched)
	}
	rec.Revision = prev.NextRevision(rec.LibraryState, !fs.measured(prev) || drift.Total() > 0)
	rec.ChangeLog = prev.ChangeLog
	return rec, drift
}

// measured tells whether the drift was measured against the tree prev
// points to: another tree may have replaced the one read at BeginFullSync.
func (fs *fullSync) measured(prev *libraryRecord) bool {
	return fs.prev != nil && fs.prev.Generation == prev.Generation
}

// removed returns the IDs of the old tree's folders the new one lacks, when
// the drift is small enough to be logged; nil otherwise.
func (fs *fullSync) removed() ([]string, error) {
	if fs.prev == nil {
		return nil, nil
	}
	drift := fs.drift
	drift.Removed = fs.prev.Folders - fs.matched
	if drift.Removed <= 0 || !drift.Loggable() {
		return nil, nil
	}
	var gone []string
	err := fs.db.bolt.View(func(tx *bbolt.Tx) error {
		cur, old, err := fs.trees(tx)
		if err != nil {
			return err
		}
		gone = removedBetween(old, cur)
		return nil
	})
	return gone, err
}

// log records what drifted under the new revision, or starts the log
// afresh when fm.KeepsLog says so, or when what drifted is not known: the
// tree was not compared with the one it replaces, or the folders removed
// were not listed.
func (fs *fullSync) log(lib *bbolt.Bucket, prev, rec *libraryRecord, drift fm.Drift, removed []string) error {
	if prev == nil || rec.Revision == prev.Revision {
		return nil
	}
	if !fs.measured(prev) || !fm.KeepsLog(prev.LibraryState, rec.LibraryState, drift) ||
		(drift.Removed > 0 && removed == nil) {
		return resetLog(lib, rec)
	}
	return appendLog(lib, rec, rec.Revision, append(fs.drifted, removed...))
}

// Abort drops the unfinished tree; after Commit it does nothing.
func (fs *fullSync) Abort() error {
	if fs.done {
		return nil
	}
	fs.done = true
	defer fs.db.release()
	return fs.db.dropGenerationErr(fs.libraryID, generationKey(fs.generation))
}

// dropGeneration deletes a generation nobody reads any more. A failure only
// costs space until the next Open, which drops it again, so it is logged.
func (db *DB) dropGeneration(libraryID string, name []byte) {
	if err := db.dropGenerationErr(libraryID, name); err != nil {
		db.logger.Warn("could not drop an old tree; it is dropped at the next start", "library", libraryID, "err", err)
	}
}

func (db *DB) dropGenerationErr(libraryID string, name []byte) error {
	defer db.releasing()()
	return db.update("drop a tree of "+libraryID, func(tx *bbolt.Tx) error {
		lib := tx.Bucket(bucketLibraries).Bucket([]byte(libraryID))
		if lib == nil || lib.Bucket(name) == nil {
			return nil
		}
		return lib.DeleteBucket(name)
	})
}

// DeleteLibrary removes all the index keeps of the library (its record,
// its trees, its change log) in one transaction, but its last revision
// (see retire); the pages that reads are released meanwhile, as when a
// tree is dropped. The fence is ignored, as by every write of an index one
// process holds alone.
func (db *DB) DeleteLibrary(_ context.Context, libraryID string, _ fm.Fence) error {
	defer db.releasing()()
	err := db.update("delete library "+libraryID, func(tx *bbolt.Tx) error {
		return retire(tx.Bucket(bucketLibraries), []byte(libraryID))
	})
	if err != nil {
		return err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	delete(db.libraries, libraryID)
	return nil
}

// retire replaces the bucket of a library (if any) with one that holds its
// last revision alone, under keyRetired: the first full sync of it again
// goes on from there (see retiredRevision).
func retire(libs *bbolt.Bucket, id []byte) error {
	lib := libs.Bucket(id)
	if lib == nil {
		return nil
	}
	rec, err := readLibraryRecord(lib)
	if err != nil {
		return err
	}
	last := retiredRevision(lib)
	if rec != nil {
		last = rec.Revision
	}
	if err := libs.DeleteBucket(id); err != nil {
		return err
	}
	if last == 0 {
		return nil
	}
	lib, err = libs.CreateBucket(id)
	if err != nil {
		return err
	}
	return lib.Put(keyRetired, binary.BigEndian.AppendUint64(nil, last))
}

// retiredRevision returns the last revision of a library deleted, 0 if
// none was.
func retiredRevision(lib *bbolt.Bucket) uint64 {
	v := lib.Get(keyRetired)
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}
