package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/httpapi/catalog"
	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
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
// folder's), permittedOperations (the caller's), resourceKey,
// restrictedDownload (the folder's), subfolders. It is assembled from
// pieces: the catalog's fields, escaped already, and the JSON between them,
// made once.

// libraryJSON is the JSON a library's folders share.
type libraryJSON struct {
	// afterDefinition runs from the end of folderDefinitionId to the
	// opening of name, for a folder that is the root ([1]) or not ([0]);
	// libraryDefinition the same from the opening of folderDefinitionId,
	// the library's, for a folder without its own.
	afterDefinition, libraryDefinition [2][]byte
}

func newLibraryJSON(lib *fm.Library) *libraryJSON {
	lj := &libraryJSON{}
	for isRoot := range 2 {
		lj.afterDefinition[isRoot] = fmt.Appendf(nil, `","folderIsRoot":%t,"kind":%q,"libraryId":"%s","libraryName":"%s","name":"`,
			isRoot == 1, kindFolder, jsonContents(lib.ID), jsonContents(lib.Name))
		lj.libraryDefinition[isRoot] = fmt.Appendf(nil, `%s%s%s`, openDefinition, jsonContents(lib.FolderDefinitionID), lj.afterDefinition[isRoot])
	}
	return lj
}

// jsonContents returns s escaped as a JSON string's contents.
func jsonContents(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string: cannot fail
	out := bytes.TrimSpace(buf.Bytes())
	return string(out[1 : len(out)-1])
}

// opsTable holds permittedOperations, encoded and followed by the opening
// of resourceKey, for every combination that changes them.
type opsTable [3][2][2][2][]byte

// opsTables are the tables of libraries where writers may share folders
// ([0]) and where sharing a folder asks for an organizer ([1]).
var opsTables = [2]opsTable{newOpsTable(false), newOpsTable(true)}

func newOpsTable(sharingRequiresOrganizer bool) opsTable {
	var t opsTable
	for class, role := range []fm.Role{fm.RoleReader, fm.RoleWriter, fm.RoleFileOrganizer} {
		for restricted := range 2 {
			for isRoot := range 2 {
				for canShare := range 2 {
					writersCanShare := canShare == 1 && !sharingRequiresOrganizer
					ops, _ := json.Marshal(permittedOperations(role, restricted == 1, isRoot == 1, writersCanShare))
					t[class][restricted][isRoot][canShare] = append(ops, `,"resourceKey":"`...)
				}
			}
		}
	}
	return t
}

func (t *opsTable) get(role fm.Role, v *catalog.View) []byte {
	class := 0
	switch {
	case role >= fm.RoleFileOrganizer:
		class = 2
	case role >= fm.RoleWriter:
		class = 1
	}
	return t[class][b2i(v.Restricted)][b2i(v.IsRoot)][b2i(v.WritersCanShare)]
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

const openDefinition = `","folderDefinitionId":"`

var (
	openEditable       = [2]string{`{"editable":false,"editableDocuments":false,"fileId":"`, `{"editable":true,"editableDocuments":true,"fileId":"`}
	parentIsRootOps    = [2]string{`","parentFolderIsRoot":false,"permittedOperations":`, `","parentFolderIsRoot":true,"permittedOperations":`}
	restrictedSubfolds = [2]string{`","restrictedDownload":false,"subfolders":[`, `","restrictedDownload":true,"subfolders":[`}
)

// appendFolder appends a folder of lv for a caller of that role, up to and
// with the opening of its subfolders list; parent holds the JSON of the
// last parent written, which siblings share.
func appendFolder(b []byte, lv *libraryView, v *catalog.View, role fm.Role, parent *parentJSON) []byte {
	id := v.ID
	if v.EscapedID {
		id = jsonContents(id)
	}
	b = append(b, openEditable[b2i(role >= fm.RoleWriter)]...)
	b = append(b, id...)
	b = append(b, `","folderServiceId":"`...)
	b = append(b, id...)
	if v.DefinitionID == "" {
		b = append(b, lv.json.libraryDefinition[b2i(v.IsRoot)]...)
	} else {
		b = append(b, openDefinition...)
		b = append(b, v.DefinitionID...)
		b = append(b, lv.json.afterDefinition[b2i(v.IsRoot)]...)
	}
	b = append(b, v.EscapedName...)
	b = append(b, parent.of(lv, v)...)
	b = append(b, lv.ops.get(role, v)...)
	b = append(b, v.ResourceKey...)
	return append(b, restrictedSubfolds[b2i(v.Restricted)]...)
}

// parentJSON is the JSON of a folder's parent, from the end of the
// folder's name to the opening of permittedOperations, as last made for a
// library's folder: siblings share it.
type parentJSON struct {
	id   string
	json []byte
}

// of returns the JSON of v's parent, v a folder of lv, the library of
// every folder the parentJSON is asked for.
func (p *parentJSON) of(lv *libraryView, v *catalog.View) []byte {
	if p.json != nil && p.id == v.ParentID {
		return p.json
	}
	parent := v.ParentID
	if v.EscapedID {
		parent = jsonContents(parent)
	}
	b := append(p.json[:0], `","parentFolderServiceId":"`...)
	b = append(b, parent...)
	b = append(b, `","parentFolderStorageId":"`...)
	b = append(b, parent...)
	p.json = append(b, parentIsRootOps[b2i(v.ParentID != "" && v.ParentID == lv.lib.State.RootID)]...)
	p.id = v.ParentID
	return p.json
}

// folderBody is operation 5's answer: one folder, no subfolders.
func folderBody(lv *libraryView, v *catalog.View, role fm.Role) []byte {
	b := make([]byte, 0, 512+len(v.EscapedName))
	b = appendFolder(b, lv, v, role, &parentJSON{})
	return append(b, "]}"...)
}

// A folder list is built in a buffer and sent in one write, with its
// length, when it fits in wholeAnswerBytes; a longer one streams, in chunks
// of streamChunkBytes, so that an answer being written holds little memory
// whatever its length, and however slowly its client reads it: a slow
// reader holds a request's slot (see answerSlots), a buffer of about a
// chunk, and what the kernel buffers for its connection (sendBufferBytes).
// Chunks are written as they fill, not flushed one by one: each costs a
// write or two, and an answer of 600 KB is served about as fast as one
// built whole (with 32 KB chunks each flushed, 40 % slower).
const (
	wholeAnswerBytes = 64 << 10
	streamChunkBytes = 128 << 10
)

// A stream holds a buffer and a revision of its library while its client
// reads it. Each chunk must be taken within StreamChunkTimeout, and a whole
// stream within StreamDeadline (beyond, the connection is cut). The
// defaults:
const (
	streamChunkTimeout = 30 * time.Second
	streamDeadline     = 10 * time.Minute
)

// buffers recycles answer buffers.
var buffers = sync.Pool{New: func() any { b := make([]byte, 0, streamChunkBytes+16<<10); return &b }}

// errStreamDeadline cuts a stream that took longer than streamDeadline.
var errStreamDeadline = errors.New("the answer took longer than its deadline to be read")

// folderStream writes a folder list:
// {"items":[ folder {..., "subfolders":[ ... ]} ... ],"kind":...}.
type folderStream struct {
	w         http.ResponseWriter
	rc        *http.ResponseController
	buf       *[]byte
	streaming bool
	limits    *streamLimits
	deadline  time.Time
	// err is why the answer cannot go on.
	err error
	// first tells, per nesting level, that no item was written there yet.
	first []bool
	// parent is the JSON of the parent of the folder written last.
	parent parentJSON
}

// streamLimits bound streams in time, and count them.
type streamLimits struct {
	chunkTimeout, deadline time.Duration
	// active and cut are the metrics of streams under way, and of those
	// cut at their deadline.
	active prometheus.Gauge
	cut    prometheus.Counter
}

// newFolderStream starts a folder list answering c.
func (s *Server) newFolderStream(c *gin.Context) *folderStream {
	fs := &folderStream{w: c.Writer, rc: http.NewResponseController(c.Writer), buf: buffers.Get().(*[]byte),
		first: []bool{true}, limits: s.streams}
	*fs.buf = append((*fs.buf)[:0], `{"items":[`...)
	return fs
}

// open writes a folder at nesting depth (0: an item of the list), leaving
// its subfolders list open; close ends it.
func (s *folderStream) open(lv *libraryView, v *catalog.View, role fm.Role, depth int) {
	b := *s.buf
	if !s.first[depth] {
		b = append(b, ',')
	}
	s.first[depth] = false
	*s.buf = appendFolder(b, lv, v, role, &s.parent)
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
	case s.err != nil:
		*s.buf = (*s.buf)[:0]
	case s.streaming && n >= streamChunkBytes:
		s.send()
	case !s.streaming && n >= wholeAnswerBytes:
		s.streaming, s.deadline = true, time.Now().Add(s.limits.deadline)
		s.limits.active.Inc()
		s.w.Header().Set("Content-Type", "application/json; charset=utf-8")
		s.w.WriteHeader(http.StatusOK)
		s.send()
	}
}

// send writes the buffer out, with a fresh write deadline.
func (s *folderStream) send() {
	defer func() { *s.buf = (*s.buf)[:0] }()
	if s.err != nil {
		return
	}
	if !time.Now().Before(s.deadline) {
		s.err = errStreamDeadline
	} else {
		chunk := time.Now().Add(s.limits.chunkTimeout)
		if chunk.After(s.deadline) {
			chunk = s.deadline
		}
		_ = s.rc.SetWriteDeadline(chunk)
		_, s.err = s.w.Write(*s.buf)
		if s.err != nil && !time.Now().Before(s.deadline) {
			s.err = fmt.Errorf("%w: %w", errStreamDeadline, s.err)
		}
	}
	if errors.Is(s.err, errStreamDeadline) {
		s.limits.cut.Inc()
	}
}

// failed tells whether the answer cannot go on (the client is gone, say):
// the rest need not be produced.
func (s *folderStream) failed() bool { return s.err != nil }

// finish ends the answer and gives the buffer back.
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
	defer s.limits.active.Dec()
	s.send()
	return s.err
}
