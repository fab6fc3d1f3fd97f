package drivelist

import (
	"encoding/binary"
	"fmt"

	drive "google.golang.org/api/drive/v3"
)

// permissions reads a file's permissions. A list met before, byte for byte,
// is the one decoded then; a list of the same permissions (each the one
// decoded before from the same bytes) is shared too. A list's JSON is kept,
// for recentAt to find it by, once it is met a second time: the lists of a
// changes.list page are mostly each met once.
func (d *Decoder) permissions(dst *[]*drive.Permission) error {
	if d.s.peek() != '[' {
		return d.array(func() { *dst = nil }, func() error { return nil }) // null, or not a list
	}
	from := d.s.i
	if list, ok := d.recentAt(); ok {
		*dst = list
		return nil
	}
	read, err := d.permissionList()
	if err != nil {
		return err
	}
	known, ok := d.lists[string(d.listKey)]
	switch {
	case !ok:
		d.keepLists(len(d.listKey))
		known = knownList{list: append(make([]*drive.Permission, 0, len(read)), read...)}
		d.lists[string(d.listKey)] = known
	case known.raw == "":
		raw := d.s.b[from:d.s.i]
		d.keepLists(len(raw))
		known.raw = string(raw)
		d.lists[string(d.listKey)] = known
		d.remember(known)
	default:
		d.remember(known)
	}
	*dst = known.list
	return nil
}

// keepLists makes room for n more bytes of the lists the decoder keeps.
func (d *Decoder) keepLists(n int) {
	if len(d.lists) >= maxLists || d.listBytes+n > maxListBytes {
		clear(d.lists)
		d.listBytes = 0
	}
	d.listBytes += n
}

// knownList is a permission list decoded, with its JSON once it is met
// again ("" until then).
type knownList struct {
	raw  string
	list []*drive.Permission
}

// recentLists is how many lists recentAt looks for: a listing gives the
// folders of a parent together, and they mostly have its list.
const recentLists = 8

// recentAt reads a permission list that is one of the recent ones, if the
// page goes on with one: a JSON array is over where it ends, so a page
// whose bytes begin with a list's holds that list there, found without
// reading it.
func (d *Decoder) recentAt() ([]*drive.Permission, bool) {
	rest := d.s.b[d.s.i:]
	for k, r := range d.recent {
		if len(r.raw) > 0 && len(rest) >= len(r.raw) && string(rest[:len(r.raw)]) == r.raw {
			d.s.i += len(r.raw)
			copy(d.recent[1:k+1], d.recent[:k])
			d.recent[0] = r
			return r.list, true
		}
	}
	return nil, false
}

// remember makes a list the most recent.
func (d *Decoder) remember(known knownList) {
	copy(d.recent[1:], d.recent[:recentLists-1])
	d.recent[0] = known
}

// permissionList reads a list of permissions, each one decoded before from
// the same bytes shared (sharedPermission), into the decoder's scratch,
// valid until the next list is read; and the numbers of its permissions
// into listKey.
func (d *Decoder) permissionList() ([]*drive.Permission, error) {
	clear(d.permissionsRead) // nothing of the last list kept
	read, key := d.permissionsRead[:0], d.listKey[:0]
	err := d.array(func() {}, func() error {
		p, err := d.sharedPermission()
		read = append(read, p.permission)
		key = binary.LittleEndian.AppendUint64(key, p.number)
		return err
	})
	d.permissionsRead, d.listKey = read, key
	return read, err
}

// decodedPermission is a permission decoded, and its number: the decoder's
// permissions are numbered in the order they are decoded, from 1, never
// twice, so that lists of the same numbers are lists of the same
// permissions, whatever the decoder forgot meanwhile.
type decodedPermission struct {
	permission *drive.Permission
	number     uint64
}

// sharedPermission reads a permission: the one decoded before from the
// same bytes, if the decoder keeps it, as folders of a library share most
// of their permissions (those they inherit) in lists of their own. Bytes
// met before were read whole and valid then.
func (d *Decoder) sharedPermission() (decodedPermission, error) {
	if d.s.peek() != '{' {
		return decodedPermission{}, fmt.Errorf("%w: a permission is not an object", ErrNotPlain)
	}
	from := d.s.i
	raw, err := d.s.skip()
	if err != nil {
		return decodedPermission{}, err
	}
	if p, ok := d.decoded[string(raw)]; ok {
		return p, nil
	}
	d.s.i = from
	p := decodedPermission{permission: d.newPermission()}
	if err := d.permission(p.permission); err != nil {
		return decodedPermission{}, err
	}
	if len(d.decoded) >= maxPermissions || d.permissionBytes+len(raw) > maxPermissionBytes {
		clear(d.decoded)
		d.permissionBytes = 0
	}
	d.numbered++
	p.number = d.numbered
	d.decoded[string(raw)] = p
	d.permissionBytes += len(raw)
	return p, nil
}

// Chunks: how many permissions and permission details are allocated at
// once.
const (
	permissionChunk = 32
	detailChunk     = 64
)

// newPermission returns a zero permission of the decoder's chunk.
func (d *Decoder) newPermission() *drive.Permission {
	return fromChunk(&d.permissionChunk, permissionChunk)
}

// newDetail returns a zero permission detail of the decoder's chunk.
func (d *Decoder) newDetail() *drive.PermissionPermissionDetails {
	return fromChunk(&d.detailChunk, detailChunk)
}

// fromChunk takes a zero value from what is left of a chunk, first made of
// size values when none is left.
func fromChunk[T any](chunk *[]T, size int) *T {
	if len(*chunk) == 0 {
		*chunk = make([]T, size)
	}
	v := &(*chunk)[0]
	*chunk = (*chunk)[1:]
	return v
}

// permission reads a permission.
func (d *Decoder) permission(p *drive.Permission) error {
	if d.s.peek() != '{' {
		return fmt.Errorf("%w: a permission is not an object", ErrNotPlain)
	}
	var seen uint32
	return d.object(&seen, func(key []byte) error {
		switch string(key) {
		case "id":
			return d.interned(&p.Id)
		case "type":
			return d.interned(&p.Type)
		case "role":
			return d.interned(&p.Role)
		case "emailAddress":
			return d.interned(&p.EmailAddress)
		case "domain":
			return d.interned(&p.Domain)
		case "displayName":
			return d.interned(&p.DisplayName)
		case "photoLink":
			return d.interned(&p.PhotoLink)
		case "allowFileDiscovery":
			return d.boolean(&p.AllowFileDiscovery)
		case "deleted":
			return d.boolean(&p.Deleted)
		case "permissionDetails":
			return d.details(&p.PermissionDetails)
		case "kind":
			return d.interned(&p.Kind)
		case "view":
			return d.interned(&p.View)
		case "expirationTime":
			return d.interned(&p.ExpirationTime)
		case "pendingOwner":
			return d.boolean(&p.PendingOwner)
		case "inheritedPermissionsDisabled":
			return d.boolean(&p.InheritedPermissionsDisabled)
		}
		return errUnknown
	}, permissionKeys)
}

// details reads a permission's permissionDetails: the list in one
// allocation, its structs taken from a chunk (detailChunk).
func (d *Decoder) details(dst *[]*drive.PermissionPermissionDetails) error {
	isNull := false
	read := d.detailsRead[:0]
	err := d.array(func() { isNull = true }, func() error {
		if d.s.peek() != '{' {
			return fmt.Errorf("%w: a permission detail is not an object", ErrNotPlain)
		}
		det := d.newDetail()
		read = append(read, det)
		var seen uint32
		return d.object(&seen, func(key []byte) error {
			switch string(key) {
			case "role":
				return d.interned(&det.Role)
			case "inherited":
				return d.boolean(&det.Inherited)
			case "permissionType":
				return d.interned(&det.PermissionType)
			case "inheritedFrom":
				return d.interned(&det.InheritedFrom)
			}
			return errUnknown
		}, detailKeys)
	})
	d.detailsRead = read[:0]
	switch {
	case isNull:
		*dst = nil
	case err == nil:
		*dst = append(make([]*drive.PermissionPermissionDetails, 0, len(read)), read...)
	}
	return err
}
