package drivelist

import (
	"fmt"

	drive "google.golang.org/api/drive/v3"
)

// permissions reads a file's permissions. A list met before, byte for byte,
// is the one decoded then.
func (d *Decoder) permissions(dst *[]*drive.Permission) error {
	if d.s.peek() != '[' {
		return d.array(func() { *dst = nil }, func() error { return nil }) // null, or not a list
	}
	from := d.s.i
	if list, ok := d.recentAt(); ok {
		*dst = list
		return nil
	}
	raw, err := d.s.skip()
	if err != nil {
		return err
	}
	if list, ok := d.lists[string(raw)]; ok {
		d.remember(string(raw), list)
		*dst = list
		return nil
	}
	d.s.i = from
	list, err := d.permissionList()
	if err != nil {
		return err
	}
	if len(d.lists) >= maxLists || d.listBytes+len(raw) > maxListBytes {
		clear(d.lists)
		d.listBytes = 0
	}
	key := string(raw)
	d.lists[key] = list
	d.listBytes += len(raw)
	d.remember(key, list)
	*dst = list
	return nil
}

// recentList is a permission list decoded lately, with its JSON.
type recentList struct {
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
func (d *Decoder) remember(raw string, list []*drive.Permission) {
	copy(d.recent[1:], d.recent[:recentLists-1])
	d.recent[0] = recentList{raw: raw, list: list}
}

// permissionList decodes a list of permissions: read into the decoder's
// scratch, then their structs in one allocation of their number and the
// list in another.
func (d *Decoder) permissionList() ([]*drive.Permission, error) {
	read := d.permissionsRead[:0]
	err := d.array(func() {}, func() error {
		read = append(read, drive.Permission{})
		return d.permission(&read[len(read)-1])
	})
	var list []*drive.Permission
	if err == nil {
		perms := append(make([]drive.Permission, 0, len(read)), read...)
		list = make([]*drive.Permission, len(perms))
		for i := range perms {
			list[i] = &perms[i]
		}
	}
	clear(read) // nothing of the page kept beyond its list
	d.permissionsRead = read[:0]
	return list, err
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

// detailChunk is how many permission details are allocated at once.
const detailChunk = 64

// newDetail returns a zero permission detail of the decoder's chunk.
func (d *Decoder) newDetail() *drive.PermissionPermissionDetails {
	if len(d.detailChunk) == 0 {
		d.detailChunk = make([]drive.PermissionPermissionDetails, detailChunk)
	}
	det := &d.detailChunk[0]
	d.detailChunk = d.detailChunk[1:]
	return det
}
