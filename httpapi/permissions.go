package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"

	fm "github.com/foldermirror/foldermirror"
	"github.com/gin-gonic/gin"
)

// getPermissions is operation 4: a folder's Drive permissions, in Drive's
// order. The answer depends on the folder's permission set, its download
// restriction and its library's domain alone (not on the library's name):
// it is encoded once and kept (see answerCache).
func (s *Server) getPermissions(c *gin.Context) {
	lv, r, _, ok := s.folderParam(c, true)
	if !ok {
		return
	}
	v := lv.lib.View(r)
	key := answerKey{library: lv.def.ID, domain: lv.def.Domain, set: lv.lib.SetKey(v.Set), restricted: v.Restricted}
	a, ok := s.answers.get(key)
	if !ok {
		body, err := s.permissionsBody(c.Request.Context(), lv, key)
		if err != nil {
			s.writeError(c, err)
			return
		}
		a = newEncodedAnswer(body)
		s.answers.put(key, a)
	}
	a.write(c)
}

func (s *Server) permissionsBody(ctx context.Context, lv *libraryView, key answerKey) ([]byte, error) {
	perms, err := s.index.PermissionSet(ctx, lv.def.ID, key.set)
	if err != nil {
		return nil, err
	}
	dom := s.domain(key.domain)
	out := folderPermissionsJSON{
		StoragePermissions: make([]storagePermissionJSON, len(perms)),
		Kind:               kindFolderPermissions,
		RestrictedDownload: key.restricted,
	}
	for i, p := range perms {
		out.StoragePermissions[i] = storagePermission(p, dom)
	}
	return json.Marshal(out)
}

// answerKey is what an answer of operation 4 depends on: the set's
// permissions (read from its library's tree), the download restriction,
// and the domain they are shown for, the library's, which the library set
// may change while the server runs.
type answerKey struct {
	library, domain string
	set             fm.PermissionSetKey
	restricted      bool
}

// encodedAnswer is an encoded answer of operation 4 with the values of its
// headers, made once for every request it answers.
type encodedAnswer struct {
	body []byte
	// contentLength is its Content-Length header's values. A header's
	// values may be shared between responses: net/http only reads them,
	// and Header.Add appends to a copy, their capacity being their length.
	contentLength []string
}

func newEncodedAnswer(body []byte) *encodedAnswer {
	return &encodedAnswer{body: body, contentLength: []string{strconv.Itoa(len(body))}}
}

// jsonContentType is the values of the Content-Type header of a JSON
// answer, shared as encodedAnswer.contentLength is.
var jsonContentType = []string{"application/json; charset=utf-8"}

// write answers 200 with the answer, as c.Data does: Content-Type unless
// the handler set it, Content-Length, the body.
func (a *encodedAnswer) write(c *gin.Context) {
	h := c.Writer.Header()
	if len(h["Content-Type"]) == 0 {
		h["Content-Type"] = jsonContentType
	}
	h["Content-Length"] = a.contentLength
	c.Status(http.StatusOK)
	if _, err := c.Writer.Write(a.body); err != nil {
		_ = c.Error(err)
		c.Abort()
	}
}

// answerCache keeps encoded answers of operation 4, up to about maxBytes
// of their bodies (see generations).
type answerCache = generations[answerKey, *encodedAnswer]

func newAnswerCache(maxBytes int) *answerCache {
	return newGenerations(maxBytes, func(_ answerKey, a *encodedAnswer) int { return len(a.body) })
}

// storagePermission shows a Drive permission of a library of domain dom.
func storagePermission(p fm.Permission, dom *Domain) storagePermissionJSON {
	out := storagePermissionJSON{
		AdditionalRoles:              additionalRoles(p.Role),
		Email:                        p.EmailAddress,
		IdentityProviderEmailAddress: p.Type == "user" || p.Type == "group",
		Kind:                         kindStoragePermission,
		Name:                         p.DisplayName,
		PermissionID:                 p.ID,
		Role:                         wireRole(p.Role),
		ThumbnailPhotoURL:            p.PhotoLink,
		Type:                         strings.ToUpper(p.Type),
		WithLink:                     (p.Type == "domain" || p.Type == "anyone") && !p.AllowFileDiscovery,
	}
	grantee := fm.EmailDomain(p.EmailAddress)
	switch p.Type {
	case "domain":
		out.Email = p.Domain
		grantee = strings.ToLower(p.Domain)
	case "anyone":
		out.Email = ""
		grantee = ""
	}
	out.BelongsToDomain = grantee != "" && grantee == dom.Name
	out.Allowlisted = out.BelongsToDomain || (grantee != "" && slices.Contains(dom.AllowlistedDomains, grantee))
	return out
}

func wireRole(role string) string {
	switch role {
	case "owner":
		return "OWNER"
	case "organizer", "fileOrganizer", "writer":
		return "WRITER"
	case "commenter", "reader":
		return "READER"
	}
	return strings.ToUpper(role)
}

func additionalRoles(role string) []string {
	switch role {
	case "commenter":
		return []string{"COMMENTER"}
	case "organizer":
		return []string{"ORGANIZER"}
	case "fileOrganizer":
		return []string{"FILE_ORGANIZER"}
	}
	return []string{}
}
