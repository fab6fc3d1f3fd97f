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
// of resourceKey, for every combination that changes them (see opsIndex).
type opsTable [opsCombinations][]byte

// opsCombinations is the number of combinations of a caller's role class
// (reader, writer, organizer) and a folder's flags (restricted, root, on
// which writers may share) that change permittedOperations.
const opsCombinations = 3 * 2 * 2 * 2

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
					t[opsCombination(class, restricted, isRoot, canShare)] = append(ops, `,"resourceKey":"`...)
				}
			}
		}
	}
	return t
}

func opsCombination(class, restricted, isRoot, canShare int) int {
	return class<<3 | restricted<<2 | isRoot<<1 | canShare
}

// restrictedOf returns 1 if the folders of combination k restrict
// downloads, else 0.
func restrictedOf(k int) int { return k >> 2 & 1 }

// opsIndex returns the combination of a caller of role and folder v.
func opsIndex(role fm.Role, v *catalog.View) int { return roleClass(role) | folderCombination(v) }

// folderCombination is what of a combination (see opsIndex) a folder's
// flags make.
func folderCombination(v *catalog.View) int {
	return opsCombination(0, b2i(v.Restricted), b2i(v.IsRoot), b2i(v.WritersCanShare))
}

// roleClass is what of a combination (see opsIndex) a caller's role makes.
func roleClass(role fm.Role) int {
	switch {
	case role >= fm.RoleFileOrganizer:
		return opsCombination(2, 0, 0, 0)
	case role >= fm.RoleWriter:
		return opsCombination(1, 0, 0, 0)
	}
	return 0
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
	b = appendFields(b, lv, v, id)
	tail, key := parent.tail(lv, v, role)
	if v.ResourceKey == "" {
		return append(b, tail...)
	}
	b = append(b, tail[:key]...)
	b = append(b, v.ResourceKey...)
	return append(b, tail[key:]...)
}

// appendFields appends the fields of v, a folder of lv whose ID is id
// (escaped), that do not depend on the caller or on the folder's parent:
// from fileId's value to name's.
func appendFields(b []byte, lv *libraryView, v *catalog.View, id string) []byte {
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
	return append(b, v.EscapedName...)
}

// parentJSON is the JSON that follows a folder's name, as last made for a
// library's folder: its parent's fields, then permittedOperations up to
// the opening of its subfolders list, resourceKey's contents left out.
// Siblings share it but for the caller's role class and their flags, so
// it is made once for each combination of those (see opsIndex) a run of
// siblings has: a listing's folders mostly have one or two.
type parentJSON struct {
	id    string
	known bool
	// buf holds the parent's fields (up to fields), then the tails made
	// for it, at tails[k] for combination k if made has its bit k.
	buf    []byte
	fields int
	tails  [opsCombinations]struct{ start, key, end uint32 }
	made   uint32
}

// tail returns the JSON that follows the name of v, a folder of lv, for a
// caller of role, lv the library of every folder the parentJSON is asked
// for; the folder's resource key goes at key.
func (p *parentJSON) tail(lv *libraryView, v *catalog.View, role fm.Role) (tail []byte, key int) {
	if !p.known || p.id != v.ParentID {
		parent := v.ParentID
		if v.EscapedID {
			parent = jsonContents(parent)
		}
		p.reset(lv, v.ParentID, parent)
	}
	return p.tailOf(lv, opsIndex(role, v))
}

// tailOf returns the tail of combination k (see opsIndex) for the parent
// last reset.
func (p *parentJSON) tailOf(lv *libraryView, k int) (tail []byte, key int) {
	if p.made&(1<<k) == 0 {
		start := len(p.buf)
		b := append(p.buf, p.buf[:p.fields]...)
		b = append(b, lv.ops[k]...)
		key := len(b)
		p.buf = append(b, restrictedSubfolds[restrictedOf(k)]...)
		p.tails[k].start, p.tails[k].key, p.tails[k].end = uint32(start), uint32(key), uint32(len(p.buf))
		p.made |= 1 << k
	}
	t := &p.tails[k]
	return p.buf[t.start:t.end], int(t.key - t.start)
}

// reset makes the fields of parent id, a folder of lv (or "", none),
// escaped as escaped.
func (p *parentJSON) reset(lv *libraryView, id, escaped string) {
	b := append(p.buf[:0], `","parentFolderServiceId":"`...)
	b = append(b, escaped...)
	b = append(b, `","parentFolderStorageId":"`...)
	b = append(b, escaped...)
	p.buf = append(b, parentIsRootOps[b2i(id != "" && id == lv.lib.State.RootID)]...)
	p.fields, p.made = len(p.buf), 0
	p.id, p.known = id, true
}

// folderBody is operation 5's answer: one folder, no subfolders.
func folderBody(lv *libraryView, v *catalog.View, role fm.Role) []byte {
	pb := parentBuffers.Get().(*[]byte)
	defer parentBuffers.Put(pb)
	parent := parentJSON{buf: (*pb)[:0]}
	b := make([]byte, 0, 512+len(v.EscapedName)+len(v.ResourceKey))
	b = appendFolder(b, lv, v, role, &parent)
	*pb = parent.buf[:0]
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

// buffers recycles answer buffers, and parentBuffers those of parentJSON
// (a few tails of some 300 bytes).
var (
	buffers       = sync.Pool{New: func() any { b := make([]byte, 0, streamChunkBytes+16<<10); return &b }}
	parentBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 2<<10); return &b }}
)

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
	// parent is the JSON of the parent of the folder written last, its
	// buffer parentBuf's.
	parent    parentJSON
	parentBuf *[]byte
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
		first: []bool{true}, limits: s.streams, parentBuf: parentBuffers.Get().(*[]byte)}
	*fs.buf = append((*fs.buf)[:0], `{"items":[`...)
	fs.parent.buf = (*fs.parentBuf)[:0]
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

// finish ends the answer and gives the buffers back.
func (s *folderStream) finish() error {
	defer buffers.Put(s.buf)
	*s.parentBuf = s.parent.buf[:0]
	defer parentBuffers.Put(s.parentBuf)
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
