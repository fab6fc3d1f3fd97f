package drivelist

import (
	"encoding/json"
	"fmt"

	drive "google.golang.org/api/drive/v3"
)

// Keys of a changes.list page and of a change (see fileListKeys).
var (
	changeListKeys = keyset(drive.ChangeList{}, "nextPageToken", "newStartPageToken", "kind", "changes")
	changeKeys     = keyset(drive.Change{}, "kind", "changeType", "removed", "fileId", "driveId", "file", "drive", "time")
)

// DecodeChanges decodes a changes.list page as Decode decodes a files.list
// page, with the same errors: its changes' files as Decode reads files,
// a change's shared drive (rare) by encoding/json.
func (d *Decoder) DecodeChanges(page []byte) (*drive.ChangeList, error) {
	list := &drive.ChangeList{}
	if err := d.readWhole(page, func() error { return d.changeList(list) }); err != nil {
		return nil, err
	}
	return list, nil
}

func (d *Decoder) changeList(list *drive.ChangeList) error {
	var seen uint32
	return d.object(&seen, func(key []byte) error {
		switch string(key) {
		case "nextPageToken":
			return d.str(&list.NextPageToken)
		case "newStartPageToken":
			return d.str(&list.NewStartPageToken)
		case "kind":
			return d.str(&list.Kind)
		case "changes":
			list.Changes = []*drive.Change{}
			return d.array(func() { list.Changes = nil }, func() error {
				ch := &drive.Change{}
				list.Changes = append(list.Changes, ch)
				return d.change(ch)
			})
		}
		return errUnknown
	}, changeListKeys)
}

// change reads a change.
func (d *Decoder) change(ch *drive.Change) error {
	if d.s.peek() != '{' {
		return fmt.Errorf("%w: a change is not an object", ErrNotPlain)
	}
	var seen uint32
	return d.object(&seen, func(key []byte) error {
		switch string(key) {
		case "kind":
			return d.interned(&ch.Kind)
		case "changeType":
			return d.interned(&ch.ChangeType)
		case "removed":
			return d.boolean(&ch.Removed)
		case "fileId":
			return d.str(&ch.FileId)
		case "driveId":
			return d.str(&ch.DriveId)
		case "time":
			return d.str(&ch.Time)
		case "file":
			if d.null() {
				return nil
			}
			ch.File = &drive.File{}
			return d.file(ch.File)
		case "drive":
			return d.sharedDrive(ch)
		}
		return errUnknown
	}, changeKeys)
}

// sharedDrive reads a change's shared drive with encoding/json.
func (d *Decoder) sharedDrive(ch *drive.Change) error {
	if d.null() {
		return nil
	}
	if d.s.peek() != '{' {
		return fmt.Errorf("%w: a drive is not an object", ErrNotPlain)
	}
	raw, err := d.s.skip()
	if err != nil {
		return err
	}
	ch.Drive = &drive.Drive{}
	if err := json.Unmarshal(raw, ch.Drive); err != nil {
		return fmt.Errorf("%w: %w", ErrNotPlain, err)
	}
	return nil
}
