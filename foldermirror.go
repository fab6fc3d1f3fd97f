// Package foldermirror holds the domain types shared by the syncer, the
// scheduler, the index and the HTTP API: the libraries mirrored, folders,
// Drive permissions, the grants they make, the sync state of a library, what
// a sync is asked and reports, and the interfaces an index backend offers.
//
// Subpackages each own one concern: config (loading and validation), index
// (opening an index from its URL, kept by index/bolt or index/postgres),
// googleclient (the clients of Google's APIs), syncer (reading Google Drive
// and the Directory), schedule (running the syncs under their leases, on
// schedules and on request), httpapi (the REST API) and internal/googlefake
// (test fakes of Google's APIs).
package foldermirror

import (
	"context"
	"errors"
	"time"
)

// LibraryReader receives a whole library as an index reads it: first every
// permission set its folders refer to, then every folder, in no set order.
// The permission sets are its own to keep; a folder, and its strings, only
// during the call (they may be the index's memory): it copies what it keeps.
type LibraryReader interface {
	PermissionSet(set PermissionSet) error
	Folder(f *Folder) error
}

// ChangeSet is what changed in a library after a revision: the folders
// written (as they are now) and the folders removed, with the permission
// sets the written ones refer to.
type ChangeSet struct {
	// State is the library's state the changes lead to.
	State LibraryState
	// Reread: the index cannot tell what changed (a full sync replaced much
	// of the tree, or the changes are too old to be kept): read the whole
	// library again.
	Reread  bool
	Written []Folder
	Removed []string
	Sets    []PermissionSet
}

// IndexReader is what the API reads from an index.
type IndexReader interface {
	// Library returns the state of a synced library; ENOTFOUND if it was
	// never synced.
	Library(ctx context.Context, libraryID string) (*LibraryState, error)
	// ReadLibrary hands a synced library's whole tree, as one consistent
	// revision, to r, and returns the state of that revision; ENOTFOUND if
	// it was never synced.
	ReadLibrary(ctx context.Context, libraryID string, r LibraryReader) (*LibraryState, error)
	// Changes returns what changed in a library after revision since, read
	// as one consistent revision.
	Changes(ctx context.Context, libraryID string, since uint64) (*ChangeSet, error)
	// PermissionSet returns the permissions of a set of the library's
	// current tree, in Drive's order; ENOTFOUND if the tree has none such.
	PermissionSet(ctx context.Context, libraryID string, key PermissionSetKey) ([]Permission, error)
}

// IndexWriter is what the syncer writes to an index. Each write is made
// under a fence: that of the lease of the library the syncer holds, or the
// zero Fence (see Fence).
type IndexWriter interface {
	// BeginFullSync starts writing a new tree for a library; readers keep
	// seeing the old one until Commit. Every write of the full sync, its
	// Commit included, is made under fence.
	BeginFullSync(ctx context.Context, libraryID string, fence Fence) (FullSyncWriter, error)
	// UpdateLibrary changes a synced library's tree in one transaction:
	// readers see all of fn's changes or none. ENOTFOUND if never synced.
	UpdateLibrary(ctx context.Context, libraryID string, fence Fence, fn func(LibraryTx) error) error
}

// FullSyncWriter writes one library's new tree. A full sync holds a large
// tree compactly and can hand it over in the orders the index keeps it.
type FullSyncWriter interface {
	// PutPermissionSets adds permission sets the new tree's folders refer to.
	PutPermissionSets(sets []PermissionSet) error
	// PutFolders adds folders, in ascending order of ID over all calls;
	// each refers to permission sets already put.
	PutFolders(folders []Folder) error
	// PutChildren adds the links from parents to children of the folders
	// put, in ascending order of parent ID, then child ID, over all calls.
	// An index that finds children by other means may ignore them.
	PutChildren(links []ChildLink) error
	// Commit makes the new tree, with its state, the one readers see, at
	// once, and says how much it differs from the tree it replaces (nothing
	// for a first sync). Folder and permission counts and the revision are
	// the index's to set: state's are ignored. A shared index refuses it if
	// another sync committed the library since BeginFullSync.
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
	// Permissions returns a folder's permissions and its own ones.
	Permissions(id string) (perms, own []Permission, err error)
	// Children returns the IDs of a folder's children, in no set order.
	Children(id string) ([]string, error)
	// Put adds a folder or replaces one (moved, renamed, reshared...),
	// with the permission sets its lists make (f's set keys are ignored).
	Put(f SyncedFolder) error
	// Replace rewrites a folder's record without touching its permissions:
	// f's set keys are ignored, the folder keeping its own.
	Replace(f *Folder) error
	// Delete removes one folder (not its children).
	Delete(id string) error
}

// IndexInfo says where an index is and how it fares, for operators.
type IndexInfo struct {
	// Kind is "bbolt" or "postgres".
	Kind string `json:"kind"`
	// Location is the index file, or the database as host:port/name.
	Location  string `json:"location"`
	SizeBytes int64  `json:"sizeBytes"`
	// Ready: the index can be read (a database was reached once).
	Ready bool `json:"ready"`
	// Problem says why the index cannot be read or written now, if it
	// cannot: what was read before is still served.
	Problem string `json:"problem,omitempty"`
	// Leases names the holder of each sync lease held now, by job.
	Leases map[string]string `json:"leases,omitempty"`
}

// Leases let the processes that share an index take turns syncing: while one
// holds a job's lease (a library's, named by its ID, or a domain's
// directory's, see DirectoryLease), no other syncs it. An index one process
// holds alone gives leases that are always free and fence nothing.
type Leases interface {
	// Acquire takes the lease named name, the name of a sync job, unless
	// another process holds it: then the error wraps ErrLeaseHeld and names
	// the holder.
	Acquire(ctx context.Context, name string) (Lease, error)
	// Holders returns the holder of each lease held now, by name.
	Holders(ctx context.Context) (map[string]string, error)
	// ClaimScheduledRun records that a scheduled run of kind of the job
	// begins now, unless one began less than within ago (on this process or
	// another): false then, and the run is skipped. Call it holding the
	// job's lease.
	ClaimScheduledRun(ctx context.Context, name, kind string, within time.Duration) (bool, error)
}

// Lease is a lease held.
type Lease interface {
	// Lost is closed if the lease was lost (it could not be renewed before
	// it lapsed): the sync under it must stop without committing.
	Lost() <-chan struct{}
	// Fence is the fencing token of this holding of the lease: the writes
	// of the sync under it are made with it.
	Fence() Fence
	// Release gives the lease back.
	Release()
}

// Fence is the fencing token of one holding of a lease: the lease's name
// and the epoch a shared index issued when the lease was taken, greater
// than every epoch issued before. A shared index makes a write only if its
// fence is still the lease's (neither lapsed, nor released, nor taken by
// another process since), checked in the write's own transaction: a process
// whose lease was lost cannot overwrite what the lease's later holders
// wrote, and its write fails wrapping ErrLeaseLost.
//
// The zero Fence writes without a lease, as a process that holds the index
// alone does; a shared index refuses it while a process holds the lease
// (ErrLeaseHeld).
type Fence struct {
	Lease string
	Epoch int64
}

// DirectoryLease names the lease of a domain's directory sync (library IDs,
// which name theirs, cannot contain ':').
func DirectoryLease(domain string) string { return "directory:" + domain }

// ErrLeaseHeld means another process holds the lease.
var ErrLeaseHeld = errors.New("another process is syncing it")

// ErrLeaseLost means a write was made under a lease that is no longer its
// writer's (it lapsed, or another process took it since): nothing was
// written.
var ErrLeaseLost = errors.New("the sync lease was lost")

// Directory knows the users and groups of the configured domains.
type Directory interface {
	// Lookup tells what the directory knows of an e-mail address.
	Lookup(ctx context.Context, email string) (DirectoryEntry, error)
}

// DirectoryEntry is what a directory tells of an e-mail address.
type DirectoryEntry struct {
	// Known: a known user of a configured domain (listed and not
	// suspended).
	Known bool
	// InDirectory: its domain's synced directory lists the user, suspended
	// or not; false for a user only the configuration lists.
	InDirectory bool
	// ID is the user's directory ID, the subject (sub) of its Google
	// account's tokens: "" when the synced directory does not list the
	// user, or was stored by a foldermirror that did not keep IDs.
	ID string
	// Groups are the groups it belongs to, directly or through other
	// groups, sorted.
	Groups []string
}

// DirectoryUser is a user as a directory sync read it.
type DirectoryUser struct {
	// ID is the Admin SDK user ID, which is the subject (sub) of the
	// Google account's tokens; "" in a snapshot stored by a foldermirror
	// that did not keep IDs.
	ID        string
	Suspended bool
}

// DirectorySnapshot is what a directory sync read of one domain. It holds
// direct memberships only: ResolveGroups follows them through groups nested
// across every domain's snapshot. E-mails are lower-case.
type DirectorySnapshot struct {
	Domain string
	// Users maps each user's e-mail to the user.
	Users map[string]DirectoryUser
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

// UsersWithoutID counts the users the snapshot has no ID for: a snapshot
// stored by a foldermirror that did not keep IDs. Google tokens of those
// users are refused until the domain's directory is synced again.
func (s *DirectorySnapshot) UsersWithoutID() int {
	n := 0
	for _, u := range s.Users {
		if u.ID == "" {
			n++
		}
	}
	return n
}

// DirectoryStore keeps the latest directory snapshot of each domain and
// answers lookups from them.
type DirectoryStore interface {
	Directory
	// ReplaceDirectory makes snap the domain's directory, at once, under
	// fence, a fence of the domain's DirectoryLease (or the zero Fence).
	ReplaceDirectory(ctx context.Context, snap *DirectorySnapshot, fence Fence) error
}
