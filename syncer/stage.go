package syncer

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/internal/intern"
	drive "google.golang.org/api/drive/v3"
)

// A full sync lists every folder of a library before it knows which belong
// to it and where (a parent may come after its children). It stages what
// it lists compactly, so that its memory is a few dozen bytes a folder
// rather than Go objects for every folder and permission: the folder IDs,
// interned, with each folder's first parent, flags and permission sets in
// an array of chunks; its name, resource key and definition, and each distinct
// permission list, in a temporary file, read back when the tree is written.

// none is the number of no folder or set.
const none = ^uint32(0)

// Folder flags.
const (
	flagListed          = 1 << iota // the listing gave the folder (not only named it as a parent)
	flagOwnRestricted               // Drive restricts downloads by readers on the folder itself
	flagWritersCanShare             // Drive's writersCanShare
	flagInherits                    // a shared-drive folder with no permission of its own
	flagRestricted                  // restricted on the folder or an ancestor (set when placed)
	flagOpaque                      // its list does not follow from its parent's alone (isOpaque)
)

// stagedFolder is what a stage keeps of a folder in memory: 24 bytes.
type stagedFolder struct {
	// record is where its record is in the file: the offset, shifted left
	// by recordSizeBits, and the length (see recordAt).
	record uint64
	// parent is the first parent listed, then, once placed, its parent in
	// the library (none for the root).
	parent uint32
	set    uint32 // its permission set, none while unknown
	own    uint32 // its own permissions' set
	flags  uint8
}

// recordSizeBits is how many bits of stagedFolder.record hold the length
// of a record, which leaves 40 for its offset: records of up to 16 MiB in
// a file of up to 1 TiB.
const recordSizeBits = 24

// recordAt returns a stagedFolder.record: the record of size bytes at off.
func recordAt(off int64, size uint32) (uint64, error) {
	if size >= 1<<recordSizeBits || uint64(off) >= 1<<(64-recordSizeBits) {
		return 0, fmt.Errorf("full sync: a folder's record of %d bytes at %d is past what its temporary file can hold", size, off)
	}
	return uint64(off)<<recordSizeBits | uint64(size), nil
}

// folderChunkBits sizes the chunks a stage keeps its folders in: 2¹⁶
// folders, 1.5 MiB. They grow a chunk at a time, never copied as a slice
// growing by append is, which holds the old array and the new at once, the
// last time near the end of the listing, when the heap is largest.
const folderChunkBits = 16

// stagedFolders are a stage's folders, by number.
type stagedFolders struct {
	chunks [][]stagedFolder
	n      int
}

// len returns the number of folders.
func (a *stagedFolders) len() int { return a.n }

// at returns folder n.
func (a *stagedFolders) at(n uint32) *stagedFolder {
	return &a.chunks[n>>folderChunkBits][n&(1<<folderChunkBits-1)]
}

// add adds a folder, numbered len() before.
func (a *stagedFolders) add(f stagedFolder) {
	if a.n&(1<<folderChunkBits-1) == 0 {
		a.chunks = append(a.chunks, make([]stagedFolder, 1<<folderChunkBits))
	}
	*a.at(uint32(a.n)) = f
	a.n++
}

// stagedSet is a distinct permission list, in the file.
type stagedSet struct {
	key    fm.PermissionSetKey
	offset int64
	size   uint32
}

// stage holds a full sync's listing. Folders are numbered as their IDs are
// first met. While folders are listed, permission readers stage sets at
// the same time: add, addSet, setPermissions and needsPermissions may be
// called at once; the others, once the listing and the reading are over.
type stage struct {
	mu      sync.Mutex // guards what add, addSet and setPermissions change
	ids     *intern.Table
	folders stagedFolders
	// more are the parents of folders with several, past the first.
	more map[uint32][]uint32
	file *os.File
	w    *bufio.Writer
	end  int64 // the file's size, what w holds included

	sets    []stagedSet
	setOf   map[fm.PermissionSetKey]uint32
	scratch []byte
	// mapped is the file mapped into memory, for the tree's writing.
	mapped []byte
	// known are the sets of permission lists staged already, by the list
	// (see knownSets).
	known map[knownList]stagedSets
}

// newStage returns a stage whose file is in dir (a full sync's is in the
// system's temporary directory, $TMPDIR), sized for about folders folders
// (0 if unknown): those of the tree a full sync replaces. The file is
// removed at once: it goes with the process, whatever becomes of it.
func newStage(dir string, folders int) (*stage, error) {
	f, err := os.CreateTemp(dir, ".foldermirror-sync-*")
	if err != nil {
		return nil, fmt.Errorf("full sync: create its temporary file in %s: %w", dir, err)
	}
	if err := os.Remove(f.Name()); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("full sync: %w", err)
	}
	expect := folders + folders/10 // room for some growth
	return &stage{ids: intern.NewChunked(max(expect, 1024)), more: map[uint32][]uint32{}, file: f,
		w: bufio.NewWriterSize(f, 256<<10), setOf: map[fm.PermissionSetKey]uint32{}, known: map[knownList]stagedSets{}}, nil
}

// close releases the stage's file.
func (s *stage) close() error { return errors.Join(s.unmapFile(), s.file.Close()) }

// number returns the number of an ID, numbering it if it is new. The IDs
// are kept in chunks (intern.NewChunked): a first sync, which cannot tell
// how many it will meet, numbers them without copying them as the table
// grows, the last time near the end of the listing, when the heap is
// largest.
func (s *stage) number(id string) uint32 {
	n, added := s.ids.Intern(id)
	if added {
		s.folders.add(stagedFolder{parent: none, set: none, own: none})
	}
	return n
}

// add stages a listed folder; false if it was listed already (a listing
// may repeat an item), when the first is kept.
func (s *stage) add(f *drive.File, flags uint8) (uint32, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.number(f.Id)
	if s.folders.at(n).flags&flagListed != 0 {
		return n, false, nil
	}
	off, size, err := s.append(f.Name, f.ResourceKey, f.AppProperties[folderDefinitionProperty])
	if err != nil {
		return 0, false, err
	}
	record, err := recordAt(off, size)
	if err != nil {
		return 0, false, err
	}
	sf := s.folders.at(n)
	sf.record, sf.flags = record, flags|flagListed
	for _, p := range f.Parents {
		if p == f.Id {
			continue
		}
		pn := s.number(p)
		if sf.parent == none {
			sf.parent = pn
		} else {
			s.more[n] = append(s.more[n], pn)
		}
	}
	return n, true, nil
}

// append writes strings to the file as one record.
func (s *stage) append(fields ...string) (int64, uint32, error) {
	start := s.end
	for _, f := range fields {
		var l [binary.MaxVarintLen64]byte
		k := binary.PutUvarint(l[:], uint64(len(f)))
		if _, err := s.w.Write(l[:k]); err != nil {
			return 0, 0, s.writeError(err)
		}
		if _, err := s.w.WriteString(f); err != nil {
			return 0, 0, s.writeError(err)
		}
		s.end += int64(k + len(f))
	}
	return start, uint32(s.end - start), nil
}

func (s *stage) writeError(err error) error {
	return fmt.Errorf("full sync: write its temporary file in %s: %w", s.file.Name(), err)
}

// addSet stages a permission list and returns its set's number; equal
// lists share one.
func (s *stage) addSet(perms []fm.Permission) (uint32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scratch = fm.AppendPermissions(s.scratch[:0], perms)
	key := fm.KeyOf(s.scratch)
	if n, ok := s.setOf[key]; ok {
		return n, nil
	}
	if _, err := s.w.Write(s.scratch); err != nil {
		return 0, s.writeError(err)
	}
	n := uint32(len(s.sets))
	s.sets = append(s.sets, stagedSet{key: key, offset: s.end, size: uint32(len(s.scratch))})
	s.end += int64(len(s.scratch))
	s.setOf[key] = n
	return n, nil
}

// knownList is a permission list as the listing's decoder gave it: folders
// with the same list share one (drivelist), which the key holds (the same
// slice, not an equal one: its first element and length; lists of their
// own may share their permissions).
type knownList struct {
	first  **drive.Permission
	n      int
	opaque bool
}

// stagedSets are the sets a permission list was staged as, and its
// oddities.
type stagedSets struct {
	set, own uint32
	counts   permissionCounts
}

// maxKnownLists bounds the lists a stage remembers: lists not shared (the
// client library's decoding makes each anew) would otherwise add up.
const maxKnownLists = 1 << 10

// knownSets returns the sets perms was staged as for a folder of the same
// opacity, if it was.
func (s *stage) knownSets(perms []*drive.Permission, opaque bool) (stagedSets, bool) {
	if len(perms) == 0 {
		return stagedSets{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sets, ok := s.known[knownList{first: &perms[0], n: len(perms), opaque: opaque}]
	return sets, ok
}

// rememberSets keeps the sets perms was staged as.
func (s *stage) rememberSets(perms []*drive.Permission, opaque bool, sets stagedSets) {
	if len(perms) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.known) >= maxKnownLists {
		clear(s.known)
	}
	s.known[knownList{first: &perms[0], n: len(perms), opaque: opaque}] = sets
}

// needsPermissions tells whether a folder's permissions are still to be
// read: they are unknown, and it does not only inherit.
func (s *stage) needsPermissions(n uint32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.folders.at(n)
	return f.set == none && f.flags&flagInherits == 0
}

// hasFlags tells whether a folder has all of flags.
func (s *stage) hasFlags(n uint32, flags uint8) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.folders.at(n).flags&flags == flags
}

// setPermissions gives a folder its permission sets.
func (s *stage) setPermissions(n, set, own uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.folders.at(n)
	f.set, f.own = set, own
}

// flush writes out what the file's buffer holds, so that it can be read.
func (s *stage) flush() error {
	if err := s.w.Flush(); err != nil {
		return s.writeError(err)
	}
	return nil
}

// read reads a record of the file (after flush) into buf.
func (s *stage) read(buf []byte, off int64, size uint32) ([]byte, error) {
	return s.readAppend(buf[:0], off, size)
}

// readAppend reads a record of the file (after flush) and appends it to
// buf: from the file's map, if it is mapped (mapFile) and holds it, else
// with a system call.
func (s *stage) readAppend(buf []byte, off int64, size uint32) ([]byte, error) {
	if end := off + int64(size); end <= int64(len(s.mapped)) {
		return append(buf, s.mapped[off:end]...), nil
	}
	start := len(buf)
	buf = append(buf, make([]byte, size)...)
	if _, err := s.file.ReadAt(buf[start:], off); err != nil {
		return nil, fmt.Errorf("full sync: read its temporary file: %w", err)
	}
	return buf, nil
}

// mapFile maps the file as it is now (after flush) into memory, read only,
// for the tree's writing: it reads each folder's record, in the order of
// their IDs, which is not the file's, and a system call each would cost
// more than the rest of the record's writing. Where the system cannot map
// files, the records are read as before.
func (s *stage) mapFile() error {
	if err := s.unmapFile(); err != nil {
		return err
	}
	m, err := mapReadOnly(s.file, s.end)
	if err != nil {
		return fmt.Errorf("full sync: map its temporary file: %w", err)
	}
	s.mapped = m
	return nil
}

// releaseFile drops the pages of the file's map read so far from the
// process's memory: read in the order of the folders' IDs, the whole file
// would otherwise become part of it by the end of the writing.
func (s *stage) releaseFile() error {
	if err := releaseMapped(s.mapped); err != nil {
		return fmt.Errorf("full sync: release its temporary file's pages: %w", err)
	}
	return nil
}

// unmapFile undoes mapFile.
func (s *stage) unmapFile() error {
	if s.mapped == nil {
		return nil
	}
	m := s.mapped
	s.mapped = nil
	if err := unmapReadOnly(m); err != nil {
		return fmt.Errorf("full sync: unmap its temporary file: %w", err)
	}
	return nil
}

// record returns a folder's name, resource key and definition.
//
// The record is appended to arena, returned, and the strings are of its
// memory: a batch of folders shares one arena, not an allocation a string.
// Its bytes must not be changed while the strings are in use.
func (s *stage) record(arena []byte, n uint32) (name, resourceKey, definition string, _ []byte, err error) {
	record := s.folders.at(n).record
	start := len(arena)
	if arena, err = s.readAppend(arena, int64(record>>recordSizeBits), uint32(record&(1<<recordSizeBits-1))); err != nil {
		return "", "", "", nil, err
	}
	buf := arena[start:]
	var fields [3]string
	for i := range fields {
		l, k := binary.Uvarint(buf)
		if k <= 0 || l > uint64(len(buf)-k) {
			return "", "", "", nil, errors.New("full sync: corrupt temporary file")
		}
		fields[i] = unsafeString(buf[k : k+int(l)])
		buf = buf[k+int(l):]
	}
	return fields[0], fields[1], fields[2], arena, nil
}

// unsafeString is b as a string, without a copy: b must not change while
// the string is in use.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// set returns a staged permission set.
func (s *stage) set(buf []byte, n uint32) (fm.PermissionSet, error) {
	ss := s.sets[n]
	buf, err := s.read(buf, ss.offset, ss.size)
	if err != nil {
		return fm.PermissionSet{}, err
	}
	perms, err := fm.DecodePermissions(buf)
	return fm.PermissionSet{Key: ss.key, Permissions: perms}, err
}

// parentsOf calls fn with each parent of folder n, in the order listed.
func (s *stage) parentsOf(n uint32, fn func(p uint32)) {
	if p := s.folders.at(n).parent; p != none {
		fn(p)
	}
	for _, p := range s.more[n] {
		fn(p)
	}
}

// place finds the library's tree in the stage: the folders reachable from
// root, parents before children. Drive data may hold cycles and folders with
// several parents: a folder's parent is the one nearest the root (the first
// listed among equals), so the result is always a tree; the other links are
// counted in odd. Each placed folder's parent (none for the root) and
// restricted flag are set; folders not reachable from the root are left out.
func (s *stage) place(root uint32, odd *oddities) []uint32 {
	start, kids := s.childLists()
	depth := make([]int32, s.folders.len())
	for i := range depth {
		depth[i] = -1
	}
	depth[root] = 0
	order := make([]uint32, 1, s.folders.len()) // no more than every folder, allocated once
	order[0] = root
	s.placeAt(root, none)
	// Breadth first: when a folder of depth d is taken, every folder of
	// depth d is already placed, so its parents of depth d are known.
	for i := 0; i < len(order); i++ {
		p := order[i]
		for _, c := range kids[start[p]:start[p+1]] {
			if depth[c] >= 0 {
				continue
			}
			chosen := none
			s.parentsOf(c, func(q uint32) {
				if chosen == none && depth[q] == depth[p] {
					chosen = q
				}
			})
			depth[c] = depth[p] + 1
			s.placeAt(c, chosen)
			order = append(order, c)
		}
	}
	odd.parentLinks.Add(int64(linksNotFollowed(start, kids, depth, order)))
	return order
}

// placeAt gives folder n its place under parent (none: the root).
func (s *stage) placeAt(n, parent uint32) {
	sf := s.folders.at(n)
	sf.parent = parent
	sf.flags &^= flagRestricted
	if sf.flags&flagOwnRestricted != 0 || (parent != none && s.folders.at(parent).flags&flagRestricted != 0) {
		sf.flags |= flagRestricted
	}
}

// childLists returns every listed folder's children by parent: those of
// folder p are kids[start[p]:start[p+1]], in order of number.
func (s *stage) childLists() (start, kids []uint32) {
	// First start[p+1] is where p's children begin (the number of the
	// children of the folders before p); each child then goes there, and
	// it moves on, to end where they end, which is where p+1's begin.
	start = make([]uint32, s.folders.len()+1)
	links := 0
	for n := range uint32(s.folders.len()) {
		if s.folders.at(n).flags&flagListed != 0 {
			s.parentsOf(n, func(p uint32) {
				if int(p)+2 < len(start) {
					start[p+2]++
				}
				links++
			})
		}
	}
	for i := 2; i < len(start); i++ {
		start[i] += start[i-1]
	}
	kids = make([]uint32, links)
	for n := range uint32(s.folders.len()) {
		if s.folders.at(n).flags&flagListed != 0 {
			s.parentsOf(n, func(p uint32) {
				kids[start[p+1]] = n
				start[p+1]++
			})
		}
	}
	return start, kids
}

// linksNotFollowed counts the links between placed folders that are not
// the tree's: each placed folder but the root has one it follows.
func linksNotFollowed(start, kids []uint32, depth []int32, order []uint32) int {
	links := 0
	for _, p := range order {
		for _, c := range kids[start[p]:start[p+1]] {
			if depth[c] > 0 {
				links++
			}
		}
	}
	return links - (len(order) - 1)
}

// folder returns a placed folder as the index keeps it, its record
// appended to arena (see record). Its IDs are of the ID table's memory,
// which the stage no longer changes once placed.
func (s *stage) folder(arena []byte, n uint32) (fm.Folder, []byte, error) {
	name, rk, def, arena, err := s.record(arena, n)
	if err != nil {
		return fm.Folder{}, nil, err
	}
	sf := s.folders.at(n)
	f := fm.Folder{ID: unsafeString(s.ids.Bytes(n)), Name: name, ResourceKey: rk, DefinitionID: def,
		OwnRestrictedDownload: sf.flags&flagOwnRestricted != 0,
		RestrictedDownload:    sf.flags&flagRestricted != 0,
		WritersCanShare:       sf.flags&flagWritersCanShare != 0,
		PermissionSet:         s.sets[sf.set].key,
		OwnSet:                s.sets[sf.own].key,
	}
	if sf.parent != none {
		f.ParentID = unsafeString(s.ids.Bytes(sf.parent))
	}
	return f, arena, nil
}
