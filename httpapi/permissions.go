package httpapi

import (
	"net/http"
	"slices"
	"strings"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/config"
	"github.com/gin-gonic/gin"
)

// getPermissions is operation 4: a folder's Drive permissions, in Drive's order.
func (s *Server) getPermissions(c *gin.Context) {
	ctx, cl := c.Request.Context(), callerOf(c)
	lv, f, _, err := s.locateFolder(ctx, cl, c.Param("folderId"))
	if err != nil {
		s.writeError(c, err)
		return
	}
	perms, err := s.index.Permissions(ctx, lv.cfg.ID, f.ID)
	if err != nil {
		s.writeError(c, err)
		return
	}
	dom := s.cfg.Domain(lv.cfg.Domain)
	out := folderPermissionsJSON{
		StoragePermissions: make([]storagePermissionJSON, len(perms)),
		Kind:               kindFolderPermissions,
		RestrictedDownload: f.RestrictedDownload,
	}
	for i, p := range perms {
		out.StoragePermissions[i] = storagePermission(p, dom)
	}
	setDeprecated(c)
	if s.validate(c, lv, cl) {
		return
	}
	c.JSON(http.StatusOK, out)
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
