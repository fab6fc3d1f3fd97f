package drivelist

import (
	"fmt"

	drive "google.golang.org/api/drive/v3"
)

// fileChunk is how many files a page's files are allocated by: a page's
// drive.File structs in a few allocations, not one each.
const fileChunk = 128

// files reads a page's files.
func (d *Decoder) files(dst *[]*drive.File) error {
	*dst = []*drive.File{}
	var chunk []drive.File
	return d.array(func() { *dst = nil }, func() error {
		if len(chunk) == 0 {
			chunk = d.chunk()
		}
		f := &chunk[0]
		chunk = chunk[1:]
		*dst = append(*dst, f)
		return d.file(f)
	})
}

// chunk returns room for fileChunk files: a chunk given back (Reuse),
// cleared, or a new one.
func (d *Decoder) chunk() []drive.File {
	var c []drive.File
	if n := len(d.spare); n > 0 {
		c, d.spare = d.spare[n-1], d.spare[:n-1]
		clear(c)
	} else {
		c = make([]drive.File, fileChunk)
	}
	d.chunks = append(d.chunks, c)
	return c
}

// Reuse gives back the files of list, the page Decode returned last, once
// its caller is done with them: the next pages are decoded into their
// memory, and nothing may use them any more.
func (d *Decoder) Reuse(list *drive.FileList) {
	if list != d.last {
		return
	}
	d.spare = append(d.spare, d.chunks...)
	d.chunks, d.last = nil, nil
}

// file reads a file.
func (d *Decoder) file(f *drive.File) error {
	if d.s.peek() != '{' {
		return fmt.Errorf("%w: a file is not an object", ErrNotPlain)
	}
	var seen uint32
	d.fileBytes, d.fileStrings = d.fileBytes[:0], d.fileStrings[:0]
	err := d.object(&seen, func(key []byte) error {
		switch string(key) {
		case "id":
			return d.fileString(&f.Id)
		case "name":
			return d.fileString(&f.Name)
		case "mimeType":
			return d.interned(&f.MimeType)
		case "parents":
			return d.stringList(&f.Parents)
		case "trashed":
			return d.boolean(&f.Trashed)
		case "resourceKey":
			return d.fileString(&f.ResourceKey)
		case "appProperties":
			return d.properties(&f.AppProperties)
		case "copyRequiresWriterPermission":
			return d.boolean(&f.CopyRequiresWriterPermission)
		case "downloadRestrictions":
			return d.restrictions(&f.DownloadRestrictions)
		case "writersCanShare":
			return d.boolean(&f.WritersCanShare)
		case "hasAugmentedPermissions":
			return d.boolean(&f.HasAugmentedPermissions)
		case "inheritedPermissionsDisabled":
			return d.boolean(&f.InheritedPermissionsDisabled)
		case "permissions":
			return d.permissions(&f.Permissions)
		case "createdTime":
			return d.fileString(&f.CreatedTime)
		case "modifiedTime":
			return d.fileString(&f.ModifiedTime)
		case "driveId":
			return d.interned(&f.DriveId)
		case "kind":
			return d.interned(&f.Kind)
		}
		return errUnknown
	}, fileKeys)
	if err == nil && len(d.fileStrings) > 0 {
		all := string(d.fileBytes)
		for _, fs := range d.fileStrings {
			*fs.dst = all[fs.from:fs.to]
		}
	}
	return err
}

// fileString is a string of a file being read, set when the file is read
// whole, from one string made of them all.
type fileString struct {
	dst      *string
	from, to int
}

// fileString reads a string of a file as str does, into d.fileBytes.
func (d *Decoder) fileString(dst *string) error {
	if d.null() {
		return nil
	}
	b, err := d.str0()
	if err == nil {
		from := len(d.fileBytes)
		d.fileBytes = append(d.fileBytes, b...)
		d.fileStrings = append(d.fileStrings, fileString{dst: dst, from: from, to: len(d.fileBytes)})
	}
	return err
}

// properties reads appProperties: an object of strings. A key given twice
// is left to encoding/json.
func (d *Decoder) properties(dst *map[string]string) error {
	if d.null() {
		*dst = nil
		return nil
	}
	m := map[string]string{}
	err := d.members(func(b []byte) error {
		key := string(b)
		if _, dup := m[key]; dup {
			return fmt.Errorf("%w: property %q given twice", ErrNotPlain, key)
		}
		var v string
		err := d.str(&v)
		m[key] = v
		return err
	})
	if err == nil {
		*dst = m
	}
	return err
}

// restrictions reads downloadRestrictions: one of the few values there
// are, shared (see restriction).
func (d *Decoder) restrictions(dst **drive.DownloadRestrictionsMetadata) error {
	if d.null() {
		return nil
	}
	hasItem, item := false, drive.DownloadRestriction{}
	var seen uint32
	err := d.object(&seen, func(key []byte) error {
		if string(key) != "itemDownloadRestriction" {
			return errUnknown
		}
		if d.null() {
			hasItem = false
			return nil
		}
		hasItem, item = true, drive.DownloadRestriction{}
		var seen uint32
		return d.object(&seen, func(key []byte) error {
			switch string(key) {
			case "restrictedForReaders":
				return d.boolean(&item.RestrictedForReaders)
			case "restrictedForWriters":
				return d.boolean(&item.RestrictedForWriters)
			}
			return errUnknown
		}, restrictionKeys)
	}, restrictionsKeys)
	if err == nil {
		*dst = d.restriction(hasItem, item)
	}
	return err
}

// restriction returns the shared value of downloadRestrictions with item,
// or none: each of the five made once.
func (d *Decoder) restriction(hasItem bool, item drive.DownloadRestriction) *drive.DownloadRestrictionsMetadata {
	k := 0
	if hasItem {
		k = 1
		if item.RestrictedForReaders {
			k += 1
		}
		if item.RestrictedForWriters {
			k += 2
		}
	}
	if d.restrictionValues[k] == nil {
		r := &drive.DownloadRestrictionsMetadata{}
		if hasItem {
			r.ItemDownloadRestriction = &item
		}
		d.restrictionValues[k] = r
	}
	return d.restrictionValues[k]
}
