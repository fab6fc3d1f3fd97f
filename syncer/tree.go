package syncer

import (
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	fm "github.com/foldermirror/foldermirror"
	drive "google.golang.org/api/drive/v3"
)

// node is a Drive folder as listed, before it is placed in the library's tree.
type node struct {
	fm.SyncedFolder
	parents []string
	// permsKnown: Drive gave the permissions with the listing.
	permsKnown bool
	// inherits: a shared-drive folder with no permission of its own (and
	// inheritance not disabled) has exactly its parent's permissions.
	inherits bool
}

// newNode keeps what foldermirror needs of a listed Drive folder, but its
// permissions.
func newNode(f *drive.File) *node {
	n := &node{parents: f.Parents}
	n.ID = f.Id
	n.Name = f.Name
	n.ResourceKey = f.ResourceKey
	n.DefinitionID = f.AppProperties[folderDefinitionProperty]
	n.WritersCanShare = f.WritersCanShare
	n.OwnRestrictedDownload = f.CopyRequiresWriterPermission || restrictsReaders(f.DownloadRestrictions)
	return n
}

// folderDefinitionProperty is the appProperties key of a folder's definition.
const folderDefinitionProperty = "folderDefinitionId"

func restrictsReaders(r *drive.DownloadRestrictionsMetadata) bool {
	return r != nil && r.ItemDownloadRestriction != nil && r.ItemDownloadRestriction.RestrictedForReaders
}

// permissionLists keeps one copy of each distinct permission list: the
// folders of a tree mostly repeat the permissions they inherit, and a large
// library's sync would otherwise hold the same strings many times over.
type permissionLists struct {
	mu    sync.Mutex
	lists map[string][]fm.Permission
}

func (p *permissionLists) intern(perms []fm.Permission) []fm.Permission {
	var key strings.Builder
	for _, q := range perms {
		for _, s := range []string{q.ID, q.Type, q.Role, q.EmailAddress, q.Domain, q.DisplayName, q.PhotoLink} {
			key.WriteString(s)
			key.WriteByte(0)
		}
		if q.AllowFileDiscovery {
			key.WriteByte(1)
		}
		key.WriteByte(2)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lists == nil {
		p.lists = map[string][]fm.Permission{}
	}
	if kept, ok := p.lists[key.String()]; ok {
		return kept
	}
	p.lists[key.String()] = perms
	return perms
}

// oddities counts what a sync found in Drive's data and set aside, so that
// it can say so in the log.
type oddities struct {
	// repeated: folders a listing gave more than once (one is kept).
	repeated atomic.Int64
	// parentLinks: parents not followed, of folders with several parents in
	// the library or in a cycle (the one nearest the root is kept).
	parentLinks atomic.Int64
	// deleted: permissions of deleted accounts (left out).
	deleted atomic.Int64
	// noEmail: user and group permissions without an e-mail address (kept
	// for operation 4, but they grant nothing).
	noEmail atomic.Int64
}

// report logs what was set aside, if anything.
func (o *oddities) report(logger *slog.Logger, libraryID string) {
	counts := []any{"repeatedInListings", o.repeated.Load(), "parentLinksNotFollowed", o.parentLinks.Load(),
		"permissionsOfDeletedAccounts", o.deleted.Load(), "permissionsWithoutEmail", o.noEmail.Load()}
	for i := 1; i < len(counts); i += 2 {
		if counts[i].(int64) > 0 {
			logger.Warn("Drive data set aside (see the counts)", append([]any{"library", libraryID}, counts...)...)
			return
		}
	}
}

// convertPermissions keeps Drive's order and leaves out deleted accounts.
func convertPermissions(perms []*drive.Permission, odd *oddities) []fm.Permission {
	out := make([]fm.Permission, 0, len(perms))
	for _, p := range perms {
		if p.Deleted {
			odd.deleted.Add(1)
			continue
		}
		if (p.Type == "user" || p.Type == "group") && p.EmailAddress == "" {
			odd.noEmail.Add(1)
		}
		out = append(out, fm.Permission{
			ID: p.Id, Type: p.Type, Role: p.Role, EmailAddress: p.EmailAddress, Domain: p.Domain,
			DisplayName: p.DisplayName, PhotoLink: p.PhotoLink, AllowFileDiscovery: p.AllowFileDiscovery,
		})
	}
	return out
}

// newNode keeps what foldermirror needs of a changed folder of the library.
func (r *reader) newNode(f *drive.File) *node {
	n := newNode(f)
	if f.Permissions != nil {
		n.Permissions = r.lists.intern(convertPermissions(f.Permissions, &r.odd))
		n.permsKnown = true
	}
	if r.lib.IsSharedDrive() {
		n.WritersCanShare = true // the drive's restriction decides instead
		n.inherits = !f.HasAugmentedPermissions && !f.InheritedPermissionsDisabled
	}
	return n
}
