package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	fm "github.com/foldermirror/foldermirror"
)

// Resource kinds.
const (
	kindFolder             = "service#folder"
	kindFolderList         = "service#folderList"
	kindFolderPermissions  = "service#folderStoragePermissions"
	kindStoragePermission  = "service#storagePermission"
	kindConfigurationFlags = "service#configurationFlags"
)

// A folder on the wire is, in the description's order: editable,
// editableDocuments (the caller's), fileId ... parentFolderIsRoot (the
// folder's: its head), permittedOperations (the caller's), resourceKey,
// restrictedDownload (the folder's: its tail), subfolders.

type headJSON struct {
	FileID                string `json:"fileId"`
	FolderServiceID       string `json:"folderServiceId"`
	FolderDefinitionID    string `json:"folderDefinitionId"`
	FolderIsRoot          bool   `json:"folderIsRoot"`
	Kind                  string `json:"kind"`
	LibraryID             string `json:"libraryId"`
	LibraryName           string `json:"libraryName"`
	Name                  string `json:"name"`
	ParentFolderServiceID string `json:"parentFolderServiceId"`
	ParentFolderStorageID string `json:"parentFolderStorageId"`
	ParentFolderIsRoot    bool   `json:"parentFolderIsRoot"`
}

type tailJSON struct {
	ResourceKey        string `json:"resourceKey"`
	RestrictedDownload bool   `json:"restrictedDownload"`
}

// encoder encodes the caller-independent parts of folders into large
// shared buffers (few allocations for a large library).
type encoder struct {
	tmp   bytes.Buffer
	enc   *json.Encoder
	arena []byte
}

// folder returns the head and tail of a folder of catalog c.
func (e *encoder) folder(c *catalog, f *fm.Folder) (head, tail []byte) {
	def := f.DefinitionID
	if def == "" {
		def = c.lib.FolderDefinitionID
	}
	head = e.fields(headJSON{
		FileID: f.ID, FolderServiceID: f.ID, FolderDefinitionID: def, FolderIsRoot: f.ID == c.rootID,
		Kind: kindFolder, LibraryID: c.lib.ID, LibraryName: c.lib.Name, Name: f.Name,
		ParentFolderServiceID: f.ParentID, ParentFolderStorageID: f.ParentID,
		ParentFolderIsRoot: f.ParentID != "" && f.ParentID == c.rootID,
	})
	tail = e.fields(tailJSON{ResourceKey: f.ResourceKey, RestrictedDownload: f.RestrictedDownload})
	return head, tail
}

// fields encodes v's fields without the braces, followed by a comma.
func (e *encoder) fields(v any) []byte {
	if e.enc == nil {
		e.enc = json.NewEncoder(&e.tmp)
		e.enc.SetEscapeHTML(false)
	}
	e.tmp.Reset()
	_ = e.enc.Encode(v) // strings and booleans only: cannot fail
	b := bytes.TrimSuffix(e.tmp.Bytes(), []byte("}\n"))[1:]
	return e.keep(append(b, ','))
}

// keep copies b into the arena.
func (e *encoder) keep(b []byte) []byte {
	if cap(e.arena)-len(e.arena) < len(b) {
		e.arena = make([]byte, 0, max(256<<10, len(b)))
	}
	start := len(e.arena)
	e.arena = append(e.arena, b...)
	return e.arena[start:len(e.arena):len(e.arena)]
}

// opsTable holds permittedOperations, encoded, for every combination that
// changes them.
type opsTable [3][2][2][2][]byte

func newOpsTable(sharingRequiresOrganizer bool) opsTable {
	var t opsTable
	for class, role := range []fm.Role{fm.RoleReader, fm.RoleWriter, fm.RoleFileOrganizer} {
		for restricted := range 2 {
			for isRoot := range 2 {
				for canShare := range 2 {
					writersCanShare := canShare == 1 && !sharingRequiresOrganizer
					ops, _ := json.Marshal(permittedOperations(role, restricted == 1, isRoot == 1, writersCanShare))
					t[class][restricted][isRoot][canShare] = ops
				}
			}
		}
	}
	return t
}

func (t *opsTable) get(role fm.Role, e *entry) []byte {
	class := 0
	switch {
	case role >= fm.RoleFileOrganizer:
		class = 2
	case role >= fm.RoleWriter:
		class = 1
	}
	return t[class][b2i(e.RestrictedDownload)][b2i(e.isRoot)][b2i(e.WritersCanShare)]
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

var (
	editableTrue  = []byte(`{"editable":true,"editableDocuments":true,`)
	editableFalse = []byte(`{"editable":false,"editableDocuments":false,`)
	opsKey        = []byte(`"permittedOperations":`)
	subfoldersKey = []byte(`,"subfolders":[`)
)

// appendFolder appends a folder for a caller of that role, up to and with
// the opening of its subfolders list.
func appendFolder(b []byte, ops *opsTable, e *entry, role fm.Role) []byte {
	if role >= fm.RoleWriter {
		b = append(b, editableTrue...)
	} else {
		b = append(b, editableFalse...)
	}
	b = append(b, e.head...)
	b = append(b, opsKey...)
	b = append(b, ops.get(role, e)...)
	b = append(b, ',')
	b = append(b, e.tail[:len(e.tail)-1]...) // its comma goes before subfolders
	return append(b, subfoldersKey...)
}

// folderBody is operation 5's answer: one folder, no subfolders.
func folderBody(ops *opsTable, e *entry, role fm.Role) []byte {
	b := make([]byte, 0, len(e.head)+len(e.tail)+256)
	b = appendFolder(b, ops, e, role)
	return append(b, "]}"...)
}

// A folder list is built in a buffer and sent in one write, with its
// length, when it fits in wholeAnswerBytes; a longer one streams, in chunks
// of streamChunkBytes, so that memory does not grow with a library's size.
const (
	wholeAnswerBytes = 1 << 20
	streamChunkBytes = 32 << 10
)

// streamWriteTimeout is the time each chunk of a stream gets, so that a long
// stream outlives the server's WriteTimeout while a stalled client does not.
const streamWriteTimeout = 30 * time.Second

// buffers recycles answer buffers: large answers do not each cost the
// garbage collector a megabyte.
var buffers = sync.Pool{New: func() any { b := make([]byte, 0, wholeAnswerBytes+64<<10); return &b }}

// folderStream writes a folder list:
// {"items":[ folder {..., "subfolders":[ ... ]} ... ],"kind":...}.
type folderStream struct {
	w         http.ResponseWriter
	rc        *http.ResponseController
	buf       *[]byte
	streaming bool
	err       error
	// first tells, per nesting level, that no item was written there yet.
	first []bool
}

func newFolderStream(w http.ResponseWriter) *folderStream {
	s := &folderStream{w: w, rc: http.NewResponseController(w), buf: buffers.Get().(*[]byte), first: []bool{true}}
	*s.buf = append((*s.buf)[:0], `{"items":[`...)
	return s
}

// open writes a folder at nesting depth (0: an item of the list), leaving
// its subfolders list open; close ends it.
func (s *folderStream) open(ops *opsTable, e *entry, role fm.Role, depth int) {
	b := *s.buf
	if !s.first[depth] {
		b = append(b, ',')
	}
	s.first[depth] = false
	*s.buf = appendFolder(b, ops, e, role)
	s.first = append(s.first[:depth+1], true)
}

func (s *folderStream) close() {
	*s.buf = append(*s.buf, "]}"...)
	s.spill()
}

// spill sends what is buffered once there is enough of it: a chunk while
// streaming, and the start of the stream when the answer is too long to be
// sent whole.
func (s *folderStream) spill() {
	switch n := len(*s.buf); {
	case s.streaming && n >= streamChunkBytes, !s.streaming && n >= wholeAnswerBytes:
		if !s.streaming {
			s.streaming = true
			s.w.Header().Set("Content-Type", "application/json; charset=utf-8")
			s.w.WriteHeader(http.StatusOK)
		}
		s.send()
	}
}

// send writes the buffer out, with a fresh write deadline.
func (s *folderStream) send() {
	if s.err == nil {
		_ = s.rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		if _, s.err = s.w.Write(*s.buf); s.err == nil {
			s.err = s.rc.Flush()
		}
	}
	*s.buf = (*s.buf)[:0]
}

// failed tells whether the client is gone: the rest need not be produced.
func (s *folderStream) failed() bool { return s.err != nil }

// finish ends the answer, and gives the buffer back.
func (s *folderStream) finish() error {
	defer buffers.Put(s.buf)
	*s.buf = append(*s.buf, `],"kind":"`+kindFolderList+`"}`...)
	if !s.streaming {
		h := s.w.Header()
		h.Set("Content-Type", "application/json; charset=utf-8")
		h.Set("Content-Length", strconv.Itoa(len(*s.buf)))
		s.w.WriteHeader(http.StatusOK)
		_, err := s.w.Write(*s.buf)
		return err
	}
	s.send()
	return s.err
}
