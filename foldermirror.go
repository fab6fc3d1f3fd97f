// Package foldermirror holds the domain types shared by the syncer, the index
// and the HTTP API: folders, Drive permissions, the grants they make, the sync
// state of a library, and the interfaces an index backend offers.
//
// Subpackages each own one concern: config (loading and validation), index
// (the bbolt backend), syncer (reading Google Drive and the Directory),
// httpapi (the REST API) and googlefake (test fakes of Google's APIs).
package foldermirror

import (
	"context"
	"strings"
	"time"
)

// FolderMimeType is the Drive MIME type of a folder.
const FolderMimeType = "application/vnd.google-apps.folder"

// Role is a Drive role, ordered so that a higher value permits more.
type Role uint8

// Drive roles, weakest first.
const (
	RoleNone Role = iota
	RoleReader
	RoleCommenter
	RoleWriter
	RoleFileOrganizer
	RoleOrganizer
	RoleOwner
)

var roleNames = [...]string{"", "reader", "commenter", "writer", "fileOrganizer", "organizer", "owner"}

// ParseRole maps a Drive role name to a Role; unknown names are RoleNone.
func ParseRole(name string) Role {
	for r, n := range roleNames {
		if n == name && n != "" {
			return Role(r)
		}
	}
	return RoleNone
}

// String returns the Drive name of the role.
func (r Role) String() string {
	if int(r) < len(roleNames) {
		return roleNames[r]
	}
	return ""
}

// Principal prefixes. A principal names who a grant is for: "user:EMAIL",
// "group:EMAIL", "domain:NAME" or "anyone". E-mails and domains are lower-case.
const (
	PrincipalAnyone = "anyone"
	userPrefix      = "user:"
	groupPrefix     = "group:"
	domainPrefix    = "domain:"
)

// UserPrincipal returns the principal of a user.
func UserPrincipal(email string) string { return userPrefix + strings.ToLower(email) }

// GroupPrincipal returns the principal of a group.
func GroupPrincipal(email string) string { return groupPrefix + strings.ToLower(email) }

// DomainPrincipal returns the principal of everyone in a domain.
func DomainPrincipal(domain string) string { return domainPrefix + strings.ToLower(domain) }

// EmailDomain returns the lower-cased domain part of an e-mail address, or "".
func EmailDomain(email string) string {
	at := strings.LastIndexByte(email, '@')
	if at < 0 {
		return ""
	}
	return strings.ToLower(email[at+1:])
}

// Grant is what one Drive permission gives: a role to a principal. WithLink
// grants (domain or anyone, not discoverable) let a caller open a folder it
// knows the ID of, but do not make it appear in listings.
type Grant struct {
	Principal string
	Role      Role
	WithLink  bool
}

// Permission is a Drive permission as mirrored, with Drive's own values
// (Type: user, group, domain, anyone; Role: reader ... owner).
type Permission struct {
	ID                 string
	Type               string
	Role               string
	EmailAddress       string
	Domain             string
	DisplayName        string
	PhotoLink          string
	AllowFileDiscovery bool
}

// Grant returns the grant the permission makes, and false when it makes none
// (an unknown type or role, or a user or group permission without an e-mail).
func (p Permission) Grant() (Grant, bool) {
	g := Grant{Role: ParseRole(p.Role)}
	if g.Role == RoleNone {
		return Grant{}, false
	}
	switch p.Type {
	case "user":
		g.Principal = UserPrincipal(p.EmailAddress)
	case "group":
		g.Principal = GroupPrincipal(p.EmailAddress)
	case "domain":
		g.Principal = DomainPrincipal(p.Domain)
		g.WithLink = !p.AllowFileDiscovery
	case "anyone":
		g.Principal = PrincipalAnyone
		g.WithLink = !p.AllowFileDiscovery
	default:
		return Grant{}, false
	}
	if g.Principal != PrincipalAnyone && strings.HasSuffix(g.Principal, ":") {
		return Grant{}, false
	}
	return g, true
}

// GrantsOf returns the grants a permission list makes, in the list's order.
func GrantsOf(perms []Permission) []Grant {
	grants := make([]Grant, 0, len(perms))
	for _, p := range perms {
		if g, ok := p.Grant(); ok {
			grants = append(grants, g)
		}
	}
	return grants
}

// Folder is a folder of a library as the index holds it.
type Folder struct {
	ID       string
	ParentID string // "" for the library root
	Name     string
	// ResourceKey is Drive's resourceKey, "" if none.
	ResourceKey string
	// DefinitionID is Drive's appProperties.folderDefinitionId, "" if unset.
	DefinitionID string
	// OwnRestrictedDownload: Drive restricts copying or downloading by readers
	// on this folder itself.
	OwnRestrictedDownload bool
	// RestrictedDownload: on this folder or any ancestor up to the root.
	RestrictedDownload bool
	// WritersCanShare is Drive's writersCanShare (true in shared drives, where
	// the drive's restriction decides instead).
	WritersCanShare bool
	// Grants are derived from the folder's permissions.
	Grants []Grant
}

// SyncedFolder is a folder with the permissions Drive listed for it.
type SyncedFolder struct {
	Folder
	Permissions []Permission
}

// LibraryState is what the index knows of a synced library.
type LibraryState struct {
	ID     string
	RootID string
	// DriveID is the shared drive's ID, "" for a My Drive library.
	DriveID string
	// SharingRequiresOrganizer is the shared drive's restriction
	// sharingFoldersRequiresOrganizerPermission.
	SharingRequiresOrganizer bool
	// StartPageToken is the Drive changes token to read changes from.
	StartPageToken      string
	LastFullSync        time.Time
	LastIncrementalSync time.Time
	Folders             int
	Permissions         int
	// Revision grows whenever what readers see changes: the tree, its
	// permissions, RootID, DriveID or SharingRequiresOrganizer. The index
	// maintains it; a revision set by a writer is ignored.
	Revision uint64
}

// Drift counts what a full sync found different from the tree it replaced.
type Drift struct {
	Added, Removed, Changed int
}

// Total is the number of folders that differed.
func (d Drift) Total() int { return d.Added + d.Removed + d.Changed }

// LastSynced returns the time of the library's latest sync of any kind.
func (s *LibraryState) LastSynced() time.Time {
	if s.LastIncrementalSync.After(s.LastFullSync) {
		return s.LastIncrementalSync
	}
	return s.LastFullSync
}

// PickFunc decides, for a folder met in a walk, whether to hand it to the
// YieldFunc and whether to walk its children. It runs while the index is
// being read, so it must be quick and must not block.
type PickFunc func(f *Folder, depth int) (emit, descend bool)

// YieldFunc receives the picked folders of a walk, in order. It may block
// (write to a network, say): the index is not held while it runs.
type YieldFunc func(f *Folder, depth int) error

// IndexReader is what the API reads from an index.
type IndexReader interface {
	// Library returns the state of a synced library; ENOTFOUND if it was
	// never synced.
	Library(ctx context.Context, libraryID string) (*LibraryState, error)
	// Folder returns one folder of a library; ENOTFOUND if it has none such.
	Folder(ctx context.Context, libraryID, folderID string) (*Folder, error)
	// Permissions returns a folder's permissions in Drive's order.
	Permissions(ctx context.Context, libraryID, folderID string) ([]Permission, error)
	// Walk visits the descendants of parentID depth first, siblings sorted by
	// lower-cased name then ID; the children of parentID have depth 0.
	Walk(ctx context.Context, libraryID, parentID string, pick PickFunc, yield YieldFunc) error
}

// IndexWriter is what the syncer writes to an index.
type IndexWriter interface {
	// BeginFullSync starts writing a new tree for a library; readers keep
	// seeing the old one until Commit.
	BeginFullSync(ctx context.Context, libraryID string) (FullSyncWriter, error)
	// UpdateLibrary changes a synced library's tree in one transaction:
	// readers see all of fn's changes or none. ENOTFOUND if never synced.
	UpdateLibrary(ctx context.Context, libraryID string, fn func(LibraryTx) error) error
}

// FullSyncWriter writes one library's new tree in batches.
type FullSyncWriter interface {
	// Put adds a batch of folders to the new tree.
	Put(folders []SyncedFolder) error
	// Commit makes the new tree, with its state, the one readers see, at
	// once, and says how much it differs from the tree it replaces (nothing
	// for a first sync). Folder and permission counts and the revision are
	// the index's to set: state's are ignored.
	Commit(state LibraryState) (Drift, error)
	// Abort drops the new tree. It is safe after Commit, where it does nothing.
	Abort() error
}

// LibraryTx reads and changes one library's tree within a transaction.
// Counts of folders and permissions follow its changes, and the revision
// grows once, at the end, if it wrote to the tree or changed a field of the
// state readers see.
type LibraryTx interface {
	State() LibraryState
	// SetState replaces the state, but for its ID, counts and revision,
	// which the index maintains: the ones given are ignored.
	SetState(LibraryState)
	// Folder returns a folder; ENOTFOUND if the tree has none such.
	Folder(id string) (*Folder, error)
	// Children returns the IDs of a folder's children, in no set order.
	Children(id string) ([]string, error)
	// Put adds a folder or replaces one (moved, renamed, reshared...),
	// its grants derived from its permissions.
	Put(f SyncedFolder) error
	// Replace rewrites a folder's record without touching its permissions:
	// f.Grants is ignored, the grants staying those its permissions make.
	Replace(f *Folder) error
	// Delete removes one folder (not its children).
	Delete(id string) error
}

// Directory knows the users and groups of the configured domains.
type Directory interface {
	// Lookup tells whether email is a known user of a configured domain
	// (listed and not suspended) and names the groups it belongs to,
	// directly or through other groups.
	Lookup(ctx context.Context, email string) (known bool, groups []string, err error)
}

// DirectorySnapshot is what a directory sync read of one domain. It holds
// direct memberships only: ResolveGroups follows them through groups nested
// across every domain's snapshot. E-mails are lower-case.
type DirectorySnapshot struct {
	Domain string
	// Users maps each user's e-mail to whether it is suspended.
	Users map[string]bool
	// DirectGroups maps a member's e-mail (a user or a group, of any domain)
	// to the groups read in this sync that contain it directly: the
	// domain's groups, and the groups of other domains nested in them that
	// its admin read (not those of configured domains with a directory of
	// their own, which that directory holds).
	DirectGroups map[string][]string
	// Unreadable lists the groups nested in the domain's whose members its
	// admin may not read (Google answered 403 or 404: another organisation's,
	// or none): they contribute no members.
	Unreadable []string
	SyncedAt   time.Time
}

// DirectoryStore keeps the latest directory snapshot of each domain and
// answers lookups from them.
type DirectoryStore interface {
	Directory
	// ReplaceDirectory makes snap the domain's directory, at once.
	ReplaceDirectory(ctx context.Context, snap *DirectorySnapshot) error
}
