package googlefake

import (
	"slices"

	"google.golang.org/api/drive/v3"
)

const (
	timeFormat = "2006-01-02T15:04:05.000Z"
	// maxInlinePermissions is the most effective permissions a file carries
	// in its permissions field; beyond it clients must call permissions.list.
	maxInlinePermissions = 100
)

// The fields each file resource is sent with even when false; package-level
// (read-only) so that no file allocates its own list.
var (
	forceMyDriveFile    = []string{"Trashed", "ExplicitlyTrashed", "CopyRequiresWriterPermission", "WritersCanShare", "OwnedByMe", "Shared"}
	forceSharedFile     = []string{"Trashed", "ExplicitlyTrashed", "CopyRequiresWriterPermission", "WritersCanShare", "HasAugmentedPermissions"}
	forceRestriction    = []string{"RestrictedForReaders", "RestrictedForWriters"}
	forceCapabilities   = []string{"CanShare", "CanEdit", "CanListChildren"}
	forceMe             = []string{"Me"}
	forceDeleted        = []string{"Deleted"}
	forceDiscovery      = []string{"Deleted", "AllowFileDiscovery"}
	forceInheritedField = []string{"Inherited"}
)

// fileJSON renders a file as the viewer sees it, in structs of the arena.
// want is the field selection for the file; the parts it does not select
// are left out (the encoder would skip them).
func (s *Server) fileJSON(v *viewer, f *File, c *computed, want mask) *drive.File {
	role := v.role(c)
	parts := s.arena.files.one()
	out := &parts.file
	*out = drive.File{
		Kind: "drive#file", Id: f.ID, Name: f.Name, MimeType: f.MimeType,
		DriveId:                      f.DriveID,
		Trashed:                      c.trashed,
		ExplicitlyTrashed:            f.ExplicitlyTrashed,
		ResourceKey:                  f.ResourceKey,
		AppProperties:                f.AppProperties,
		CopyRequiresWriterPermission: f.CopyRequiresWriterPermission,
		WritersCanShare:              f.WritersCanShare,
	}
	if want.selects("parents") {
		out.Parents = s.visibleParents(v, f)
	}
	if want.selects("createdTime") {
		out.CreatedTime = formatMillis(f.times[createdTime])
	}
	if want.selects("modifiedTime") {
		out.ModifiedTime = formatMillis(f.times[modifiedTime])
	}
	if want.selects("downloadRestrictions") {
		parts.restriction = drive.DownloadRestriction{RestrictedForReaders: f.DownloadRestrictedForReaders,
			ForceSendFields: forceRestriction}
		parts.restrictions = drive.DownloadRestrictionsMetadata{ItemDownloadRestriction: &parts.restriction}
		out.DownloadRestrictions = &parts.restrictions
	}
	if want.selects("capabilities") {
		parts.capabilities = drive.FileCapabilities{
			CanShare:        canShare(role, f),
			CanEdit:         roleRank[role] >= roleRank["writer"],
			CanListChildren: f.MimeType == folderMimeType,
			ForceSendFields: forceCapabilities,
		}
		out.Capabilities = &parts.capabilities
	}
	if f.DriveID != "" {
		out.HasAugmentedPermissions = len(f.perms) > 0 && !f.root
		out.ForceSendFields = forceSharedFile
	} else {
		s.addOwnership(parts, v, f, c, want)
	}
	if want.selects("permissions") && inlinePermissions(f, c, role) {
		out.Permissions = s.permissionsJSON(f, s.listed(c.grants))
	}
	return out
}

// addOwnership fills the My Drive fields: owners, ownedByMe, permissionIds, shared.
func (s *Server) addOwnership(parts *fileParts, v *viewer, f *File, c *computed, want mask) {
	out := &parts.file
	out.OwnedByMe = f.Owner == v.email
	out.Shared = len(c.grants) > 1
	out.ForceSendFields = forceMyDriveFile
	if want.selects("owners") {
		owner := Permission{Type: "user", EmailAddress: f.Owner}
		parts.owner = drive.User{Kind: "drive#user", EmailAddress: f.Owner,
			PermissionId: s.permissionID(s.principalKey(owner), owner), Me: out.OwnedByMe, ForceSendFields: forceMe}
		parts.owners[0] = &parts.owner
		out.Owners = parts.owners[:]
	}
	if want.selects("permissionIds") {
		listed := s.listed(c.grants)
		out.PermissionIds = s.arena.parentLists.take(len(listed))
		for i, g := range listed {
			out.PermissionIds[i] = g.id
		}
	}
}

// inlinePermissions reports whether a file carries its permissions: like
// Drive, only outside shared drives and for users who can share it; and, in
// this fake, only up to maxInlinePermissions of them.
func inlinePermissions(f *File, c *computed, role string) bool {
	return f.DriveID == "" && canShare(role, f) && len(c.grants) <= maxInlinePermissions
}

// visibleParents returns the parents the viewer can access; a shared drive's
// root always shows as the parent of the drive's top-level items.
func (s *Server) visibleParents(v *viewer, f *File) []string {
	visible := func(id string) bool {
		p := s.files[id]
		return p != nil && (p.root && p.DriveID != "" || v.canAccess(s.state(p)))
	}
	n := 0
	for _, id := range f.Parents {
		if visible(id) {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out := s.arena.parentLists.take(n)[:0]
	for _, id := range f.Parents {
		if visible(id) {
			out = append(out, id)
		}
	}
	return out
}

// permissionsJSON renders effective permissions of f, in structs of the
// arena, with their details unless OmitMyDriveDetails leaves them out.
func (s *Server) permissionsJSON(f *File, grants []grant) []*drive.Permission {
	out := s.arena.permPtrs.take(len(grants))
	perms := s.arena.perms.take(len(grants))
	for i, g := range grants {
		out[i] = &perms[i]
		s.permissionJSON(&perms[i], f, g)
		if s.omitMyDriveDetails && f.DriveID == "" {
			perms[i].PermissionDetails = nil
		}
	}
	return out
}

// OmitMyDriveDetails lists, when on, the permissions of My Drive items without
// permissionDetails, as Drive once documented them ("present only for
// shared drive items").
func (s *Server) OmitMyDriveDetails(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.omitMyDriveDetails = on
}

// ListNoPermissions lists, when on, no permission of any file, as a Drive
// emulator that keeps none may: files carry none (nor permissionIds) and
// permissions.list answers an empty list, where Drive always lists at
// least an owner or a shared drive's members. Who may see what is
// unchanged.
func (s *Server) ListNoPermissions(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noPermissions = on
}

// listed returns the grants of a file that answers list: none under
// ListNoPermissions.
func (s *Server) listed(grants []grant) []grant {
	if s.noPermissions {
		return nil
	}
	return grants
}

// permissionJSON renders into p an effective permission of f with its details.
func (s *Server) permissionJSON(p *drive.Permission, f *File, g grant) {
	*p = drive.Permission{
		Kind: "drive#permission", Id: g.id, Type: g.perm.Type, Role: g.perm.Role,
		EmailAddress: g.perm.EmailAddress, Domain: g.perm.Domain, DisplayName: g.perm.DisplayName,
		Deleted: g.perm.deleted, ForceSendFields: forceDeleted,
	}
	if g.perm.hideEmail {
		p.EmailAddress = ""
	}
	if g.perm.Type == "domain" || g.perm.Type == "anyone" {
		p.AllowFileDiscovery = g.perm.AllowFileDiscovery
		p.ForceSendFields = forceDiscovery
	}
	if len(g.details) == 0 {
		return
	}
	p.PermissionDetails = s.arena.detailPtrs.take(len(g.details))
	details := s.arena.details.take(len(g.details))
	for i, d := range g.details {
		details[i] = drive.PermissionPermissionDetails{
			PermissionType: d.kind, Role: d.role, Inherited: d.from != f.ID,
			ForceSendFields: forceInheritedField,
		}
		if details[i].Inherited {
			details[i].InheritedFrom = d.from
		}
		p.PermissionDetails[i] = &details[i]
	}
}

// The fields a drive resource is sent with even when false.
var (
	forceHidden            = []string{"Hidden"}
	forceDriveRestrictions = []string{"AdminManagedRestrictions", "CopyRequiresWriterPermission",
		"DomainUsersOnly", "DriveMembersOnly", "SharingFoldersRequiresOrganizerPermission"}
)

// driveJSON renders a shared drive as a viewer who hid it or not sees it.
// want is the field selection for the drive; its restrictions are left
// out unless it selects them.
func driveJSON(d *drive.Drive, hidden bool, want mask) *drive.Drive {
	out := *d
	out.Kind, out.Hidden, out.Restrictions = "drive#drive", hidden, nil
	out.ForceSendFields = forceHidden
	if len(d.ForceSendFields) > 0 {
		out.ForceSendFields = append(slices.Clone(d.ForceSendFields), "Hidden")
	}
	if !want.selects("restrictions") {
		return &out
	}
	r := drive.DriveRestrictions{}
	if d.Restrictions != nil {
		r = *d.Restrictions
	}
	r.ForceSendFields = forceDriveRestrictions
	if r.DownloadRestriction != nil {
		dr := *r.DownloadRestriction
		dr.ForceSendFields = forceRestriction
		r.DownloadRestriction = &dr
	}
	out.Restrictions = &r
	return &out
}
