package index

import (
	"bytes"
	"context"
	"slices"
	"strings"

	fm "github.com/foldermirror/foldermirror"
	bolt "go.etcd.io/bbolt"
)

var _ fm.IndexReader = (*DB)(nil)

// Library returns the state of a synced library; ENOTFOUND if never synced.
func (db *DB) Library(_ context.Context, libraryID string) (*fm.LibraryState, error) {
	rec := db.library(libraryID)
	if rec == nil {
		return nil, fm.Errorf(fm.ENOTFOUND, "Library %s has not been synced.", libraryID)
	}
	state := rec.LibraryState
	return &state, nil
}

// Folder returns one folder of a library, ENOTFOUND if the library has none such.
func (db *DB) Folder(_ context.Context, libraryID, folderID string) (*fm.Folder, error) {
	var f *fm.Folder
	err := db.bolt.View(func(tx *bolt.Tx) error {
		t, err := currentTree(tx, libraryID)
		if err != nil {
			return err
		}
		f, err = t.folder(folderID)
		return err
	})
	return f, err
}

// Permissions returns a folder's permissions in Drive's order.
func (db *DB) Permissions(_ context.Context, libraryID, folderID string) ([]fm.Permission, error) {
	var perms []fm.Permission
	err := db.bolt.View(func(tx *bolt.Tx) error {
		t, err := currentTree(tx, libraryID)
		if err != nil {
			return err
		}
		_, permset, err := t.folderRecord(folderID)
		if err != nil {
			return err
		}
		perms, err = t.permissions(permset)
		return err
	})
	return perms, err
}

func folderNotFound(id string) error {
	return fm.Errorf(fm.ENOTFOUND, "Folder %s not found.", id)
}

func (t *tree) folder(id string) (*fm.Folder, error) {
	f, _, err := t.folderAndSet(id)
	return f, err
}

// folderAndSet returns a folder, with its grants, and its permission set.
func (t *tree) folderAndSet(id string) (*fm.Folder, []byte, error) {
	f, permset, err := t.folderRecord(id)
	if err != nil {
		return nil, nil, err
	}
	f.Grants, err = t.grants(permset)
	return f, permset, err
}

// folderRecord returns a folder, without its grants, and its permission set.
func (t *tree) folderRecord(id string) (*fm.Folder, []byte, error) {
	v := t.folders.Get([]byte(id))
	if v == nil {
		return nil, nil, folderNotFound(id)
	}
	return decodeFolder(id, v)
}

// walkBudget bounds the folders one read transaction of a walk looks at, so
// that a walk of a large library holds the index only briefly at a time.
const walkBudget = 1024

// frame is the walk's position among the children of one parent.
type frame struct {
	prefix []byte   // children key prefix of the parent
	after  []byte   // last children key taken, nil before the first
	run    []string // IDs already put in order, taken before reading on
	depth  int
}

type walkItem struct {
	folder *fm.Folder
	depth  int
}

// Walk visits the descendants of parentID depth first, siblings ordered by
// lower-cased name then ID. It reads in short transactions of a bounded number
// of folders and calls yield between them, never inside one. A sync that
// commits while a walk is under way is seen from the next transaction on.
func (db *DB) Walk(ctx context.Context, libraryID, parentID string, pick fm.PickFunc, yield fm.YieldFunc) error {
	stack := []*frame{{prefix: childrenPrefix(parentID)}}
	var batch []walkItem
	for len(stack) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		batch = batch[:0]
		err := db.bolt.View(func(tx *bolt.Tx) error {
			t, err := currentTree(tx, libraryID)
			if err != nil {
				return err
			}
			stack, batch, err = t.walkSome(stack, batch, pick)
			return err
		})
		if err != nil {
			return err
		}
		for _, it := range batch {
			if err := yield(it.folder, it.depth); err != nil {
				return err
			}
		}
	}
	return nil
}

// walkSome advances the walk by at most walkBudget folders.
func (t *tree) walkSome(stack []*frame, batch []walkItem, pick fm.PickFunc) ([]*frame, []walkItem, error) {
	for seen := 0; seen < walkBudget && len(stack) > 0; seen++ {
		top := stack[len(stack)-1]
		id, ok, err := t.nextChild(top)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			stack = stack[:len(stack)-1]
			continue
		}
		f, err := t.folder(id)
		if err != nil {
			return nil, nil, err
		}
		emit, descend := pick(f, top.depth)
		if emit {
			batch = append(batch, walkItem{f, top.depth})
		}
		if descend {
			stack = append(stack, &frame{prefix: childrenPrefix(id), depth: top.depth + 1})
		}
	}
	return stack, batch, nil
}

// nextChild returns the ID of the frame's next child, in order.
func (t *tree) nextChild(fr *frame) (string, bool, error) {
	if len(fr.run) > 0 {
		id := fr.run[0]
		fr.run = fr.run[1:]
		return id, true, nil
	}
	c := t.children.Cursor()
	var k, v []byte
	if fr.after == nil {
		k, v = c.Seek(fr.prefix)
	} else if k, v = c.Seek(fr.after); bytes.Equal(k, fr.after) {
		k, v = c.Next()
	}
	if k == nil || !bytes.HasPrefix(k, fr.prefix) {
		return "", false, nil
	}
	part := keySortPart(k, fr.prefix, v)
	if len(part) < maxSortBytes {
		fr.after = bytes.Clone(k)
		return string(v), true, nil
	}
	return t.orderRun(c, fr, part, string(v), k)
}

// orderRun handles siblings whose names share their first maxSortBytes bytes:
// it reads them all and puts them in order by their whole names.
func (t *tree) orderRun(c *bolt.Cursor, fr *frame, part []byte, firstID string, firstKey []byte) (string, bool, error) {
	ids := []string{firstID}
	last := firstKey
	for k, v := c.Next(); k != nil && bytes.HasPrefix(k, fr.prefix) && bytes.Equal(keySortPart(k, fr.prefix, v), part); k, v = c.Next() {
		ids = append(ids, string(v))
		last = k
	}
	fr.after = bytes.Clone(last)
	names := make(map[string]string, len(ids))
	for _, id := range ids {
		f, err := t.folder(id)
		if err != nil {
			return "", false, err
		}
		names[id] = sortName(f.Name)
	}
	slices.SortFunc(ids, func(a, b string) int {
		if c := strings.Compare(names[a], names[b]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	fr.run = ids[1:]
	return ids[0], true, nil
}

// Snapshot returns every folder of a library with its permissions, sorted by
// ID, read in one transaction. It is meant for checks and tests: a large
// library holds a read transaction open while it is read.
func (db *DB) Snapshot(_ context.Context, libraryID string) ([]fm.SyncedFolder, error) {
	var out []fm.SyncedFolder
	err := db.bolt.View(func(tx *bolt.Tx) error {
		t, err := currentTree(tx, libraryID)
		if err != nil {
			return err
		}
		return t.folders.ForEach(func(k, _ []byte) error {
			f, permset, err := t.folderAndSet(string(k))
			if err != nil {
				return err
			}
			perms, err := t.permissions(permset)
			if err != nil {
				return err
			}
			out = append(out, fm.SyncedFolder{Folder: *f, Permissions: perms})
			return nil
		})
	})
	return out, err
}
