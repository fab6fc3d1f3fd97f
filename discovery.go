package foldermirror

import (
	"cmp"
	"context"
	"path"
	"slices"
	"strings"
	"time"
)

// SharedDriveDiscovery is a domain's sharedDrives configuration (DESIGN
// §10): every shared drive its storage account is a member of, whose name
// the patterns include, is a library of the domain.
type SharedDriveDiscovery struct {
	// Domain is the name of the configured domain the drives' libraries
	// belong to.
	Domain string
	// StorageAccount is the user whose drives.list finds the drives, and
	// who reads them.
	StorageAccount string
	// Include and Exclude are drive-name patterns (path.Match); exclude
	// wins; no Include pattern includes every drive.
	Include, Exclude []string
	// FolderDefinitionID is the discovered libraries' folderDefinitionId.
	FolderDefinitionID string
}

// Includes tells whether a drive of that name is a library: matched by an
// Include pattern (or there is none) and by no Exclude one. A malformed
// pattern matches nothing (config check refuses it).
func (d *SharedDriveDiscovery) Includes(name string) bool {
	if slices.ContainsFunc(d.Exclude, func(p string) bool { return nameMatch(p, name) }) {
		return false
	}
	return len(d.Include) == 0 || slices.ContainsFunc(d.Include, func(p string) bool { return nameMatch(p, name) })
}

// nameMatch matches a drive name against a path.Match pattern, for which a
// drive name is one element: '/' is a character like any other, which '*'
// and '?' match ("*" matches "EMEA/Sales").
func nameMatch(pattern, name string) bool {
	const slash = "\x00" // never in a drive name nor in a pattern
	ok, _ := path.Match(strings.ReplaceAll(pattern, "/", slash), strings.ReplaceAll(name, "/", slash))
	return ok
}

// Library returns the library a drive found is: its ID and name are the
// drive's.
func (d *SharedDriveDiscovery) Library(drive DiscoveredDrive) Library {
	return Library{ID: drive.ID, Name: drive.Name, Domain: d.Domain, StorageAccount: d.StorageAccount,
		SharedDriveID: drive.ID, FolderDefinitionID: d.FolderDefinitionID}
}

// DiscoveryLease names the lease under which one process discovers the
// drives of a storage account and writes what it found.
func DiscoveryLease(storageAccount string) string { return "discovery:" + storageAccount }

// DiscoveredDrive is a shared drive a discovery found (drives.list).
type DiscoveredDrive struct {
	ID   string
	Name string
	// Hidden is the storage account's preference; a hidden drive is a
	// library all the same.
	Hidden bool
}

// Discovery is what a domain's last discovery found, as the index keeps it.
// The drives are all those the account is a member of, whatever the
// patterns: the configuration in force applies them (a configuration that
// excludes a drive takes effect at start, before any discovery).
type Discovery struct {
	Domain         string
	StorageAccount string
	// At is when the last discovery ended; Error says why it failed, ""
	// if it succeeded. A failed discovery leaves the drives as they were.
	At    time.Time
	Error string
	// Drives are the drives found by the last discovery that succeeded,
	// sorted by ID.
	Drives []DiscoveredDrive
	// Revision grows whenever Drives change; the index maintains it. A
	// replica reads the drives again when it sees a new revision.
	Revision uint64
}

// DiscoveredDrivesSorted returns drives as an index keeps them: sorted by
// ID, each ID once (the first given counts).
func DiscoveredDrivesSorted(drives []DiscoveredDrive) []DiscoveredDrive {
	sorted := slices.Clone(drives)
	slices.SortStableFunc(sorted, func(a, b DiscoveredDrive) int { return cmp.Compare(a.ID, b.ID) })
	return slices.CompactFunc(sorted, func(a, b DiscoveredDrive) bool { return a.ID == b.ID })
}

// DiscoveryStore keeps each domain's discovery; the processes sharing an
// index share it.
type DiscoveryStore interface {
	// Discoveries returns each domain's discovery without its drives (a
	// cheap read, to tell by Revision whose drives changed), in no set order.
	Discoveries(ctx context.Context) ([]Discovery, error)
	// DiscoveredDrives returns the drives of a domain's discovery, sorted
	// by ID, with its revision; none and 0 if it has none.
	DiscoveredDrives(ctx context.Context, domain string) ([]DiscoveredDrive, uint64, error)
	// PutDiscovery records a domain's discovery (its account, At and Error)
	// under fence (the account's DiscoveryLease, or the zero Fence), and
	// its drives, unless d.Drives is nil, which keeps those stored (as a
	// failed discovery does). Drives given, in any order (of two of one ID
	// the first counts), replace those stored; the revision grows only if
	// they differ from them. d.Revision is ignored.
	PutDiscovery(ctx context.Context, d Discovery, fence Fence) error
	// DeleteLibrary removes everything the index keeps of a library (its
	// tree, its state, its change log) under fence (the library's lease,
	// or the zero Fence), but its last revision: synced again, the library
	// goes on from a revision above it, that tells readers still holding
	// its old tree to read it anew (ChangeSet.Reread). A library never
	// synced, or deleted already, is no error.
	DeleteLibrary(ctx context.Context, libraryID string, fence Fence) error
}
