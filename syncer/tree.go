package syncer

import (
	"cmp"
	"log/slog"
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
	// inheritance not disabled): its list is made from its parent's.
	inherits bool
	// opaque: its list does not follow from its parent's alone (several
	// parents, or inheritance disabled).
	opaque bool
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
	n.opaque = isOpaque(f)
	return n
}

// isOpaque tells whether a folder's list does not follow from its parent's
// alone: it has several parents (it inherits from each), or inheritance
// disabled.
func isOpaque(f *drive.File) bool {
	if f.InheritedPermissionsDisabled {
		return true
	}
	parents := 0
	for _, p := range f.Parents {
		if p != f.Id {
			parents++
		}
	}
	return parents > 1
}

// folderDefinitionProperty is the appProperties key of a folder's definition.
const folderDefinitionProperty = "folderDefinitionId"

func restrictsReaders(r *drive.DownloadRestrictionsMetadata) bool {
	return r != nil && r.ItemDownloadRestriction != nil && r.ItemDownloadRestriction.RestrictedForReaders
}

// permissionLists keeps one copy of each distinct permission list: the
// folders of a tree mostly repeat the permissions they inherit, and a large
// library's sync would otherwise hold the same strings many times over. It
// also keeps what it made of each list of Drive's permissions it was given:
// drivelist gives the files that list the same permissions one list.
type permissionLists struct {
	mu    sync.Mutex
	lists map[string][]fm.Permission
	made  map[driveList]madeLists
	key   []byte // the encoding of the list looked up, kept for the next
}

// driveList is a list of Drive's permissions (the same slice, not an equal
// one: its first element and length), and whether its folder is opaque.
type driveList struct {
	first  **drive.Permission
	len    int
	opaque bool
}

// madeLists is what convertPermissions made of a list, and the oddities it
// counted.
type madeLists struct {
	list, own []fm.Permission
	counts    permissionCounts
}

// convert returns convertPermissions's lists of perms, each one kept
// (intern), and adds the oddities they have to odd.
func (p *permissionLists) convert(perms []*drive.Permission, opaque bool, odd *oddities) (list, own []fm.Permission) {
	key := driveList{len: len(perms), opaque: opaque}
	if len(perms) > 0 {
		key.first = &perms[0]
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	m, ok := p.made[key]
	if !ok {
		var counted oddities
		m.list, m.own = convertPermissions(perms, opaque, &counted)
		m.list, m.own, m.counts = p.intern(m.list), p.intern(m.own), counted.permissionCounts()
		if p.made == nil {
			p.made = map[driveList]madeLists{}
		}
		p.made[key] = m
	}
	odd.addPermissionCounts(m.counts)
	return m.list, m.own
}

// intern returns the list kept equal to perms, perms if none was; p.mu
// held.
func (p *permissionLists) intern(perms []fm.Permission) []fm.Permission {
	p.key = fm.AppendPermissions(p.key[:0], perms)
	if kept, ok := p.lists[string(p.key)]; ok {
		return kept
	}
	if p.lists == nil {
		p.lists = map[string][]fm.Permission{}
	}
	p.lists[string(p.key)] = perms
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
	// noDetails: permissions without permissionDetails (kept, but their
	// folder's list is read from Drive rather than made from its parent's).
	noDetails atomic.Int64
}

// permissionCounts are the counts of oddities that a permission list has.
type permissionCounts struct{ deleted, noEmail, noDetails int64 }

func (o *oddities) permissionCounts() permissionCounts {
	return permissionCounts{deleted: o.deleted.Load(), noEmail: o.noEmail.Load(), noDetails: o.noDetails.Load()}
}

// addPermissionCounts adds a permission list's counts.
func (o *oddities) addPermissionCounts(c permissionCounts) {
	o.deleted.Add(c.deleted)
	o.noEmail.Add(c.noEmail)
	o.noDetails.Add(c.noDetails)
}

// report logs what was set aside, if anything.
func (o *oddities) report(logger *slog.Logger, libraryID string) {
	counts := []any{"repeatedInListings", o.repeated.Load(), "parentLinksNotFollowed", o.parentLinks.Load(),
		"permissionsOfDeletedAccounts", o.deleted.Load(), "permissionsWithoutEmail", o.noEmail.Load(),
		"permissionsWithoutDetails", o.noDetails.Load()}
	for i := 1; i < len(counts); i += 2 {
		if counts[i].(int64) > 0 {
			logger.Warn("Drive data set aside (see the counts)", append([]any{"library", libraryID}, counts...)...)
			return
		}
	}
}

// convertPermissions returns a folder's list, in Drive's order, and its own
// permissions (those with a source on the folder itself, by Drive's
// permissionDetails), leaving out deleted accounts. When Drive's answer
// does not tell how the list follows the parent's (opaque, or a permission
// without details), the own permissions are the whole list, each Opaque.
func convertPermissions(perms []*drive.Permission, opaque bool, odd *oddities) (list, own []fm.Permission) {
	list = make([]fm.Permission, 0, len(perms))
	for _, p := range perms {
		if p.Deleted {
			odd.deleted.Add(1)
			continue
		}
		if (p.Type == "user" || p.Type == "group") && p.EmailAddress == "" {
			odd.noEmail.Add(1)
		}
		q := fm.Permission{
			ID: p.Id, Type: p.Type, Role: p.Role, EmailAddress: p.EmailAddress, Domain: p.Domain,
			DisplayName: p.DisplayName, PhotoLink: p.PhotoLink, AllowFileDiscovery: p.AllowFileDiscovery,
		}
		list = append(list, q)
		if len(p.PermissionDetails) == 0 {
			odd.noDetails.Add(1)
			opaque = true
		}
		if role, inherited := ownSources(p); role != "" {
			own = append(own, fm.OwnPermission(q, role, inherited))
		}
	}
	if opaque {
		own = fm.OpaquePermissions(list)
	}
	return list, own
}

// ownSources returns the highest role of a permission's sources on the
// folder itself ("" if none), and whether it is inherited too.
func ownSources(p *drive.Permission) (role string, inherited bool) {
	for _, d := range p.PermissionDetails {
		switch r := cmp.Or(d.Role, p.Role); {
		case d.Inherited:
			inherited = true
		case fm.ParseRole(r) > fm.ParseRole(role) || role == "":
			role = r
		}
	}
	return role, inherited
}

// newNode keeps what foldermirror needs of a changed folder of the library.
func (r *reader) newNode(f *drive.File) *node {
	n := newNode(f)
	if f.Permissions != nil {
		r.keepPermissions(n, f.Permissions)
	}
	if r.lib.IsSharedDrive() {
		n.WritersCanShare = true // the drive's restriction decides instead
		n.inherits = !f.HasAugmentedPermissions && !f.InheritedPermissionsDisabled
	}
	return n
}

// keepPermissions gives a node the permissions Drive listed for it.
func (r *reader) keepPermissions(n *node, perms []*drive.Permission) {
	n.Permissions, n.OwnPermissions = r.lists.convert(perms, n.opaque, &r.odd)
	n.permsKnown = true
}
