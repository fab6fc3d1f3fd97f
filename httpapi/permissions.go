package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"

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
	body, ok := s.answers.get(key)
	if !ok {
		var err error
		if body, err = s.permissionsBody(c.Request.Context(), lv, key); err != nil {
			s.writeError(c, err)
			return
		}
		s.answers.put(key, body)
	}
	c.Data(http.StatusOK, "application/json; charset=utf-8", body)
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

// answerCache keeps encoded answers of operation 4, up to about maxBytes:
// two generations, the older dropped when the newer fills its half, so that
// answers in use stay and the cache never grows past its bound.
type answerCache struct {
	mu       sync.Mutex
	cur, old map[answerKey][]byte
	curBytes int
	maxBytes int
}

func newAnswerCache(maxBytes int) *answerCache {
	return &answerCache{cur: map[answerKey][]byte{}, maxBytes: maxBytes}
}

func (ac *answerCache) get(k answerKey) ([]byte, bool) {
	ac.mu.Lock()
	defer ac.mu.Unlock()
	if b, ok := ac.cur[k]; ok {
		return b, true
	}
	b, ok := ac.old[k]
	if ok {
		ac.add(k, b)
	}
	return b, ok
}

func (ac *answerCache) put(k answerKey, b []byte) {
	ac.mu.Lock()
	defer ac.mu.Unlock()
	ac.add(k, b)
}

// add keeps an answer in the newer generation. Call with ac.mu held.
func (ac *answerCache) add(k answerKey, b []byte) {
	if ac.curBytes+len(b) > ac.maxBytes/2 {
		ac.old, ac.cur, ac.curBytes = ac.cur, map[answerKey][]byte{}, 0
	}
	ac.cur[k] = b
	ac.curBytes += len(b)
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
