package httpapi

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"

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
	h := c.Writer.Header()
	h.Set("ETag", tag)
	h.Set("Cache-Control", "private, no-cache")
	h.Set("Vary", "Authorization, "+resourceKeysHeader) // a link's resource key opens a folder
	if t := lv.state().LastSynced(); !t.IsZero() {
		h.Set("Last-Modified", t.UTC().Format(http.TimeFormat))
	}
	if matches(c.GetHeader("If-None-Match"), tag) {
		c.AbortWithStatus(http.StatusNotModified)
		return true
	}
	return false
}

func etag(lv *libraryView, cl *caller) string {
	h := sha256.New()
	var rev [8]byte
	binary.BigEndian.PutUint64(rev[:], lv.state().Revision)
	h.Write(rev[:])
	h.Write(lv.configTag)
	h.Write([]byte(lv.state().RootID))
	h.Write([]byte{0})
	principals := slices.Clone(cl.principals)
	slices.Sort(principals)
	for _, p := range principals {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	if cl.Admin {
		h.Write([]byte("admin:" + cl.CodeDomain))
	}
	return `"` + hex.EncodeToString(h.Sum(nil)[:16]) + `"`
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
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == tag {
			return true
		}
	}
	return false
}
