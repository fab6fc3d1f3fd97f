package postgres

import (
	"errors"
	"fmt"
	"slices"

	fm "github.com/foldermirror/foldermirror"
	"github.com/jackc/pgx/v5"
)

// The reads of an update (libraryTx): from the overlay when it knows the
// answer, else from the database, remembered.

var _ fm.LibraryPrefetcher = (*libraryTx)(nil)

// ready returns why the update failed, if it did; when the overlay knows
// limits.folders folders, it sends the writes queued and forgets them.
func (l *libraryTx) ready() error {
	if l.err != nil || len(l.known.folders) < l.limits.folders {
		return l.err
	}
	if err := l.send(); err != nil {
		return err
	}
	l.known = newOverlay()
	return nil
}

func (l *libraryTx) Folder(id string) (*fm.Folder, error) {
	if err := l.ready(); err != nil {
		return nil, err
	}
	if f, known := l.known.folder(id); known {
		if f == nil {
			return nil, folderNotFound(id)
		}
		return f, nil
	}
	f, err := readFolder(l.ctx, l.tx, &l.rec, id)
	if fm.ErrorCode(err) == fm.ENOTFOUND {
		l.known.learnAbsent(id)
	}
	if err != nil {
		return nil, err
	}
	l.known.learn(f)
	return f, nil
}

// Permissions reads what the overlay does not know in one round trip:
// the folder with its lists, or the lists of a folder known.
func (l *libraryTx) Permissions(id string) (perms, own []fm.Permission, err error) {
	if err := l.ready(); err != nil {
		return nil, nil, err
	}
	f, known := l.known.folder(id)
	switch {
	case !known:
		if f, err = l.readWithLists(id); err != nil {
			return nil, nil, err
		}
	case f == nil:
		return nil, nil, folderNotFound(id)
	default:
		if err := l.readLists(f.PermissionSet, f.OwnSet); err != nil {
			return nil, nil, err
		}
	}
	perms, _ = l.known.list(f.PermissionSet)
	own, _ = l.known.list(f.OwnSet)
	return perms, own, nil
}

// readWithLists reads a folder the overlay does not know, with its two
// lists.
func (l *libraryTx) readWithLists(id string) (*fm.Folder, error) {
	var list, ownList []byte
	f, err := scanFolder(l.tx.QueryRow(l.ctx, "SELECT "+folderColumnsOf("f")+`, s.list, o.list FROM folders f
		JOIN permission_sets s ON s.library = f.library AND s.generation = f.generation AND s.key = f.permission_set
		JOIN permission_sets o ON o.library = f.library AND o.generation = f.generation AND o.key = f.own_set
		WHERE f.library = $1 AND f.generation = $2 AND f.id = $3`, l.rec.ID, l.rec.Generation, id), &list, &ownList)
	if errors.Is(err, pgx.ErrNoRows) {
		l.known.learnAbsent(id)
		return nil, folderNotFound(id)
	}
	if err != nil {
		return nil, err
	}
	for _, s := range []struct {
		key     fm.PermissionSetKey
		encoded []byte
	}{{f.PermissionSet, list}, {f.OwnSet, ownList}} {
		perms, err := fm.DecodePermissions(s.encoded)
		if err != nil {
			return nil, err
		}
		l.known.setList(s.key, perms)
	}
	l.known.learn(f)
	return f, nil
}

// readLists reads the lists of keys the overlay does not know. Every set
// a folder refers to is in the database, or the overlay knows it (put in
// this update): sets go only once the update is over (dropUnreferenced).
func (l *libraryTx) readLists(keys ...fm.PermissionSetKey) error {
	var missing [][]byte
	asked := map[fm.PermissionSetKey]bool{}
	for _, k := range keys {
		if _, ok := l.known.lists[k]; !ok && !asked[k] {
			asked[k] = true
			missing = append(missing, k[:])
		}
	}
	if len(missing) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	queueLookups(b, l, listsByKey, missing, l.learnLists)
	if err := l.tx.SendBatch(l.ctx, b).Close(); err != nil {
		return err
	}
	for k := range asked {
		if _, ok := l.known.lists[k]; !ok {
			return fmt.Errorf("permission set %x of library %s: %w", k, l.rec.ID, fm.ErrCorrupt)
		}
	}
	return nil
}

// lookupSize is the most IDs or keys a statement looks up: PostgreSQL
// plans a lookup of many more as a scan of the whole table.
const lookupSize = 500

// Lookups of rows ($3: IDs or keys) in the library's tree ($1, $2): of
// folders by ID or by parent, of lists by key.
var (
	foldersByID = "SELECT " + folderColumnsOf("f") +
		" FROM unnest($3::text[]) u(id) JOIN folders f ON f.library = $1 AND f.generation = $2 AND f.id = u.id"
	foldersByParent = "SELECT " + folderColumnsOf("f") +
		" FROM unnest($3::text[]) u(id) JOIN folders f ON f.library = $1 AND f.generation = $2 AND f.parent_id = u.id"
	listsByKey = "SELECT s.key, s.list FROM unnest($3::bytea[]) u(key) JOIN permission_sets s ON s.library = $1 AND s.generation = $2 AND s.key = u.key"
)

// queueLookups queues the lookups of items, lookupSize a statement, each
// answer to fn.
func queueLookups[T any](b *pgx.Batch, l *libraryTx, sql string, items []T, fn func(pgx.Rows) error) {
	for part := range slices.Chunk(items, lookupSize) {
		b.Queue(sql, l.rec.ID, l.rec.Generation, part).Query(fn)
	}
}

// learnLists records the lists of rows of keys and lists.
func (l *libraryTx) learnLists(rows pgx.Rows) error {
	defer rows.Close()
	for rows.Next() {
		var key, list []byte
		if err := rows.Scan(&key, &list); err != nil {
			return err
		}
		perms, err := fm.DecodePermissions(list)
		if err != nil {
			return err
		}
		l.known.setList(fm.PermissionSetKey(key), perms)
	}
	return rows.Err()
}

// learnFolders records the folders of rows of folderColumns.
func (l *libraryTx) learnFolders(rows pgx.Rows) error {
	defer rows.Close()
	for rows.Next() {
		f, err := scanFolder(rows)
		if err != nil {
			return err
		}
		l.known.learn(f)
	}
	return rows.Err()
}

// Children reads, unless the overlay knows them all, the folders whose
// row names id as parent.
func (l *libraryTx) Children(id string) ([]string, error) {
	if err := l.ready(); err != nil {
		return nil, err
	}
	if kids, ok := l.known.kids(id); ok {
		return kids, nil
	}
	rows, err := l.tx.Query(l.ctx, "SELECT "+folderColumns+" FROM folders WHERE library = $1 AND generation = $2 AND parent_id = $3",
		l.rec.ID, l.rec.Generation, id)
	if err != nil {
		return nil, err
	}
	if err := l.learnFolders(rows); err != nil {
		return nil, err
	}
	l.known.complete[id] = true
	kids, _ := l.known.kids(id)
	return kids, nil
}

// Prefetch reads the folders and children the overlay does not know in
// one round trip, and then the lists they refer to that it does not know
// in another.
func (l *libraryTx) Prefetch(ids, parents []string) error {
	if err := l.ready(); err != nil {
		return err
	}
	ids = slices.Compact(slices.Sorted(slices.Values(slices.DeleteFunc(slices.Clone(ids), func(id string) bool {
		_, known := l.known.folders[id]
		return known
	}))))
	parents = slices.Compact(slices.Sorted(slices.Values(slices.DeleteFunc(slices.Clone(parents), func(id string) bool {
		return l.known.complete[id]
	}))))
	b := &pgx.Batch{}
	queueLookups(b, l, foldersByID, ids, l.learnFolders)
	queueLookups(b, l, foldersByParent, parents, l.learnFolders)
	if err := l.tx.SendBatch(l.ctx, b).Close(); err != nil {
		return err
	}
	var keys []fm.PermissionSetKey
	for _, id := range ids {
		l.known.learnAbsent(id)
		if f := l.known.folders[id]; f != nil {
			keys = append(keys, f.PermissionSet, f.OwnSet)
		}
	}
	for _, id := range parents {
		l.known.complete[id] = true
		for k := range l.known.children[id] {
			f := l.known.folders[k]
			keys = append(keys, f.PermissionSet, f.OwnSet)
		}
	}
	return l.readLists(keys...)
}
