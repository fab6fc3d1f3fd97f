// Package drivelist decodes the pages of Drive's files.list, the bulk of a
// full sync's input, without the reflection of encoding/json: a page's
// files come out as the drive/v3 structs the client library would make of
// the same bytes, for the fields a sync asks for, with the permission
// lists that folders repeat (a folder's list is mostly its parent's)
// decoded once and shared, and their strings interned.
//
// The decoder takes only the common shape of a page. Anything it is not
// sure to read as encoding/json would (a key that differs from a field's
// name only in case, a name given twice, a value of an unexpected type,
// invalid UTF-8) is an error, and the caller lets the client library decode
// the page instead: a page is read exactly as before, or faster. A page
// that is not valid JSON is an error too: the decoder checks each page with
// encoding/json's Valid, but for the permission lists it met before, whose
// bytes it checked then.
package drivelist

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	drive "google.golang.org/api/drive/v3"
)

// Errors of Decode: a page the decoder leaves to encoding/json, and a page
// that is not valid JSON.
var (
	ErrNotPlain = errors.New("drivelist: not a plain page")
	ErrInvalid  = errors.New("drivelist: not valid JSON")
)

// Bounds on what a Decoder keeps between pages: the distinct permission
// lists, and the distinct strings of permissions, with their bytes.
const (
	maxLists      = 1 << 6
	maxListBytes  = 128 << 10
	maxStrings    = 1 << 12
	maxStringSize = 256 // longer strings are not interned
)

// Decoder decodes the pages of one listing. It is not safe for concurrent
// use. Its zero value is not usable: use New.
type Decoder struct {
	s         scanner
	lists     map[string][]*drive.Permission // by their JSON
	listBytes int
	recent    [recentLists]recentList
	strings   map[string]string
	// checked is the page being decoded with the permission lists known
	// already (valid, as they were) left out, which encoding/json's Valid
	// checks at the end; copied is how far the page is in it; added are
	// the lists the page added to lists, forgotten if it is not valid.
	checked []byte
	copied  int
	added   []string
	// last is the page decoded last, whose files are in chunks; spare are
	// chunks given back (Reuse).
	last          *drive.FileList
	chunks, spare [][]drive.File
	scratch       []byte
	// detailsRead holds a permission's details as they are read;
	// detailChunk is what is left of the chunk they are taken from
	// (newDetail).
	detailsRead []*drive.PermissionPermissionDetails
	detailChunk []drive.PermissionPermissionDetails
}

// New returns a Decoder.
func New() *Decoder {
	return &Decoder{lists: map[string][]*drive.Permission{}, strings: map[string]string{}}
}

// Decode decodes a files.list page. It fails with ErrInvalid for a page
// that is not valid JSON as encoding/json's Valid says (it checks the page
// but for the permission lists it met before, byte for byte: their bytes
// were checked then), and, before it knows, possibly with an error wrapping
// ErrNotPlain, for a page it does not take (see the package's comment).
// Nothing it returns points into page; the files may share permission
// lists with the other pages it decoded: they must not be changed.
func (d *Decoder) Decode(page []byte) (*drive.FileList, error) {
	list := &drive.FileList{}
	if err := d.readChecked(page, func() error { return d.fileList(list) }); err != nil {
		return nil, err
	}
	d.last = list
	return list, nil
}

// readChecked reads page with read, then checks it (see Decode).
func (d *Decoder) readChecked(page []byte, read func() error) error {
	d.s = scanner{b: page}
	if cap(d.checked) < len(page) {
		// What Valid checks is at most the page: grown by appending, the
		// buffer would be copied at each doubling.
		d.checked = make([]byte, 0, len(page))
	}
	d.chunks, d.last = nil, nil
	err := read()
	if err == nil {
		d.checked = append(d.checked, page[d.copied:]...)
		if !json.Valid(d.checked) {
			err = ErrInvalid
		}
	}
	d.s, d.checked, d.copied = scanner{}, d.checked[:0], 0
	if err != nil {
		d.forgetAdded()
		return err
	}
	d.added = d.added[:0]
	return nil
}

// forgetAdded forgets the permission lists of a page that failed: they may
// not be valid JSON, and must never stand for what a later page holds.
func (d *Decoder) forgetAdded() {
	for _, raw := range d.added {
		delete(d.lists, raw)
	}
	d.added = d.added[:0]
	d.recent = [recentLists]recentList{}
}

// leaveOut leaves the page's bytes from from to to, a permission list met
// before, out of what Valid checks.
func (d *Decoder) leaveOut(from, to int) {
	d.checked = append(d.checked, d.s.b[d.copied:from]...)
	d.checked = append(d.checked, "[]"...)
	d.copied = to
}

// fileList reads a files.list page into list.
func (d *Decoder) fileList(list *drive.FileList) error {
	var seen uint32
	return d.object(&seen, func(key []byte) error {
		switch string(key) {
		case "nextPageToken":
			return d.str(&list.NextPageToken)
		case "incompleteSearch":
			return d.boolean(&list.IncompleteSearch)
		case "kind":
			return d.str(&list.Kind)
		case "files":
			return d.files(&list.Files)
		}
		return errUnknown
	}, fileListKeys)
}

// errUnknown tells object that a key is none of the fields decoded.
var errUnknown = errors.New("unknown key")

// Keys of each object the decoder reads, in the order of the bits that
// mark them seen. A name seen twice is left to encoding/json, and so is any
// other name of the drive/v3 struct (equal but for case included, as
// encoding/json matches names so): Drive gives only the fields asked for,
// and a server that gives more has them read as encoding/json reads them,
// type errors included.
var (
	fileListKeys = keyset(drive.FileList{}, "nextPageToken", "incompleteSearch", "kind", "files")
	fileKeys     = keyset(drive.File{}, "id", "name", "mimeType", "parents", "trashed", "resourceKey", "appProperties",
		"copyRequiresWriterPermission", "downloadRestrictions", "writersCanShare", "hasAugmentedPermissions",
		"inheritedPermissionsDisabled", "permissions", "createdTime", "modifiedTime", "driveId", "kind")
	permissionKeys = keyset(drive.Permission{}, "id", "type", "role", "emailAddress", "domain", "displayName", "photoLink",
		"allowFileDiscovery", "deleted", "permissionDetails", "kind", "view", "expirationTime", "pendingOwner",
		"inheritedPermissionsDisabled")
	detailKeys       = keyset(drive.PermissionPermissionDetails{}, "role", "inherited", "permissionType", "inheritedFrom")
	restrictionsKeys = keyset(drive.DownloadRestrictionsMetadata{}, "itemDownloadRestriction")
	restrictionKeys  = keyset(drive.DownloadRestriction{}, "restrictedForReaders", "restrictedForWriters")
)

// keys are the fields of an object the decoder reads, by name, with their
// bits; and the folded names (see fold) of every field of its struct.
type keys struct {
	bit    map[string]uint32
	fields map[string]bool
}

// keyset returns the keys of the named fields of v's struct type.
func keyset(v any, names ...string) keys {
	k := keys{bit: map[string]uint32{}, fields: map[string]bool{}}
	for i, n := range names {
		k.bit[n] = 1 << i
	}
	t := reflect.TypeOf(v)
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			k.fields[fold(name)] = true
		}
	}
	return k
}

// fold lower-cases an ASCII name and drops its dashes and underscores:
// names equal once folded may be one field to encoding/json.
func fold(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '-' || r == '_':
			return -1
		case 'A' <= r && r <= 'Z':
			return r + 'a' - 'A'
		}
		return r
	}, name)
}

// object reads an object, calling field for each key with the decoder at
// its value; field returns errUnknown for a key it does not decode, whose
// value is skipped. null is an object without keys.
func (d *Decoder) object(seen *uint32, field func(key []byte) error, k keys) error {
	if d.null() {
		return nil
	}
	if err := d.s.next('{'); err != nil {
		return err
	}
	for d.s.peek() != '}' {
		key, err := d.str0()
		if err != nil {
			return err
		}
		if bit, ok := k.bit[string(key)]; ok {
			if *seen&bit != 0 {
				return fmt.Errorf("%w: %q given twice", ErrNotPlain, key)
			}
			*seen |= bit
		}
		switch err := field(key); {
		case errors.Is(err, errUnknown):
			if err := d.unknown(key, k); err != nil {
				return err
			}
		case err != nil:
			return err
		}
	}
	return d.s.next('}')
}

// null reads null, if it is next.
func (d *Decoder) null() bool {
	if d.s.peek() != 'n' {
		return false
	}
	d.s.literal()
	return true
}

// unknown skips the value of a key the decoder does not read, unless
// encoding/json could take the key for a field of the struct.
func (d *Decoder) unknown(key []byte, k keys) error {
	for _, c := range key {
		if c >= utf8.RuneSelf {
			return fmt.Errorf("%w: key %q is not ASCII", ErrNotPlain, key)
		}
	}
	if k.fields[fold(string(key))] {
		return fmt.Errorf("%w: %q is a field not asked for, or differs from one in case", ErrNotPlain, key)
	}
	_, err := d.s.skip()
	return err
}

// str0 reads a string's bytes, valid until the next read: in the page when
// it has no escapes, else in the decoder's scratch. Invalid UTF-8, which
// encoding/json would replace, is left to it.
func (d *Decoder) str0() ([]byte, error) {
	raw, escaped, err := d.s.quoted()
	if err != nil {
		return nil, err
	}
	if escaped { // rare: encoding/json reads it, as it would
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNotPlain, err)
		}
		d.scratch = append(d.scratch[:0], s...)
		return d.scratch, nil
	}
	inner := raw[1 : len(raw)-1]
	if !utf8.Valid(inner) {
		return nil, fmt.Errorf("%w: a string is not UTF-8", ErrNotPlain)
	}
	return inner, nil
}

// str reads a string (null: left as it is).
func (d *Decoder) str(dst *string) error {
	if d.null() {
		return nil
	}
	b, err := d.str0()
	if err == nil {
		*dst = string(b)
	}
	return err
}

// interned reads a string as str does, one copy of each kept.
func (d *Decoder) interned(dst *string) error {
	if d.null() {
		return nil
	}
	b, err := d.str0()
	if err == nil {
		*dst = d.intern(b)
	}
	return err
}

func (d *Decoder) intern(b []byte) string {
	if s, ok := d.strings[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(b) <= maxStringSize {
		if len(d.strings) >= maxStrings {
			clear(d.strings)
		}
		d.strings[s] = s
	}
	return s
}

// boolean reads true or false (null: left as it is).
func (d *Decoder) boolean(dst *bool) error {
	switch d.s.peek() {
	case 'n':
		d.s.literal()
		return nil
	case 't', 'f':
		*dst = string(d.s.literal()) == "true"
		return nil
	}
	return fmt.Errorf("%w: %q where a boolean was expected", ErrNotPlain, d.s.peek())
}

// array reads an array, calling elem at each element; null leaves it nil,
// [] makes it empty (as encoding/json does). Elements that are null are
// left to encoding/json.
func (d *Decoder) array(null func(), elem func() error) error {
	if d.null() {
		null()
		return nil
	}
	if err := d.s.next('['); err != nil {
		return err
	}
	for d.s.peek() != ']' {
		if d.s.peek() == 'n' {
			return fmt.Errorf("%w: null in an array", ErrNotPlain)
		}
		if err := elem(); err != nil {
			return err
		}
	}
	return d.s.next(']')
}

func (d *Decoder) stringList(dst *[]string) error {
	*dst = []string{}
	return d.array(func() { *dst = nil }, func() error {
		var s string
		err := d.str(&s)
		*dst = append(*dst, s)
		return err
	})
}
