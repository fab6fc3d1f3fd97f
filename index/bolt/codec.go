package bolt

import (
	"encoding/binary"
	"time"
	"unsafe"

	fm "github.com/foldermirror/foldermirror"
)

// Records are stored in a compact binary form: a format byte, then fields in
// a fixed order, strings as a uvarint length and their bytes. Decoding copies
// everything out of the buffer, so decoded values outlive the transaction.

const recordFormat = 1

var errCorrupt = fm.ErrCorrupt

type encoder struct{ buf []byte }

func (e *encoder) str(s string) {
	e.buf = binary.AppendUvarint(e.buf, uint64(len(s)))
	e.buf = append(e.buf, s...)
}

func (e *encoder) uint(n uint64) { e.buf = binary.AppendUvarint(e.buf, n) }

func (e *encoder) byte(b byte) { e.buf = append(e.buf, b) }

func (e *encoder) bool(b bool) {
	if b {
		e.byte(1)
	} else {
		e.byte(0)
	}
}

func (e *encoder) time(t time.Time) {
	if t.IsZero() {
		e.uint(0)
		return
	}
	e.uint(uint64(t.UnixNano()))
}

type decoder struct {
	buf []byte
	err error
	// borrow makes strings that refer to buf instead of copies: they are
	// valid as long as buf is (a bbolt value: its transaction).
	borrow bool
}

func (d *decoder) uint() uint64 {
	if d.err != nil {
		return 0
	}
	n, size := binary.Uvarint(d.buf)
	if size <= 0 {
		d.err = errCorrupt
		return 0
	}
	d.buf = d.buf[size:]
	return n
}

func (d *decoder) str() string {
	n := d.uint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.buf)) {
		d.err = errCorrupt
		return ""
	}
	var s string
	if d.borrow {
		s = unsafe.String(unsafe.SliceData(d.buf), n)
	} else {
		s = string(d.buf[:n])
	}
	d.buf = d.buf[n:]
	return s
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.buf) == 0 {
		d.err = errCorrupt
		return 0
	}
	b := d.buf[0]
	d.buf = d.buf[1:]
	return b
}

func (d *decoder) bool() bool { return d.byte() != 0 }

func (d *decoder) time() time.Time {
	n := d.uint()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(n)).UTC()
}

func (d *decoder) header() {
	if d.byte() != recordFormat && d.err == nil {
		d.err = errCorrupt
	}
}

func (d *decoder) done() error {
	if d.err == nil && len(d.buf) != 0 {
		d.err = errCorrupt
	}
	return d.err
}

const (
	flagOwnRestricted = 1 << iota
	flagRestricted
	flagWritersCanShare
)

// encodeFolder encodes everything of f but its ID, which is the record's key.
func encodeFolder(f *fm.Folder) []byte {
	return appendFolder(make([]byte, 0, folderRecordSize(f)), f)
}

// folderRecordSize is about the size of f's record.
func folderRecordSize(f *fm.Folder) int {
	return 48 + len(f.ParentID) + len(f.Name) + len(f.ResourceKey) + len(f.DefinitionID)
}

// appendFolder appends f's record, as encodeFolder encodes it, to dst.
func appendFolder(dst []byte, f *fm.Folder) []byte {
	e := encoder{buf: dst}
	e.byte(recordFormat)
	e.str(f.ParentID)
	e.str(f.Name)
	e.str(f.ResourceKey)
	e.str(f.DefinitionID)
	var flags byte
	if f.OwnRestrictedDownload {
		flags |= flagOwnRestricted
	}
	if f.RestrictedDownload {
		flags |= flagRestricted
	}
	if f.WritersCanShare {
		flags |= flagWritersCanShare
	}
	e.byte(flags)
	e.buf = append(e.buf, f.PermissionSet[:]...)
	e.buf = append(e.buf, f.OwnSet[:]...)
	return e.buf
}

// decodeFolder decodes a folder record into f, whose ID it sets to id. Its
// strings share one copy of the record, made at once.
func decodeFolder(f *fm.Folder, id string, b []byte) error {
	own := string(b)
	return decodeFolderFrom(&decoder{buf: unsafe.Slice(unsafe.StringData(own), len(own)), borrow: true}, f, id)
}

// borrowFolder is decodeFolder into strings that refer to id and b, valid
// as long as they are (the transaction they come from).
func borrowFolder(f *fm.Folder, id, b []byte) error {
	return decodeFolderFrom(&decoder{buf: b, borrow: true}, f, unsafe.String(unsafe.SliceData(id), len(id)))
}

func decodeFolderFrom(d *decoder, f *fm.Folder, id string) error {
	d.header()
	*f = fm.Folder{ID: id, ParentID: d.str(), Name: d.str(), ResourceKey: d.str(), DefinitionID: d.str()}
	flags := d.byte()
	f.OwnRestrictedDownload = flags&flagOwnRestricted != 0
	f.RestrictedDownload = flags&flagRestricted != 0
	f.WritersCanShare = flags&flagWritersCanShare != 0
	d.key(&f.PermissionSet)
	d.key(&f.OwnSet)
	return d.done()
}

func (d *decoder) key(k *fm.PermissionSetKey) {
	if d.err != nil {
		return
	}
	if len(d.buf) < len(k) {
		d.err = errCorrupt
		return
	}
	copy(k[:], d.buf)
	d.buf = d.buf[len(k):]
}

// libraryRecord is what the index keeps of a library: its public state, the
// generation of the tree readers see, and what its change log holds.
type libraryRecord struct {
	fm.LibraryState
	fm.ChangeLog
	Generation uint64
}

func encodeLibrary(r *libraryRecord) []byte {
	e := encoder{}
	e.byte(recordFormat)
	e.uint(r.Generation)
	e.str(r.ID)
	e.str(r.RootID)
	e.str(r.DriveID)
	e.bool(r.SharingRequiresOrganizer)
	e.str(r.StartPageToken)
	e.time(r.LastFullSync)
	e.time(r.LastIncrementalSync)
	e.uint(uint64(r.Folders))
	e.uint(uint64(r.Permissions))
	e.uint(r.Revision)
	e.uint(r.LogStart)
	e.uint(r.LogEntries)
	return e.buf
}

func decodeLibrary(b []byte) (*libraryRecord, error) {
	d := decoder{buf: b}
	d.header()
	r := &libraryRecord{Generation: d.uint()}
	r.ID = d.str()
	r.RootID = d.str()
	r.DriveID = d.str()
	r.SharingRequiresOrganizer = d.bool()
	r.StartPageToken = d.str()
	r.LastFullSync = d.time()
	r.LastIncrementalSync = d.time()
	r.Folders = int(d.uint())
	r.Permissions = int(d.uint())
	r.Revision = d.uint()
	r.LogStart = d.uint()
	r.LogEntries = d.uint()
	if err := d.done(); err != nil {
		return nil, err
	}
	return r, nil
}
