package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/config"
	"github.com/gin-gonic/gin"
)

// getPermissions is operation 4: a folder's Drive permissions, in Drive's
// order. The answer is the same for every caller who may see the folder, so
// it is encoded once per catalog.
func (s *Server) getPermissions(c *gin.Context) {
	lv, e, _, ok := s.folderParam(c, true)
	if !ok {
		return
	}
	body := e.permissions.Load()
	if body == nil {
		b, err := s.permissionsBody(c.Request.Context(), lv, e)
		if err != nil {
			s.writeError(c, err)
			return
		}
		e.permissions.Store(&b)
		body = &b
	}
	c.Data(http.StatusOK, "application/json; charset=utf-8", *body)
}

func (s *Server) permissionsBody(ctx context.Context, lv libraryView, e *entry) ([]byte, error) {
	perms, err := s.index.Permissions(ctx, lv.cfg.ID, e.ID)
	if err != nil {
		return nil, err
	}
	dom := s.cfg.Domain(lv.cfg.Domain)
	out := folderPermissionsJSON{
		StoragePermissions: make([]storagePermissionJSON, len(perms)),
		Kind:               kindFolderPermissions,
		RestrictedDownload: e.RestrictedDownload,
	}
	for i, p := range perms {
		out.StoragePermissions[i] = storagePermission(p, dom)
	}
	return json.Marshal(out)
}

// storagePermission shows a Drive permission of a library of domain dom.
func storagePermission(p fm.Permission, dom *config.Domain) storagePermissionJSON {
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
