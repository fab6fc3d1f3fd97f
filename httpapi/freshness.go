package httpapi

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/gin-gonic/gin"
)

// validate sets the freshness headers of a folder answer and reports
// whether the caller's copy is current (If-None-Match), in which case it
// answers 304 without a body. Last-Modified is when the library was last
// synced. The ETag changes whenever the answer may have: a sync changed the
// library, the configuration its answers show changed, or the caller's
// principals did (its groups, say).
func (s *Server) validate(c *gin.Context, lv *libraryView) bool {
	tag := etag(lv, callerOf(c))
	// Set by canonical key, with values made once (see encodedAnswer).
	h := c.Writer.Header()
	h["Etag"] = []string{tag}
	h["Cache-Control"] = cacheControl
	h["Vary"] = vary // a link's resource key opens a folder
	if lm := lv.st.lastModified(lv.state().LastSynced()); lm != nil {
		h["Last-Modified"] = lm
	}
	if matches(c.GetHeader("If-None-Match"), tag) {
		c.AbortWithStatus(http.StatusNotModified)
		return true
	}
	return false
}

// Values of the freshness headers that are the same for every answer.
var (
	cacheControl = []string{"private, no-cache"}
	vary         = []string{"Authorization, " + resourceKeysHeader}
)

// lastModified returns the values of the Last-Modified header of a library
// last synced at t (nil for the zero time), formatted once a sync.
func (st *libState) lastModified(t time.Time) []string {
	if t.IsZero() {
		return nil
	}
	if lm := st.lastSynced.Load(); lm != nil && lm.at.Equal(t) {
		return lm.header
	}
	lm := &httpDate{at: t, header: []string{t.UTC().Format(http.TimeFormat)}}
	st.lastSynced.Store(lm)
	return lm.header
}

// httpDate is a time and the values of a header that shows it.
type httpDate struct {
	at     time.Time
	header []string
}

// etag is a strong validator of what a library's answers show the caller:
// a digest of the library's revision, configuration and root, and of the
// caller's principals (sorted by newCaller) and admin domain.
func etag(lv *libraryView, cl *caller) string {
	buf := make([]byte, 8, 512) // on the stack unless the principals are long
	binary.BigEndian.PutUint64(buf, lv.state().Revision)
	buf = append(buf, lv.configTag...)
	buf = append(buf, lv.state().RootID...)
	buf = append(buf, 0)
	for _, p := range cl.principals {
		buf = append(buf, p...)
		buf = append(buf, 0)
	}
	if cl.Admin {
		buf = append(buf, "admin:"...)
		buf = append(buf, cl.CodeDomain...)
	}
	sum := sha256.Sum256(buf)
	var tag [2 + 2*16]byte
	tag[0], tag[len(tag)-1] = '"', '"'
	hex.Encode(tag[1:len(tag)-1], sum[:16])
	return string(tag[:])
}

// configTag sums up what of the configuration a library's answers show: its
// own keys, and its domain's, dom (belongsToDomain and allowlisted depend
// on the domain's name and allowlistedDomains). A change of any of them,
// read at the next start or made by the library set (a discovered drive
// renamed), changes the ETags of the library's answers.
func configTag(lib *fm.Library, dom *Domain) []byte {
	h := sha256.New()
	parts := []string{lib.ID, lib.Name, lib.FolderDefinitionID, lib.Domain}
	if dom != nil {
		parts = append(parts, slices.Sorted(slices.Values(dom.AllowlistedDomains))...)
	}
	for _, part := range parts {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return h.Sum(nil)
}

// matches tells whether an If-None-Match header names tag (weak
// comparison, as RFC 9110 asks for If-None-Match).
func matches(header, tag string) bool {
	for t := range strings.SplitSeq(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == tag {
			return true
		}
	}
	return false
}
