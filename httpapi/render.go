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
	// definitionID is the library's folderDefinitionId, escaped.
	definitionID string
	// afterDefinition runs from the end of folderDefinitionId to the
	// opening of name, for a folder that is the root ([1]) or not ([0]).
	afterDefinition [2][]byte
}

func newLibraryJSON(lib *fm.Library) *libraryJSON {
	lj := &libraryJSON{definitionID: jsonContents(lib.FolderDefinitionID)}
	for isRoot := range 2 {
		lj.afterDefinition[isRoot] = fmt.Appendf(nil, `","folderIsRoot":%t,"kind":%q,"libraryId":"%s","libraryName":"%s","name":"`,
			isRoot == 1, kindFolder, jsonContents(lib.ID), jsonContents(lib.Name))
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

// opsTable holds permittedOperations, encoded, for every combination that
// changes them.
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
					t[class][restricted][isRoot][canShare] = ops
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

var (
	openEditable       = [2]string{`{"editable":false,"editableDocuments":false,"fileId":"`, `{"editable":true,"editableDocuments":true,"fileId":"`}
	parentIsRootOps    = [2]string{`","parentFolderIsRoot":false,"permittedOperations":`, `","parentFolderIsRoot":true,"permittedOperations":`}
	restrictedSubfolds = [2]string{`","restrictedDownload":false,"subfolders":[`, `","restrictedDownload":true,"subfolders":[`}
)

// appendFolder appends a folder of lv for a caller of that role, up to and
// with the opening of its subfolders list.
func appendFolder(b []byte, lv *libraryView, v *catalog.View, role fm.Role) []byte {
	id, parent := v.ID, v.ParentID
	if v.EscapedID {
		id, parent = jsonContents(id), jsonContents(parent)
	}
	def := v.DefinitionID
	if def == "" {
		def = lv.json.definitionID
	}
	b = append(b, openEditable[b2i(role >= fm.RoleWriter)]...)
	b = append(b, id...)
	b = append(b, `","folderServiceId":"`...)
	b = append(b, id...)
	b = append(b, `","folderDefinitionId":"`...)
	b = append(b, def...)
	b = append(b, lv.json.afterDefinition[b2i(v.IsRoot)]...)
	b = append(b, v.EscapedName...)
	b = append(b, `","parentFolderServiceId":"`...)
	b = append(b, parent...)
	b = append(b, `","parentFolderStorageId":"`...)
	b = append(b, parent...)
	b = append(b, parentIsRootOps[b2i(v.ParentID != "" && v.ParentID == lv.lib.State.RootID)]...)
	b = append(b, lv.ops.get(role, v)...)
	b = append(b, `,"resourceKey":"`...)
	b = append(b, v.ResourceKey...)
	return append(b, restrictedSubfolds[b2i(v.Restricted)]...)
}

// folderBody is operation 5's answer: one folder, no subfolders.
func folderBody(lv *libraryView, v *catalog.View, role fm.Role) []byte {
	b := make([]byte, 0, 512+len(v.EscapedName))
	b = appendFolder(b, lv, v, role)
	return append(b, "]}"...)
}

// A folder list is built in a buffer and sent in one write, with its
// length, when it fits in wholeAnswerBytes; a longer one streams, in chunks
// of streamChunkBytes, so that memory does not grow with a library's size.
const (
	wholeAnswerBytes = 1 << 20
	streamChunkBytes = 32 << 10
)

// A stream holds a buffer and a revision of its library while its client
// reads it. So that slow readers cannot pin memory, a caller has at most
// StreamsPerCaller streams at once (beyond, 429 before anything is sent),
// each chunk must be taken within StreamChunkTimeout, and a whole stream
// within StreamDeadline (beyond, the connection is cut). The defaults:
const (
	streamsPerCaller   = 4
	streamChunkTimeout = 30 * time.Second
	streamDeadline     = 10 * time.Minute
)

// buffers recycles answer buffers: large answers do not each cost the
// garbage collector a megabyte.
var buffers = sync.Pool{New: func() any { b := make([]byte, 0, wholeAnswerBytes+64<<10); return &b }}

// errStreamDeadline cuts a stream that took longer than streamDeadline.
var errStreamDeadline = errors.New("the answer took longer than its deadline to be read")

// folderStream writes a folder list:
// {"items":[ folder {..., "subfolders":[ ... ]} ... ],"kind":...}.
type folderStream struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	buf *[]byte
	// startStream takes a stream slot of the caller's, when the answer
	// turns out too long to be sent whole; it returns the slot's release.
	startStream func() (release func(), err error)
	release     func()
	streaming   bool
	limits      *streamSlots
	deadline    time.Time
	// refused is why the answer could not stream; err why it cannot go on.
	refused, err error
	// first tells, per nesting level, that no item was written there yet.
	first []bool
}

// newFolderStream starts a folder list answering c, whose caller's streams
// are counted.
func (s *Server) newFolderStream(c *gin.Context) *folderStream {
	fs := &folderStream{w: c.Writer, rc: http.NewResponseController(c.Writer), buf: buffers.Get().(*[]byte),
		first: []bool{true}, limits: s.streams}
	key := budgetKey(callerOf(c).Identity)
	fs.startStream = func() (func(), error) { return s.streams.take(key) }
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
	*s.buf = appendFolder(b, lv, v, role)
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
		if s.release, s.refused = s.startStream(); s.refused != nil {
			s.err = s.refused
			return
		}
		s.streaming, s.deadline = true, time.Now().Add(s.limits.deadline)
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
		if _, s.err = s.w.Write(*s.buf); s.err == nil {
			s.err = s.rc.Flush()
		}
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

// finish ends the answer, gives the buffer back, and releases the stream's
// slot. An answer refused a stream was not started: refused tells why.
func (s *folderStream) finish() (refused, err error) {
	defer buffers.Put(s.buf)
	if s.release != nil {
		defer s.release()
	}
	if s.refused != nil {
		return s.refused, nil
	}
	*s.buf = append(*s.buf, `],"kind":"`+kindFolderList+`"}`...)
	if !s.streaming {
		h := s.w.Header()
		h.Set("Content-Type", "application/json; charset=utf-8")
		h.Set("Content-Length", strconv.Itoa(len(*s.buf)))
		s.w.WriteHeader(http.StatusOK)
		_, err := s.w.Write(*s.buf)
		return nil, err
	}
	s.send()
	return nil, s.err
}

// streamSlots counts each caller's streams, and bounds them.
type streamSlots struct {
	perCaller              int
	chunkTimeout, deadline time.Duration
	// active and cut are the metrics of streams under way, and of those
	// cut at their deadline.
	active prometheus.Gauge
	cut    prometheus.Counter

	mu    sync.Mutex
	count map[string]int
}

// take takes a stream slot of a caller's, and returns its release; it is
// refused (ERATELIMITED) when the caller has all its slots taken already.
func (ss *streamSlots) take(caller string) (func(), error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.count[caller] >= ss.perCaller {
		return nil, &fm.Error{Code: fm.ERATELIMITED, RetryAfter: 5 * time.Second,
			Message: fmt.Sprintf("Too many long answers under way for this caller (at most %d at once); try again after Retry-After seconds.", ss.perCaller)}
	}
	if ss.count == nil {
		ss.count = map[string]int{}
	}
	ss.count[caller]++
	ss.active.Inc()
	return func() {
		ss.mu.Lock()
		defer ss.mu.Unlock()
		ss.active.Dec()
		if ss.count[caller]--; ss.count[caller] == 0 {
			delete(ss.count, caller)
		}
	}, nil
}
