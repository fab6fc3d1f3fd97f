package catalog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"unsafe"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/internal/intern"
)

// A catalog kept in an index (fm.CatalogStore) is a base and the grant
// table its sets are numbered in, as they are in memory, so that reading
// it is copying it:
//
//	header   magic, savedFormat, byte-order mark, CRC-32C of the rest
//	counts   the revision the base holds, and the length of each array
//	arrays   the base's: IDs, their ends, size, parent, set, record,
//	         flags, arena; the grant table's: start, grants, keys, the
//	         principals' ends and names
//
// Arrays are in the machine's byte order, which the mark gives: a catalog
// of another order, of another format, or whose checksum or structure is
// wrong, is not used (the library is read from the index instead).

// savedFormat is the version of the layout above: a change of it makes
// the catalogs kept before unusable, so that they are made again.
const savedFormat = 1

var savedMagic = [8]byte{'f', 'm', 'c', 'a', 't', 'l', 'o', 'g'}

// byteOrderMark reads 0x01020304 in the byte order of the machine that
// wrote it.
const byteOrderMark = 0x01020304

// headerLen is the length of the header: magic, format, mark, checksum.
const headerLen = 8 + 4 + 4 + 4

// savedCounts are the lengths of a kept catalog's arrays.
type savedCounts struct {
	Revision   uint64
	Folders    uint64
	IDBytes    uint64
	ArenaBytes uint64
	Sets       uint64
	Grants     uint64
	Principals uint64
	// PrincipalBytes is the length of the principals' names together.
	PrincipalBytes uint64
}

// countsLen is the length of savedCounts as kept.
const countsLen = 8 * 8

// grantLen is the length of a Grant as kept: principal, role, link.
const grantLen = 6

// bodyLen is the length of what follows the counts. (Each count is at
// most the catalog's length, checked first, so that it does not overflow.)
func (c *savedCounts) bodyLen() uint64 {
	return c.IDBytes + 4*5*c.Folders + c.Folders + c.ArenaBytes +
		4*(c.Sets+1) + grantLen*c.Grants + 16*c.Sets + 4*c.Principals + c.PrincipalBytes
}

// fields returns the counts in the order they are kept.
func (c *savedCounts) fields() []*uint64 {
	return []*uint64{&c.Revision, &c.Folders, &c.IDBytes, &c.ArenaBytes, &c.Sets, &c.Grants, &c.Principals, &c.PrincipalBytes}
}

// savedLibrary is what a kept catalog holds.
type savedLibrary struct {
	base   *base
	grants *grantTable
}

// encodeSaved returns the parts of b and g kept together: the arrays are
// b's and g's own, not copies.
func encodeSaved(b *base, g grantView) [][]byte {
	data, ends := b.ids.Parts()
	names, nameEnds := []byte{}, make([]uint32, len(g.principals.names))
	for i, p := range g.principals.names {
		names = append(names, p...)
		nameEnds[i] = uint32(len(names))
	}
	grants := make([]byte, 0, grantLen*len(g.all))
	for _, gr := range g.all {
		grants = binary.NativeEndian.AppendUint32(grants, uint32(gr.Principal))
		grants = append(grants, byte(gr.Role), b2u(gr.WithLink))
	}
	c := savedCounts{Revision: b.revision, Folders: uint64(len(ends)), IDBytes: uint64(len(data)),
		ArenaBytes: uint64(len(b.arena)), Sets: uint64(len(g.keys)), Grants: uint64(len(g.all)),
		Principals: uint64(len(nameEnds)), PrincipalBytes: uint64(len(names))}
	counts := make([]byte, 0, countsLen)
	for _, n := range c.fields() {
		counts = binary.NativeEndian.AppendUint64(counts, *n)
	}
	body := [][]byte{counts, data, bytesOf(ends), bytesOf(b.size), bytesOf(b.parent), bytesOf(b.set),
		bytesOf(b.record), b.flags, b.arena, bytesOf(g.start), grants, keyBytes(g.keys), bytesOf(nameEnds), names}
	crc := uint32(0)
	for _, p := range body {
		crc = crc32.Update(crc, castagnoli, p)
	}
	header := append(savedMagic[:len(savedMagic):len(savedMagic)], make([]byte, 12)...)
	binary.NativeEndian.PutUint32(header[8:], savedFormat)
	binary.NativeEndian.PutUint32(header[12:], byteOrderMark)
	binary.NativeEndian.PutUint32(header[16:], crc)
	return append([][]byte{header}, body...)
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func b2u(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// bytesOf returns the bytes of a slice of uint32, in the machine's order.
func bytesOf(s []uint32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), 4*len(s))
}

func keyBytes(keys []fm.PermissionSetKey) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(keys))), 16*len(keys))
}

// errUnusable is why a kept catalog is not used.
var errUnusable = errors.New("the catalog kept is not usable")

func unusable(why string, args ...any) error {
	return fmt.Errorf("%w: %s", errUnusable, fmt.Sprintf(why, args...))
}

// decodeSaved reads a kept catalog of size bytes from r, and checks it.
func decodeSaved(r io.Reader, size int64) (*savedLibrary, error) {
	var header [headerLen + countsLen]byte
	if size < int64(len(header)) {
		return nil, unusable("%d bytes", size)
	}
	if _, err := io.ReadFull(r, header[:]); err != nil {
		return nil, err
	}
	switch {
	case !bytes.Equal(header[:8], savedMagic[:]):
		return nil, unusable("not a catalog")
	case binary.NativeEndian.Uint32(header[8:]) != savedFormat:
		return nil, unusable("format %d, not %d", binary.NativeEndian.Uint32(header[8:]), savedFormat)
	case binary.NativeEndian.Uint32(header[12:]) != byteOrderMark:
		return nil, unusable("written in another byte order")
	}
	want := binary.NativeEndian.Uint32(header[16:])
	cr := &crcReader{r: r, crc: crc32.Update(0, castagnoli, header[headerLen:])}
	var c savedCounts
	for i, p := range c.fields() {
		*p = binary.NativeEndian.Uint64(header[headerLen+8*i:])
		if i > 0 && *p > uint64(size) {
			return nil, unusable("a count of %d in %d bytes", *p, size)
		}
	}
	if body := c.bodyLen(); body != uint64(size)-uint64(len(header)) || c.Folders == 0 {
		return nil, unusable("%d bytes, its counts make %d", size, uint64(len(header))+body)
	}
	s, err := readSaved(cr, &c)
	if err != nil {
		return nil, err
	}
	if cr.crc != want {
		return nil, unusable("its checksum is wrong")
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	return s, nil
}

// readSaved reads the arrays whose lengths c gives.
func readSaved(r io.Reader, c *savedCounts) (*savedLibrary, error) {
	n := int(c.Folders)
	data, ends := make([]byte, c.IDBytes), make([]uint32, n)
	b := &base{revision: c.Revision, size: make([]uint32, n), parent: make([]uint32, n), set: make([]uint32, n),
		record: make([]uint32, n), flags: make([]uint8, n), arena: make([]byte, c.ArenaBytes)}
	g := &grantTable{start: make([]uint32, c.Sets+1), keys: make([]fm.PermissionSetKey, c.Sets)}
	grants := make([]byte, grantLen*c.Grants)
	nameEnds, names := make([]uint32, c.Principals), make([]byte, c.PrincipalBytes)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, err
	}
	if _, err := io.ReadFull(r, bytesOf(ends)); err != nil {
		return nil, err
	}
	// The IDs' table is made on another core while the rest is read.
	ids := make(chan *intern.Table, 1)
	go func() {
		t, _ := intern.FromParts(data, ends)
		ids <- t
	}()
	for _, p := range [][]byte{bytesOf(b.size), bytesOf(b.parent), bytesOf(b.set),
		bytesOf(b.record), b.flags, b.arena, bytesOf(g.start), grants, keyBytes(g.keys), bytesOf(nameEnds), names} {
		if _, err := io.ReadFull(r, p); err != nil {
			<-ids
			return nil, err
		}
	}
	if b.ids = <-ids; b.ids == nil {
		return nil, unusable("its IDs are not a table's")
	}
	g.all = make([]Grant, c.Grants)
	for i := range g.all {
		e := grants[grantLen*i:]
		g.all[i] = Grant{Principal: int32(binary.NativeEndian.Uint32(e)), Role: fm.Role(e[4]), WithLink: e[5] != 0}
	}
	start := uint32(0)
	for _, end := range nameEnds {
		if end < start || int(end) > len(names) {
			return nil, unusable("its principals' ends are wrong")
		}
		g.principals.names = append(g.principals.names, string(names[start:end]))
		start = end
	}
	return &savedLibrary{base: b, grants: g}, nil
}

// inPlace tells whether folder i of a base read is where its readers
// expect it: its subtree within the base, and within its parent's, which
// comes before it; its record a record's bytes, up to the next one's or
// the arena's end; its set one of sets.
func (b *base) inPlace(i, sets uint32) bool {
	n := uint32(len(b.size))
	if b.size[i] == 0 || b.size[i] > n-i || b.set[i] >= sets || !b.recordInPlace(i) {
		return false
	}
	if i == 0 {
		return true
	}
	p := b.parent[i]
	return p < i && i+b.size[i] <= p+b.size[p]
}

// recordInPlace tells whether folder i's record (see appendRecord) takes
// the arena's bytes from its start to the next record's, or to the end.
func (b *base) recordInPlace(i uint32) bool {
	end := uint32(len(b.arena))
	if int(i)+1 < len(b.record) {
		end = b.record[i+1]
	}
	if b.record[i] >= end || end > uint32(len(b.arena)) {
		return false
	}
	rec := b.arena[b.record[i]:end]
	strings := 3
	for k := 0; k < strings; k++ {
		n, w := binary.Uvarint(rec)
		if w <= 0 || n > uint64(len(rec)-w) {
			return false
		}
		rec = rec[w+int(n):]
		if k == 0 { // the name, then whether its escaped form follows
			if len(rec) == 0 || rec[0] > 1 {
				return false
			}
			strings += int(rec[0])
			rec = rec[1:]
		}
	}
	return len(rec) == 0
}

// crcReader is a reader that sums what it reads.
type crcReader struct {
	r   io.Reader
	crc uint32
}

func (c *crcReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.crc = crc32.Update(c.crc, castagnoli, p[:n])
	return n, err
}

// check checks what a kept catalog's readers rely on, so that a catalog
// whose checksum is right by chance does not make them fail: each folder's
// parent before it and its subtree within the parent's, records in order
// within the arena, sets and principals that exist, each once.
func (s *savedLibrary) check() error {
	b, g := s.base, s.grants
	if b.parent[0] != none || int(b.size[0]) != len(b.size) {
		return unusable("its root is not its first folder")
	}
	for i := range uint32(len(b.size)) {
		if !b.inPlace(i, uint32(len(g.keys))) {
			return unusable("folder %d is out of place", i)
		}
	}
	if g.start[0] != 0 || g.start[len(g.keys)] != uint32(len(g.all)) {
		return unusable("its grants do not add up")
	}
	for i := range g.keys {
		if g.start[i+1] < g.start[i] {
			return unusable("its grants do not add up")
		}
	}
	for _, gr := range g.all {
		if gr.Principal < 0 || int(gr.Principal) >= len(g.principals.names) || gr.Role == fm.RoleNone || gr.Role > fm.RoleOwner {
			return unusable("a grant is wrong")
		}
	}
	if len(g.keys) > smallTable {
		g.byKey = indexOf[fm.PermissionSetKey, uint32](g.keys)
	}
	if len(g.principals.names) > smallTable {
		g.principals.byName = indexOf[string, int32](g.principals.names)
	}
	for i, k := range g.keys {
		if n, _ := g.lookup(k); int(n) != i {
			return unusable("a set is there twice")
		}
	}
	for i, p := range g.principals.names {
		if n, _ := g.principals.lookup(p); int(n) != i {
			return unusable("a principal is there twice")
		}
	}
	return nil
}
