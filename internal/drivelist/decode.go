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
// that is not valid JSON is an error too: the decoder checks the syntax of
// all it reads as it reads it, has encoding/json read strings with escapes
// and check the values of keys it does not read, and knows the permission
// lists it met before, byte for byte, to be valid. A page is read once.
package drivelist

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
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
// lists and the distinct permissions, with their bytes, and the distinct
// strings of permissions.
const (
	maxLists           = 1 << 6
	maxListBytes       = 128 << 10
	maxPermissions     = 1 << 12
	maxPermissionBytes = 1 << 20
	maxStrings         = 1 << 12
	maxStringSize      = 256 // longer strings are not interned
)

// Decoder decodes the pages of one listing. It is not safe for concurrent
// use. Its zero value is not usable: use New.
type Decoder struct {
	s scanner
	// lists are the permission lists decoded, by the numbers of their
	// permissions (listKey: those of the list read last), with the bytes of
	// their keys and JSON (listBytes); recent are those recentAt looks for.
	lists     map[string]knownList
	listKey   []byte
	listBytes int
	recent    [recentLists]knownList
	strings   map[string]string
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
	// decoded are the permissions decoded, by their JSON, with its bytes
	// (permissionBytes), and numbered the last one's number;
	// permissionsRead holds a list of them as it is read; permissionChunk
	// is what is left of the chunk they are taken from (newPermission).
	decoded         map[string]decodedPermission
	permissionBytes int
	numbered        uint64
	permissionsRead []*drive.Permission
	permissionChunk []drive.Permission
	// stringsRead holds a list of strings as it is read; stringChunk is
	// what is left of the chunk lists are taken from (stringList).
	stringsRead, stringChunk []string
	// fileBytes and fileStrings are the strings of the file being read
	// (fileString).
	fileBytes   []byte
	fileStrings []fileString
	// keyOrders are the orders of the keysets' keys met (keyOrder).
	keyOrders [][]int8
	// restrictionValues are the values of downloadRestrictions, shared.
	restrictionValues [5]*drive.DownloadRestrictionsMetadata
}

// New returns a Decoder.
func New() *Decoder {
	return &Decoder{lists: map[string]knownList{}, strings: map[string]string{},
		decoded: map[string]decodedPermission{}}
}

// Decode decodes a files.list page. It fails with ErrInvalid for a page
// that it finds is not valid JSON, and with an error wrapping ErrNotPlain
// for a page it does not take (see the package's comment), which may be
// valid JSON or not: it takes no page that encoding/json's Valid refuses.
// Nothing it returns points into page; the files may share permission
// lists with the other pages it decoded: they must not be changed.
func (d *Decoder) Decode(page []byte) (*drive.FileList, error) {
	list := &drive.FileList{}
	if err := d.readWhole(page, func() error { return d.fileList(list) }); err != nil {
		return nil, err
	}
	d.last = list
	return list, nil
}

// readWhole reads page with read, which must leave nothing but whitespace.
// The permission lists it keeps were each read whole and valid, whatever
// the rest of the page holds.
func (d *Decoder) readWhole(page []byte, read func() error) error {
	d.s = scanner{b: page}
	d.chunks, d.last = nil, nil
	err := read()
	if err == nil && !d.s.atEnd() {
		err = fmt.Errorf("%w: %q after the page", ErrInvalid, d.s.peek())
	}
	d.s = scanner{}
	return err
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
// bits (their index in quoted); their names as a page writes them, quotes
// included (quoted); the folded names (see fold) of every field of its
// struct; and id, the keyset's number, by which a Decoder keeps the order
// it met them in (see object).
type keys struct {
	bit    map[string]uint32
	quoted [][]byte
	fields map[string]bool
	id     int
}

// keysets counts the keysets made, to number them.
var keysets int

// keyset returns the keys of the named fields of v's struct type.
func keyset(v any, names ...string) keys {
	k := keys{bit: map[string]uint32{}, fields: map[string]bool{}, id: keysets}
	keysets++
	for i, n := range names {
		k.bit[n] = 1 << i
		k.quoted = append(k.quoted, []byte(`"`+n+`"`))
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
//
// The objects of a page give their keys in one order: the decoder keeps,
// for each of k's keys, the one of them that came next the last time, and
// reads it without scanning when the page has it next, quotes and all.
func (d *Decoder) object(seen *uint32, field func(key []byte) error, k keys) error {
	if d.null() {
		return nil
	}
	if err := d.s.next('{'); err != nil {
		return err
	}
	if d.s.peek() == '}' {
		d.s.i++
		return nil
	}
	next := d.keyOrder(k)
	after := 0 // next's index: 0 before the first key, i+1 after k's key i
	for {
		key, i, err := d.key(k, next[after])
		if err != nil {
			return err
		}
		if i >= 0 {
			next[after], after = int8(i), i+1
			if *seen&(1<<i) != 0 {
				return fmt.Errorf("%w: %q given twice", ErrNotPlain, key)
			}
			*seen |= 1 << i
		}
		if err := d.s.colon(); err != nil {
			return err
		}
		err = field(key)
		if errors.Is(err, errUnknown) {
			err = d.unknown(key, k)
		}
		if err != nil {
			return err
		}
		if more, err := d.s.more('}'); !more {
			return err
		}
	}
}

// keyOrder returns the decoder's order of k's keys: at 0, the key that
// came first; at i+1, the key that came after k's key i (-1: none yet).
func (d *Decoder) keyOrder(k keys) []int8 {
	if k.id >= len(d.keyOrders) {
		d.keyOrders = append(d.keyOrders, make([][]int8, k.id+1-len(d.keyOrders))...)
	}
	next := d.keyOrders[k.id]
	if next == nil {
		next = make([]int8, len(k.quoted)+1)
		for i := range next {
			next[i] = -1
		}
		d.keyOrders[k.id] = next
	}
	return next
}

// key reads an object's key, and returns its index among k's keys (-1: none
// of them): guess's name (an index, -1: none) if the page has it next,
// else whatever key is there. The key's bytes are valid until the next
// read.
func (d *Decoder) key(k keys, guess int8) ([]byte, int, error) {
	if guess >= 0 && d.s.peek() == '"' {
		if q := k.quoted[guess]; bytes.HasPrefix(d.s.b[d.s.i:], q) {
			d.s.i += len(q)
			return q[1 : len(q)-1], int(guess), nil
		}
	}
	key, err := d.str0()
	if err != nil {
		return nil, -1, err
	}
	if bit, ok := k.bit[string(key)]; ok {
		return key, bits.TrailingZeros32(bit), nil
	}
	return key, -1, nil
}

// members reads an object's members, calling member with the decoder at
// each one's value.
func (d *Decoder) members(member func(key []byte) error) error {
	if err := d.s.next('{'); err != nil {
		return err
	}
	if d.s.peek() == '}' {
		d.s.i++
		return nil
	}
	for {
		key, err := d.str0()
		if err != nil {
			return err
		}
		if err := d.s.colon(); err != nil {
			return err
		}
		if err := member(key); err != nil {
			return err
		}
		if more, err := d.s.more('}'); !more {
			return err
		}
	}
}

// null reads null, if it is next.
func (d *Decoder) null() bool {
	return d.s.peek() == 'n' && d.s.word("null")
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
	raw, err := d.s.skip()
	if err == nil && !json.Valid(raw) {
		err = fmt.Errorf("%w: the value of %q", ErrInvalid, key)
	}
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
	switch {
	case d.null():
		return nil
	case d.s.word("true"):
		*dst = true
		return nil
	case d.s.word("false"):
		*dst = false
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
	if d.s.peek() == ']' {
		d.s.i++
		return nil
	}
	for {
		if d.s.peek() == 'n' {
			return fmt.Errorf("%w: null in an array", ErrNotPlain)
		}
		if err := elem(); err != nil {
			return err
		}
		if more, err := d.s.more(']'); !more {
			return err
		}
	}
}

// stringList reads a list of strings (a file's parents), taken from a
// chunk shared with other lists, with no room to append.
func (d *Decoder) stringList(dst *[]string) error {
	isNull := false
	read := d.stringsRead[:0]
	err := d.array(func() { isNull = true }, func() error {
		var s string
		err := d.str(&s)
		read = append(read, s)
		return err
	})
	d.stringsRead = read[:0]
	switch {
	case isNull:
		*dst = nil
	case err == nil && len(read) == 0:
		*dst = []string{}
	case err == nil:
		n := len(read)
		if len(d.stringChunk) < n {
			d.stringChunk = make([]string, max(stringChunk, n))
		}
		*dst = d.stringChunk[:n:n]
		copy(*dst, read)
		d.stringChunk = d.stringChunk[n:]
		clear(read)
	}
	return err
}

// stringChunk is how many strings of lists are allocated at once.
const stringChunk = 256
