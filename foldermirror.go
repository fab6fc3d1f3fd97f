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
	"time"
)

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
