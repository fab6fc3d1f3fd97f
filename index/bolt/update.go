package bolt

import (
	"bytes"
	"context"
	"maps"
	"slices"

	fm "github.com/foldermirror/foldermirror"
	bbolt "go.etcd.io/bbolt"
)

// UpdateLibrary runs fn on the library's current tree in one write
// transaction: all of fn's changes, its new state and the log of the
// folders it touched are written together, or, when fn fails, none. The
// revision grows by one if fn wrote to the tree or changed a field of the
// state readers see.
func (db *DB) UpdateLibrary(_ context.Context, libraryID string, _ fm.Fence, fn func(fm.LibraryTx) error) error {
	var rec *libraryRecord
	err := db.update("update library "+libraryID, func(tx *bbolt.Tx) error {
		t, lib, old, err := currentLibrary(tx, libraryID)
		if err != nil {
			return err
		}
		ltx := &libraryTx{tree: t, rec: *old, touched: map[string]bool{}, known: map[string]*fm.Folder{},
			lists: map[fm.PermissionSetKey][]fm.Permission{}, sets: map[fm.PermissionSetKey]*pendingSet{},
			folderAt: t.folders.Cursor(), setAt: t.permsets.Cursor(), childAt: t.children.Cursor()}
		if err := fn(ltx); err != nil {
			return err
		}
		if err := ltx.writeSets(); err != nil {
			return err
		}
		rec = &ltx.rec
		rec.Revision = old.NextRevision(rec.LibraryState, len(ltx.touched) > 0)
		if rec.Revision == old.Revision {
			return lib.Put(keyState, encodeLibrary(rec))
		}
		ids := make([]string, 0, len(ltx.touched))
		for id := range ltx.touched {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		if err := appendLog(lib, rec, rec.Revision, ids); err != nil {
			return err
		}
		return lib.Put(keyState, encodeLibrary(rec))
	})
	if err != nil {
		return err
	}
	db.setLibrary(rec)
	return nil
}

// libraryTx implements fm.LibraryTx on a tree within a write transaction.
type libraryTx struct {
	*tree
	rec libraryRecord
	// touched are the folders written or removed.
	touched map[string]bool
	// known are folders as the transaction has them, decoded, once read or
	// written (nil: none such), up to maxKnown; lists are the permission
	// lists read, by key (a key's list never changes). An update reads the
	// folders it writes, and their parents, several times over.
	known map[string]*fm.Folder
	lists map[fm.PermissionSetKey][]fm.Permission
	// seeded are the folders its caller read at its revision (Seed),
	// behind known: a folder written is known as written. They are
	// forgotten with known.
	seeded map[string]*fm.Folder
	// encoded and encodedOwn are the encodings of the lists Put writes,
	// kept for the next.
	encoded, encodedOwn []byte
	// sets are the permission sets whose references the transaction
	// changed, as they are now, written once each at its end (writeSets):
	// the sets most folders share change many times in an update.
	sets map[fm.PermissionSetKey]*pendingSet
	// folderAt, setAt and childAt read folders, sets and children (see
	// get).
	folderAt, setAt, childAt *bbolt.Cursor
	// key holds the last children key made (childKey): bbolt copies the
	// keys it keeps.
	key []byte
}

// childKey returns the children key of a parent and child, in l.key.
func (l *libraryTx) childKey(parentID, childID string) []byte {
	l.key = appendChildKey(l.key[:0], parentID, childID)
	return l.key
}

// pendingSet is a permission set as a libraryTx has it: its references, its
// encoded list, whether the tree stores it, and with how many references.
type pendingSet struct {
	refs, storedRefs uint64
	list             []byte
	stored           bool
}

// maxKnown bounds the folders and lists a libraryTx keeps decoded: past
// it, it forgets them all.
const maxKnown = 10_000

var _ fm.LibrarySeeder = (*libraryTx)(nil)

// Seed takes the folders given, read at revision, if the library is at
// that revision still (its tree has not changed since, nor has the
// transaction written) and they are not too many to keep.
func (l *libraryTx) Seed(revision uint64, folders map[string]*fm.Folder) {
	if revision != l.rec.Revision || len(l.touched) > 0 || len(folders) > maxKnown {
		return
	}
	l.seeded = folders
}

func (l *libraryTx) State() fm.LibraryState { return l.rec.LibraryState }

// SetState keeps the ID, counts and revision, which the index maintains.
func (l *libraryTx) SetState(s fm.LibraryState) { l.rec.LibraryState = l.rec.Adopt(s) }

// Folder returns a copy of the folder as the transaction has it.
func (l *libraryTx) Folder(id string) (*fm.Folder, error) {
	f, err := l.stored(id)
	if err != nil {
		return nil, err
	}
	if f == nil {
		return nil, folderNotFound(id)
	}
	c := *f
	return &c, nil
}

// Permissions returns a folder's lists, which its caller must not change:
// they are shared with the other callers of the same lists.
func (l *libraryTx) Permissions(id string) (perms, own []fm.Permission, err error) {
	f, err := l.stored(id)
	if err != nil {
		return nil, nil, err
	}
	if f == nil {
		return nil, nil, folderNotFound(id)
	}
	if perms, err = l.list(f.PermissionSet); err != nil {
		return nil, nil, err
	}
	own, err = l.list(f.OwnSet)
	return perms, own, err
}

// list returns the list of a set, decoded once.
func (l *libraryTx) list(key fm.PermissionSetKey) ([]fm.Permission, error) {
	if perms, ok := l.lists[key]; ok {
		return perms, nil
	}
	var perms []fm.Permission
	var err error
	if s, ok := l.sets[key]; !ok {
		perms, err = setList(get(l.setAt, key[:]))
	} else if s.refs == 0 {
		err = fm.Errorf(fm.ENOTFOUND, "Permission set not found.")
	} else {
		perms, err = fm.DecodePermissions(s.list)
	}
	if err != nil {
		return nil, err
	}
	if len(l.lists) >= maxKnown {
		clear(l.lists)
	}
	l.lists[key] = perms
	return perms, nil
}

func (l *libraryTx) Children(id string) ([]string, error) {
	var ids []string
	prefix := l.childKey(id, "") // the prefix of id's children keys
	for k, _ := l.childAt.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = l.childAt.Next() {
		ids = append(ids, string(k[len(prefix):]))
	}
	return ids, nil
}

// Put writes what differs from the folder's record, if it has one: the
// record, its children entry, the references to its permission sets. A
// write rewrites the pages it touches at the commit, so one that changes
// nothing is left out.
func (l *libraryTx) Put(sf fm.SyncedFolder) error {
	l.encoded = fm.AppendPermissions(l.encoded[:0], sf.Permissions)
	l.encodedOwn = fm.AppendPermissions(l.encodedOwn[:0], sf.OwnPermissions)
	sf.PermissionSet, sf.OwnSet = fm.KeyOf(l.encoded), fm.KeyOf(l.encodedOwn)
	old, err := l.stored(sf.ID)
	if err != nil {
		return err
	}
	if old == nil {
		l.rec.Folders++
		old = &fm.Folder{ID: sf.ID}
	}
	l.touched[sf.ID] = true
	if old.PermissionSet != sf.PermissionSet {
		n, err := l.swapSet(old.PermissionSet, sf.PermissionSet, l.encoded)
		if err != nil {
			return err
		}
		l.rec.Permissions += len(sf.Permissions) - n
	}
	if old.OwnSet != sf.OwnSet {
		if _, err := l.swapSet(old.OwnSet, sf.OwnSet, l.encodedOwn); err != nil {
			return err
		}
	}
	return l.rewrite(old, &sf.Folder)
}

// Replace rewrites a folder's record but for its permission sets, which it
// keeps.
func (l *libraryTx) Replace(f *fm.Folder) error {
	old, err := l.stored(f.ID)
	if err != nil {
		return err
	}
	if old == nil {
		return folderNotFound(f.ID)
	}
	l.touched[f.ID] = true
	kept := *f
	kept.PermissionSet, kept.OwnSet = old.PermissionSet, old.OwnSet
	return l.rewrite(old, &kept)
}

// stored returns a folder as the transaction has it, nil if none; the
// caller must not change it.
func (l *libraryTx) stored(id string) (*fm.Folder, error) {
	if f, ok := l.known[id]; ok {
		return f, nil
	}
	if f, ok := l.seeded[id]; ok {
		return f, nil
	}
	var f *fm.Folder
	if v := getFolder(l.folderAt, id); v != nil {
		f = &fm.Folder{}
		if err := decodeFolder(f, id, v); err != nil {
			return nil, err
		}
	}
	l.know(id, f)
	return f, nil
}

// know records a folder as the transaction now has it (nil: none).
func (l *libraryTx) know(id string, f *fm.Folder) {
	if _, ok := l.known[id]; !ok && len(l.known) >= maxKnown {
		clear(l.known)
		l.seeded = nil
	}
	l.known[id] = f
}

// swapSet moves a folder's reference from the set from (none if zero) to
// the set to, whose encoded list is list; it returns the number of
// permissions of from.
func (l *libraryTx) swapSet(from, to fm.PermissionSetKey, list []byte) (int, error) {
	n := 0
	if from != (fm.PermissionSetKey{}) {
		var err error
		if n, err = l.dropSet(from); err != nil {
			return 0, err
		}
	}
	s := l.set(to)
	if s.refs == 0 && !s.stored {
		s.list = bytes.Clone(list)
	}
	s.refs++
	return n, nil
}

// dropSet removes a reference to a set, which goes with its last one; it
// returns the number of permissions in the set.
func (l *libraryTx) dropSet(key fm.PermissionSetKey) (int, error) {
	s := l.set(key)
	if s.refs == 0 {
		return 0, errCorrupt
	}
	s.refs--
	return fm.PermissionCount(s.list), nil
}

// set returns a set as the transaction has it, read from the tree the
// first time (no references and no list: none stored).
func (l *libraryTx) set(key fm.PermissionSetKey) *pendingSet {
	s, ok := l.sets[key]
	if !ok {
		s = &pendingSet{}
		if v := get(l.setAt, key[:]); v != nil {
			s.refs, s.list = splitPermset(v)
			s.storedRefs, s.stored = s.refs, true
		}
		l.sets[key] = s
	}
	return s
}

// writeSets writes the sets whose references changed, in order of key:
// a set with references left with its new count, one with none deleted.
func (l *libraryTx) writeSets() error {
	keys := slices.SortedFunc(maps.Keys(l.sets), func(a, b fm.PermissionSetKey) int { return bytes.Compare(a[:], b[:]) })
	for _, key := range keys {
		s := l.sets[key]
		switch {
		case s.stored && s.refs == s.storedRefs:
		case s.refs > 0:
			if err := l.permsets.Put(key[:], joinPermset(s.refs, s.list)); err != nil {
				return err
			}
		case s.stored:
			if err := l.permsets.Delete(key[:]); err != nil {
				return err
			}
		}
	}
	return nil
}

// rewrite writes f's record and children entry where they differ from
// old's (old.ParentID "" and no set: a new folder).
func (l *libraryTx) rewrite(old, f *fm.Folder) error {
	if old.ParentID != f.ParentID {
		if old.ParentID != "" {
			if err := l.children.Delete(l.childKey(old.ParentID, f.ID)); err != nil {
				return err
			}
		}
		if f.ParentID != "" {
			if err := l.children.Put(l.childKey(f.ParentID, f.ID), nil); err != nil {
				return err
			}
		}
	}
	if *old == *f {
		return nil
	}
	kept := *f
	l.know(f.ID, &kept)
	return l.folders.Put(idKey(f.ID), encodeFolder(f))
}

func (l *libraryTx) Delete(id string) error {
	_, err := l.unlink(id)
	return err
}

// unlink removes a folder's record, children entry and references to its
// permission sets, and takes them out of the counts; it returns the
// removed folder, nil if none.
func (l *libraryTx) unlink(id string) (*fm.Folder, error) {
	old, err := l.stored(id)
	if old == nil || err != nil {
		return nil, err
	}
	l.touched[id] = true
	if old.ParentID != "" {
		if err := l.children.Delete(l.childKey(old.ParentID, id)); err != nil {
			return nil, err
		}
	}
	n, err := l.dropSet(old.PermissionSet)
	if err != nil {
		return nil, err
	}
	if _, err := l.dropSet(old.OwnSet); err != nil {
		return nil, err
	}
	l.rec.Permissions -= n
	l.rec.Folders--
	l.know(id, nil)
	return old, l.folders.Delete(idKey(id))
}
