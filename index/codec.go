package index

import (
	"encoding/binary"
	"errors"
	"time"

	fm "github.com/foldermirror/foldermirror"
)

// Records are stored in a compact binary form: a format byte, then fields in
// a fixed order, strings as a uvarint length and their bytes. Decoding copies
// everything out of the buffer, so decoded values outlive the transaction.

const recordFormat = 1

var errCorrupt = errors.New("corrupt record")

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
	s := string(d.buf[:n])
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

// encodeFolder encodes everything of f but its ID, which is the record's
// key, and its grants, which its permission set makes.
func encodeFolder(f *fm.Folder, permset []byte) []byte {
	e := encoder{buf: make([]byte, 0, 64+len(f.Name)+len(permset))}
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
	e.str(string(permset))
	return e.buf
}

// decodeFolder decodes a folder record (its grants left empty) and returns
// the key of its permission set.
func decodeFolder(id string, b []byte) (*fm.Folder, []byte, error) {
	d := decoder{buf: b}
	d.header()
	f := &fm.Folder{ID: id, ParentID: d.str(), Name: d.str(), ResourceKey: d.str(), DefinitionID: d.str()}
	flags := d.byte()
	f.OwnRestrictedDownload = flags&flagOwnRestricted != 0
	f.RestrictedDownload = flags&flagRestricted != 0
	f.WritersCanShare = flags&flagWritersCanShare != 0
	permset := []byte(d.str())
	if err := d.done(); err != nil {
		return nil, nil, err
	}
	return f, permset, nil
}

func encodePermissions(perms []fm.Permission) []byte {
	e := encoder{buf: make([]byte, 0, 8+96*len(perms))}
	e.byte(recordFormat)
	e.uint(uint64(len(perms)))
	for _, p := range perms {
		e.str(p.ID)
		e.str(p.Type)
		e.str(p.Role)
		e.str(p.EmailAddress)
		e.str(p.Domain)
		e.str(p.DisplayName)
		e.str(p.PhotoLink)
		e.bool(p.AllowFileDiscovery)
	}
	return e.buf
}

// permissionCount reads only the number of permissions of an encoded list.
func permissionCount(b []byte) int {
	d := decoder{buf: b}
	d.header()
	return int(d.uint())
}

func decodePermissions(b []byte) ([]fm.Permission, error) {
	d := decoder{buf: b}
	d.header()
	n := d.uint()
	if n > uint64(len(d.buf)) {
		return nil, errCorrupt
	}
	perms := make([]fm.Permission, n)
	for i := range perms {
		perms[i] = fm.Permission{
			ID: d.str(), Type: d.str(), Role: d.str(), EmailAddress: d.str(),
			Domain: d.str(), DisplayName: d.str(), PhotoLink: d.str(), AllowFileDiscovery: d.bool(),
		}
	}
	if err := d.done(); err != nil {
		return nil, err
	}
	return perms, nil
}

// libraryRecord is what the index keeps of a library: its public state and
// the generation of the tree readers see.
type libraryRecord struct {
	fm.LibraryState
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
	if err := d.done(); err != nil {
		return nil, err
	}
	return r, nil
}
