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

// fileJSON renders a file as the viewer sees it. want is the field
// selection for the file; parts it does not select that cost work
// (permissions) are left out.
func (s *Server) fileJSON(v *viewer, f *File, c *computed, want mask) *drive.File {
	role := v.role(c)
	out := &drive.File{
		Kind: "drive#file", Id: f.ID, Name: f.Name, MimeType: f.MimeType,
		Parents:                      s.visibleParents(v, f),
		DriveId:                      f.DriveID,
		Trashed:                      c.trashed,
		ExplicitlyTrashed:            f.ExplicitlyTrashed,
		ResourceKey:                  f.ResourceKey,
		AppProperties:                f.AppProperties,
		CopyRequiresWriterPermission: f.CopyRequiresWriterPermission,
		DownloadRestrictions: &drive.DownloadRestrictionsMetadata{
			ItemDownloadRestriction: &drive.DownloadRestriction{
				RestrictedForReaders: f.DownloadRestrictedForReaders,
				ForceSendFields:      []string{"RestrictedForReaders", "RestrictedForWriters"},
			},
		},
		WritersCanShare: f.WritersCanShare,
		Capabilities: &drive.FileCapabilities{
			CanShare:        canShare(role, f),
			CanEdit:         roleRank[role] >= roleRank["writer"],
			CanListChildren: f.MimeType == folderMimeType,
			ForceSendFields: []string{"CanShare", "CanEdit", "CanListChildren"},
		},
		ForceSendFields: []string{"Trashed", "ExplicitlyTrashed", "CopyRequiresWriterPermission", "WritersCanShare"},
	}
	if f.DriveID != "" {
		out.HasAugmentedPermissions = len(f.perms) > 0 && !f.root
		out.ForceSendFields = append(out.ForceSendFields, "HasAugmentedPermissions")
	} else {
		s.addOwnership(out, v, f, c)
	}
	if want.selects("permissions") && inlinePermissions(f, c, role) {
		out.Permissions = s.permissionsJSON(f, c.grants)
	}
	return out
}

// addOwnership fills the My Drive fields: owners, ownedByMe, permissionIds, shared.
func (s *Server) addOwnership(out *drive.File, v *viewer, f *File, c *computed) {
	out.OwnedByMe = f.Owner == v.email
	out.Shared = len(c.grants) > 1
	out.ForceSendFields = append(out.ForceSendFields, "OwnedByMe", "Shared")
	out.Owners = []*drive.User{{
		Kind: "drive#user", EmailAddress: f.Owner, PermissionId: numericID(f.Owner, 20), Me: out.OwnedByMe,
		ForceSendFields: []string{"Me"},
	}}
	for _, g := range c.grants {
		out.PermissionIds = append(out.PermissionIds, g.id)
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
	var out []string
	for _, id := range f.Parents {
		p := s.files[id]
		if p != nil && (p.root && p.DriveID != "" || v.canAccess(s.state(p))) {
			out = append(out, id)
		}
	}
	return out
}

// permissionsJSON renders effective permissions of f, with their details
// unless OmitMyDriveDetails leaves them out.
func (s *Server) permissionsJSON(f *File, grants []grant) []*drive.Permission {
	out := make([]*drive.Permission, len(grants))
	for i, g := range grants {
		out[i] = permissionJSON(f, g)
		if s.omitMyDriveDetails && f.DriveID == "" {
			out[i].PermissionDetails = nil
		}
	}
	return out
}

// OmitMyDriveDetails(true) lists the permissions of My Drive items without
// permissionDetails, as Drive once documented them ("present only for
// shared drive items").
func (s *Server) OmitMyDriveDetails(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.omitMyDriveDetails = on
}

// permissionJSON renders an effective permission of f with its details.
func permissionJSON(f *File, g grant) *drive.Permission {
	p := &drive.Permission{
		Kind: "drive#permission", Id: g.id, Type: g.perm.Type, Role: g.perm.Role,
		EmailAddress: g.perm.EmailAddress, Domain: g.perm.Domain, DisplayName: g.perm.DisplayName,
		Deleted: g.perm.deleted, ForceSendFields: []string{"Deleted"},
	}
	if g.perm.hideEmail {
		p.EmailAddress = ""
	}
	if g.perm.Type == "domain" || g.perm.Type == "anyone" {
		p.AllowFileDiscovery = g.perm.AllowFileDiscovery
		p.ForceSendFields = append(p.ForceSendFields, "AllowFileDiscovery")
	}
	for _, d := range g.details {
		pd := &drive.PermissionPermissionDetails{
			PermissionType: d.kind, Role: d.role, Inherited: d.from != f.ID,
			ForceSendFields: []string{"Inherited"},
		}
		if pd.Inherited {
			pd.InheritedFrom = d.from
		}
		p.PermissionDetails = append(p.PermissionDetails, pd)
	}
	return p
}

// driveJSON renders a shared drive.
func driveJSON(d *drive.Drive) *drive.Drive {
	out := *d
	out.Kind = "drive#drive"
	out.ForceSendFields = append(slices.Clone(d.ForceSendFields), "Hidden")
	r := drive.DriveRestrictions{}
	if d.Restrictions != nil {
		r = *d.Restrictions
	}
	r.ForceSendFields = []string{"AdminManagedRestrictions", "CopyRequiresWriterPermission",
		"DomainUsersOnly", "DriveMembersOnly", "SharingFoldersRequiresOrganizerPermission"}
	if r.DownloadRestriction != nil {
		dr := *r.DownloadRestriction
		dr.ForceSendFields = []string{"RestrictedForReaders", "RestrictedForWriters"}
		r.DownloadRestriction = &dr
	}
	out.Restrictions = &r
	return &out
}
