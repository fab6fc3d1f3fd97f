package index

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	fm "github.com/foldermirror/foldermirror"
	bolt "go.etcd.io/bbolt"
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
	// lastID is the highest folder ID written: batches in ascending order
	// are appended to packed pages.
	lastID string
	// children are the children entries, written sorted at Commit.
	children []childEntry
	// permsetRefs counts the folders referring to each permission set,
	// written at Commit.
	permsetRefs map[string]uint64
	done        bool
}

// childEntry is a children key and its value, the child's ID.
type childEntry struct{ key, id []byte }

// packedFill is how full pages written in key order are filled: they are
// not split again, as a tree written whole is then mostly read. Keys
// written out of order keep bbolt's default, which leaves room to insert.
const packedFill = 1.0

// childrenBatch is how many children entries one transaction of Commit
// writes.
const childrenBatch = 20_000

// BeginFullSync creates an empty generation for the library's new tree.
func (db *DB) BeginFullSync(_ context.Context, libraryID string) (fm.FullSyncWriter, error) {
	fs := &fullSync{db: db, libraryID: libraryID, permsetRefs: map[string]uint64{}}
	err := db.update("begin a full sync of "+libraryID, func(tx *bolt.Tx) error {
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
func nextGeneration(lib *bolt.Bucket) uint64 {
	var max uint64
	_ = lib.ForEachBucket(func(name []byte) error {
		var g uint64
		if _, err := fmt.Sscanf(string(name), "g%x", &g); err == nil && g > max {
			max = g
		}
		return nil
	})
	return max + 1
}

func (fs *fullSync) tree(tx *bolt.Tx) (*tree, error) {
	return fs.generationTree(tx, fs.generation)
}

// oldTree is the tree being replaced, nil if none.
func (fs *fullSync) oldTree(tx *bolt.Tx) (*tree, error) {
	if fs.prev == nil {
		return nil, nil
	}
	return fs.generationTree(tx, fs.prev.Generation)
}

func (fs *fullSync) generationTree(tx *bolt.Tx, generation uint64) (*tree, error) {
	lib := tx.Bucket(bucketLibraries).Bucket([]byte(fs.libraryID))
	if lib == nil {
		return nil, errors.New("library bucket vanished")
	}
	gen := lib.Bucket(generationKey(generation))
	if gen == nil {
		return nil, fmt.Errorf("generation %d vanished", generation)
	}
	return openTree(gen)
}

// Put writes a batch of folders in one transaction. Batches in ascending
// order of folder ID make a compact index.
func (fs *fullSync) Put(folders []fm.SyncedFolder) error {
	if fs.done {
		return errors.New("full sync already finished")
	}
	batch := sortedByID(folders)
	inOrder := len(batch) > 0 && batch[0].ID > fs.lastID
	refs := map[string]uint64{}
	var drift fm.Drift
	var matched int
	err := fs.db.update("write folders of "+fs.libraryID, func(tx *bolt.Tx) error {
		t, err := fs.tree(tx)
		if err != nil {
			return err
		}
		if inOrder {
			t.folders.FillPercent = packedFill
		}
		old, err := fs.oldTree(tx)
		if err != nil {
			return err
		}
		for _, sf := range batch {
			// References are counted here and written at Commit.
			permset, err := t.addPermset(sf.Permissions, 0)
			if err != nil {
				return err
			}
			refs[string(permset)]++
			if err := t.folders.Put([]byte(sf.ID), encodeFolder(&sf.Folder, permset)); err != nil {
				return err
			}
			if old != nil && compareFolder(t, old, sf.ID, &drift) {
				matched++
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(batch) > 0 {
		fs.lastID = max(fs.lastID, batch[len(batch)-1].ID)
	}
	for k, n := range refs {
		fs.permsetRefs[k] += n
	}
	for _, sf := range batch {
		if sf.ParentID != "" {
			fs.children = append(fs.children, childEntry{childKey(sf.ParentID, sf.Name, sf.ID), []byte(sf.ID)})
		}
	}
	fs.drift.Added += drift.Added
	fs.drift.Changed += drift.Changed
	fs.matched += matched
	for i := range folders {
		fs.perms += len(folders[i].Permissions)
	}
	fs.folders += len(folders)
	return nil
}

// compareFolder counts a folder of the new tree as added or changed against
// the old tree, and reports whether the old tree has it.
func compareFolder(t, old *tree, id string, drift *fm.Drift) bool {
	key := []byte(id)
	was := old.folders.Get(key)
	switch {
	case was == nil:
		drift.Added++
		return false
	case !bytes.Equal(was, t.folders.Get(key)):
		drift.Changed++
	}
	return true
}

// sortedByID returns the folders in ascending order of ID.
func sortedByID(folders []fm.SyncedFolder) []*fm.SyncedFolder {
	out := make([]*fm.SyncedFolder, len(folders))
	for i := range folders {
		out[i] = &folders[i]
	}
	slices.SortFunc(out, func(a, b *fm.SyncedFolder) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// putFolder writes a folder, a reference to its permissions and its
// children entry.
func (t *tree) putFolder(sf *fm.SyncedFolder) error {
	permset, err := t.addPermset(sf.Permissions, 1)
	if err != nil {
		return err
	}
	if err := t.folders.Put([]byte(sf.ID), encodeFolder(&sf.Folder, permset)); err != nil {
		return err
	}
	if sf.ParentID == "" {
		return nil
	}
	return t.children.Put(childKey(sf.ParentID, sf.Name, sf.ID), []byte(sf.ID))
}

// writePermsetRefs writes the references counted while folders were put.
func (fs *fullSync) writePermsetRefs() error {
	return fs.db.update("write the permissions of "+fs.libraryID, func(tx *bolt.Tx) error {
		t, err := fs.tree(tx)
		if err != nil {
			return err
		}
		for key, n := range fs.permsetRefs {
			if err := t.setPermsetRefs([]byte(key), n); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeChildren writes the children entries in key order, packed.
func (fs *fullSync) writeChildren() error {
	slices.SortFunc(fs.children, func(a, b childEntry) int { return bytes.Compare(a.key, b.key) })
	for start := 0; start < len(fs.children); start += childrenBatch {
		batch := fs.children[start:min(start+childrenBatch, len(fs.children))]
		err := fs.db.update("write the tree of "+fs.libraryID, func(tx *bolt.Tx) error {
			t, err := fs.tree(tx)
			if err != nil {
				return err
			}
			t.children.FillPercent = packedFill
			for _, c := range batch {
				if err := t.children.Put(c.key, c.id); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	fs.children = nil
	return nil
}

// Commit writes the children entries and permission set references, then,
// in one transaction, the state, switching readers to the new tree. The old
// tree is dropped afterwards. The revision grows from the replaced record's
// when the tree drifted or a field of the state readers see changed.
func (fs *fullSync) Commit(state fm.LibraryState) (fm.Drift, error) {
	if fs.done {
		return fm.Drift{}, errors.New("full sync already finished")
	}
	if err := fs.writeChildren(); err != nil {
		return fm.Drift{}, err
	}
	if err := fs.writePermsetRefs(); err != nil {
		return fm.Drift{}, err
	}
	state.ID = fs.libraryID
	state.Folders = fs.folders
	state.Permissions = fs.perms
	var drift fm.Drift
	var rec *libraryRecord
	var old []byte
	err := fs.db.update("commit the full sync of "+fs.libraryID, func(tx *bolt.Tx) error {
		lib := tx.Bucket(bucketLibraries).Bucket([]byte(fs.libraryID))
		if lib == nil {
			return errors.New("library bucket vanished")
		}
		prev, err := readLibraryRecord(lib)
		if err != nil {
			return err
		}
		drift = fs.drift
		state.Revision = 1
		if prev != nil {
			old = generationKey(prev.Generation)
			// The drift was measured against the tree read at BeginFullSync;
			// if another tree has replaced it since, the change is unknown.
			measured := fs.prev != nil && fs.prev.Generation == prev.Generation
			if measured {
				drift.Removed = max(0, prev.Folders-fs.matched)
			}
			state.Revision = prev.Revision
			if !measured || drift.Total() > 0 || readerVisibleChange(&prev.LibraryState, &state) {
				state.Revision++
			}
		}
		rec = &libraryRecord{LibraryState: state, Generation: fs.generation}
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
	return drift, nil
}

// Abort drops the unfinished tree; after Commit it does nothing.
func (fs *fullSync) Abort() error {
	if fs.done {
		return nil
	}
	fs.done = true
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
	return db.update("drop a tree of "+libraryID, func(tx *bolt.Tx) error {
		lib := tx.Bucket(bucketLibraries).Bucket([]byte(libraryID))
		if lib == nil || lib.Bucket(name) == nil {
			return nil
		}
		return lib.DeleteBucket(name)
	})
}
