package httpapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
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
	state := &fm.LibraryState{SharingRequiresOrganizer: sharingRequiresOrganizer}
	for class, role := range []fm.Role{fm.RoleReader, fm.RoleWriter, fm.RoleFileOrganizer} {
		for restricted := range 2 {
			for isRoot := range 2 {
				for canShare := range 2 {
					f := &fm.Folder{RestrictedDownload: restricted == 1, WritersCanShare: canShare == 1}
					ops, _ := json.Marshal(permittedOperations(role, f, isRoot == 1, state))
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
	comma         = []byte{','}
)

// writeFolder writes a folder for a caller of that role, up to and with the
// opening of its subfolders list.
func writeFolder(w io.Writer, ops *opsTable, e *entry, role fm.Role) {
	if role >= fm.RoleWriter {
		w.Write(editableTrue)
	} else {
		w.Write(editableFalse)
	}
	w.Write(e.head)
	w.Write(opsKey)
	w.Write(ops.get(role, e))
	w.Write(comma)
	w.Write(e.tail[:len(e.tail)-1]) // its comma goes before subfolders
	w.Write(subfoldersKey)
}

// folderBody is operation 5's answer: one folder, no subfolders.
func folderBody(ops *opsTable, e *entry, role fm.Role) []byte {
	var b bytes.Buffer
	b.Grow(len(e.head) + len(e.tail) + 256)
	writeFolder(&b, ops, e, role)
	b.WriteString("]}")
	return b.Bytes()
}

// streamFlushBytes is how much a folder stream buffers before writing out.
const streamFlushBytes = 32 << 10

// streamWriteTimeout is the time each flush of a stream gets, so that a long
// stream outlives the server's WriteTimeout while a stalled client does not.
const streamWriteTimeout = 30 * time.Second

// folderStream writes a folder list as it is produced:
// {"items":[ folder {..., "subfolders":[ ... ]} ... ],"kind":...}.
type folderStream struct {
	*bufio.Writer
	w  http.ResponseWriter
	rc *http.ResponseController
	// first tells, per nesting level, that no item was written there yet.
	first []bool
}

func newFolderStream(w http.ResponseWriter) *folderStream {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	s := &folderStream{w: w, rc: http.NewResponseController(w), first: []bool{true}}
	s.Writer = bufio.NewWriterSize(flushWriter{s}, streamFlushBytes)
	s.WriteString(`{"items":[`)
	return s
}

// open writes a folder at nesting depth (0: an item of the list), leaving
// its subfolders list open; close ends it.
func (s *folderStream) open(ops *opsTable, e *entry, role fm.Role, depth int) {
	if !s.first[depth] {
		s.WriteByte(',')
	}
	s.first[depth] = false
	writeFolder(s, ops, e, role)
	s.first = append(s.first[:depth+1], true)
}

func (s *folderStream) close() { s.WriteString("]}") }

// finish ends the response.
func (s *folderStream) finish() error {
	s.WriteString(`],"kind":"` + kindFolderList + `"}`)
	return s.Flush()
}

// flushWriter sends a stream's buffer to the client at once, with a fresh
// write deadline.
type flushWriter struct{ s *folderStream }

func (w flushWriter) Write(p []byte) (int, error) {
	_ = w.s.rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	n, err := w.s.w.Write(p)
	if err != nil {
		return n, err
	}
	return n, w.s.rc.Flush()
}
