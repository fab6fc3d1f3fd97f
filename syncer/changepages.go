package syncer

import (
	"bytes"
	"encoding/json"
	"encoding/json/jsontext"
	"errors"
	"io"
	"sync"

	"github.com/foldermirror/foldermirror/internal/drivelist"
	drive "google.golang.org/api/drive/v3"
)

// changePages reads the pages of changes.list in place of the client
// library's decoding (googleclient.WithPageDecoder), as listedPages reads
// those of files.list: the changes around the files with jsontext, the
// files with drivelist. A page it takes is valid JSON (jsontext reads all
// of it, strictly), and nothing it keeps points into it; a page it does not
// take is the client library's to read, as before, once googleclient has
// checked it.
type changePages struct {
	mu   sync.Mutex
	dec  *drivelist.Decoder
	last *drive.ChangeList // read, not yet taken
	left int               // pages left to the client library
}

func newChangePages() *changePages { return &changePages{dec: drivelist.New()} }

// decode is the listing's googleclient.PageDecoder.
func (c *changePages) decode(body []byte) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	list, err := decodeChanges(c.dec, body)
	if err != nil {
		c.last = nil
		c.left++
		return nil, err
	}
	c.last = list
	return json.Marshal(&drive.ChangeList{NextPageToken: list.NextPageToken, NewStartPageToken: list.NewStartPageToken, Kind: list.Kind})
}

// take returns the page the client library decoded as list: the one read,
// if it was.
func (c *changePages) take(list *drive.ChangeList) *drive.ChangeList {
	c.mu.Lock()
	defer c.mu.Unlock()
	read := c.last
	c.last = nil
	if read == nil || read.NextPageToken != list.NextPageToken || read.NewStartPageToken != list.NewStartPageToken ||
		len(list.Changes) > 0 {
		return list
	}
	read.ServerResponse = list.ServerResponse
	return read
}

// errNotPlain: a page or change that decodeChanges leaves to the client
// library.
var errNotPlain = errors.New("not a plain page of changes")

// changeScanner reads a page of changes, gathering the JSON of their files
// in a page of files.
type changeScanner struct {
	d        *jsontext.Decoder
	files    []byte
	withFile []*drive.Change // the changes whose files are in files, in order
}

// decodeChanges decodes a changes.list page as encoding/json would, or
// fails. It takes the fields a sync asks for, each once, with their exact
// names; anything else (another key, a value of another type, a name given
// twice or escaped, invalid UTF-8) is an error. The changes' files,
// gathered in a page of files, are dec's to read; a change's shared drive,
// encoding/json's.
func decodeChanges(dec *drivelist.Decoder, page []byte) (*drive.ChangeList, error) {
	s := &changeScanner{d: jsontext.NewDecoder(bytes.NewBuffer(page)), files: append(make([]byte, 0, len(page)), `{"files":[`...)}
	list := &drive.ChangeList{}
	err := s.object(func(name []byte) error {
		switch string(name) {
		case "nextPageToken":
			return s.str(&list.NextPageToken)
		case "newStartPageToken":
			return s.str(&list.NewStartPageToken)
		case "kind":
			return s.str(&list.Kind)
		case "changes":
			return s.array(func() error {
				ch := &drive.Change{}
				list.Changes = append(list.Changes, ch)
				return s.change(ch)
			})
		}
		return errNotPlain
	})
	if err != nil {
		return nil, err
	}
	if _, err := s.d.ReadToken(); !errors.Is(err, io.EOF) {
		return nil, errNotPlain
	}
	read, err := dec.Decode(append(s.files, "]}"...))
	if err != nil {
		return nil, err
	}
	if len(read.Files) != len(s.withFile) {
		return nil, errNotPlain
	}
	for i, ch := range s.withFile {
		ch.File = read.Files[i]
	}
	return list, nil
}

// change reads a change, its file but into the page of files.
func (s *changeScanner) change(ch *drive.Change) error {
	return s.object(func(name []byte) error {
		switch string(name) {
		case "kind":
			return s.str(&ch.Kind)
		case "changeType":
			return s.str(&ch.ChangeType)
		case "removed":
			return s.boolean(&ch.Removed)
		case "fileId":
			return s.str(&ch.FileId)
		case "driveId":
			return s.str(&ch.DriveId)
		case "file":
			return s.file(ch)
		case "drive":
			return s.drive(ch)
		}
		return errNotPlain
	})
}

// drive reads a change's shared drive, rare enough for encoding/json to
// read.
func (s *changeScanner) drive(ch *drive.Change) error {
	switch s.d.PeekKind() {
	case 'n':
		_, err := s.d.ReadToken()
		return err
	case '{':
	default:
		return errNotPlain
	}
	v, err := s.d.ReadValue()
	if err != nil {
		return err
	}
	ch.Drive = &drive.Drive{}
	if err := json.Unmarshal(v, ch.Drive); err != nil {
		return errNotPlain
	}
	return nil
}

// file adds a change's file, unless null, to the page of files.
func (s *changeScanner) file(ch *drive.Change) error {
	switch s.d.PeekKind() {
	case 'n':
		_, err := s.d.ReadToken()
		return err
	case '{':
	default:
		return errNotPlain
	}
	v, err := s.d.ReadValue()
	if err != nil {
		return err
	}
	if len(s.withFile) > 0 {
		s.files = append(s.files, ',')
	}
	s.files = append(s.files, v...)
	s.withFile = append(s.withFile, ch)
	return nil
}

// object reads an object, handing each name (unquoted, valid until the
// next read) to field, which reads its value.
func (s *changeScanner) object(field func(name []byte) error) error {
	if t, err := s.d.ReadToken(); err != nil || t.Kind() != '{' {
		return errNotPlain
	}
	for s.d.PeekKind() != '}' {
		name, err := s.d.ReadValue()
		if err != nil || len(name) < 2 || bytes.IndexByte(name, '\\') >= 0 {
			return errNotPlain
		}
		if err := field(name[1 : len(name)-1]); err != nil {
			return err
		}
	}
	_, err := s.d.ReadToken()
	return err
}

// array reads an array, each element with elem.
func (s *changeScanner) array(elem func() error) error {
	if t, err := s.d.ReadToken(); err != nil || t.Kind() != '[' {
		return errNotPlain
	}
	for s.d.PeekKind() != ']' {
		if err := elem(); err != nil {
			return err
		}
	}
	_, err := s.d.ReadToken()
	return err
}

// str reads a string.
func (s *changeScanner) str(dst *string) error {
	t, err := s.d.ReadToken()
	if err != nil || t.Kind() != '"' {
		return errNotPlain
	}
	*dst = t.String()
	return nil
}

// boolean reads a boolean.
func (s *changeScanner) boolean(dst *bool) error {
	t, err := s.d.ReadToken()
	if err != nil || (t.Kind() != 't' && t.Kind() != 'f') {
		return errNotPlain
	}
	*dst = t.Bool()
	return nil
}
