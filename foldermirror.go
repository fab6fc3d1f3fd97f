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
