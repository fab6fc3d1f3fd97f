package foldermirror

import (
	"context"
	"errors"
	"io"
)

// Index is an open index, whichever backend keeps it: a bbolt file that one
// process holds alone, or a PostgreSQL database that replicas share. It is
// what the API reads and the syncer writes, the directory the API looks
// callers up in, the shared drives discovery found (DiscoveryStore), the
// sync leases (Leases), and what the daemon needs to bring the index up
// and keep it so. Package index opens one from index.url. It is safe for
// concurrent use.
//
// An index is opened, then reached (Connect, or ConnectRetrying): until
// then its reads fail with EUNAVAILABLE and Info says it is not Ready. An
// index with nothing to reach (a file) is reached at once. While a process
// serves a shared index, Watch follows what the other processes commit.
// Close ends it all.
type Index interface {
	IndexReader
	IndexWriter
	DirectoryStore
	PushChannels
	DiscoveryStore
	// Folder returns one folder of a library; ENOTFOUND if none such.
	Folder(ctx context.Context, libraryID, folderID string) (*Folder, error)
	// Permissions returns a folder's permissions in Drive's order.
	Permissions(ctx context.Context, libraryID, folderID string) ([]Permission, error)
	// Info says where the index is and how it fares: Ready once it was
	// reached, Problem while it cannot be read or written, the leases held.
	Info(ctx context.Context) IndexInfo
	// Leases returns the index's sync leases: held in a shared index, so
	// that its processes take turns; always free, and fencing nothing, in
	// an index one process holds alone.
	Leases() Leases
	// Connect reaches the index once: it checks, creates or migrates what
	// the index keeps, and reads it. An index with nothing to reach
	// returns nil at once. A database foldermirror must not use fails it,
	// for good, wrapping ErrIndexRefused.
	Connect(ctx context.Context) error
	// ConnectRetrying reaches the index, trying again with backoff after
	// the failures it logs, until it is reached or ctx ends (then it
	// returns the last failure). A refused index (ErrIndexRefused) fails it
	// at once.
	ConnectRetrying(ctx context.Context) error
	// Watch reads what the other processes sharing the index commit until
	// ctx ends, or until the index is refused (a newer foldermirror migrated
	// it: Info says so). Call it once the index is reached. An index no
	// other process shares returns at once.
	Watch(ctx context.Context)
	// Close closes the index, waiting for the transactions under way.
	Close() error
}

// ErrIndexRefused marks an index foldermirror must not use: a database of
// another service, or one whose schema a newer foldermirror wrote.
var ErrIndexRefused = errors.New("not a database foldermirror may use")

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

// An index across a network pays a round trip for each read. These
// optional interfaces let it read ahead, in one go, what a caller names
// before reading it; they change no answer. An index whose reads cost
// nothing (a memory-mapped file) need not implement them; the syncer uses
// them when the index has them.

// FoldersReader is an index that reads many folders of a library at once.
type FoldersReader interface {
	// Folders returns the folders among ids that the library has, each
	// once, in no set order: IDs of no folder, and of a library never
	// synced, are left out.
	Folders(ctx context.Context, libraryID string, ids []string) ([]Folder, error)
}

// ParentsReader is an index that tells, of many folders of a library at
// once, which have children.
type ParentsReader interface {
	// Parents returns those of ids that are the parent of a folder of the
	// library, each once, in no set order: IDs of no folder (the root's
	// parent "" too), of folders without children, and of a library never
	// synced, are left out.
	Parents(ctx context.Context, libraryID string, ids []string) ([]string, error)
}

// LibraryPrefetcher is a LibraryTx that can read ahead, so that Folder,
// Permissions and Children then answer from memory. What the transaction
// wrote before or writes after is seen as without it.
type LibraryPrefetcher interface {
	// Prefetch reads the folders ids and the children of the folders
	// parents, with their permissions. IDs of no folder are fine: the
	// transaction then knows there is none such.
	Prefetch(ids, parents []string) error
}

// LibrarySeeder is a LibraryTx that can take the folders its caller read
// from the index before it began, so as not to read them again: an index
// whose reads cost CPU (decoding a record) may implement it.
type LibrarySeeder interface {
	// Seed gives the folders read by ID (nil: the index had none such),
	// all read while the library was at revision. The transaction uses
	// them only if the library is at that revision still, its tree as it
	// was then, and must not change them, nor must the caller while the
	// transaction runs.
	Seed(revision uint64, folders map[string]*Folder)
}

// CatalogStore is an index that keeps, beside each library's tree, one
// copy of the API's catalog of it (httpapi/catalog), so that a process
// starting reads the catalog rather than making it again from every
// folder. The index keeps the bytes and nothing else: what they hold, the
// revision they were made at, and whether they may be used, is the
// catalog's to say. A library's copy goes when the library does. (bbolt
// keeps them; a shared database does not, each replica making its own.)
type CatalogStore interface {
	// SaveCatalog keeps the concatenation of parts as the library's
	// catalog, in place of the one it kept, in one transaction; parts are
	// not changed until it returns. ENOTFOUND if the library was never
	// synced.
	SaveCatalog(ctx context.Context, libraryID string, parts [][]byte) error
	// ReadCatalog hands fn the library's catalog as a reader of its size
	// bytes, within a read transaction; ENOTFOUND if it keeps none.
	ReadCatalog(ctx context.Context, libraryID string, fn func(r io.Reader, size int64) error) error
}
