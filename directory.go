package foldermirror

import (
	"context"
	"slices"
	"strings"
	"sync"
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

// ResolveGroups returns, for each member of a group of dirs (a user or a
// group, of any domain), every group it belongs to, directly or through
// groups nested in groups, sorted. dirs are the latest snapshots of every
// domain, so that a group of one domain nested in a group of another counts
// whichever domain was read first. A cycle of groups, within a domain or
// across domains, is followed once round.
//
// Every index backend keeps the result of this one function, computed
// whenever a domain's snapshot is replaced, so that a lookup is a map read.
func ResolveGroups(dirs map[string]*DirectorySnapshot) map[string][]string {
	parents := map[string][]string{} // member → the groups containing it directly, of every domain
	for _, snap := range dirs {
		for member, groups := range snap.DirectGroups {
			parents[member] = append(parents[member], groups...)
		}
	}
	out := make(map[string][]string, len(parents))
	seen := map[string]bool{}
	var queue []string
	for member, direct := range parents {
		clear(seen)
		queue = append(queue[:0], direct...)
		for len(queue) > 0 {
			group := queue[len(queue)-1]
			queue = queue[:len(queue)-1]
			if !seen[group] {
				seen[group] = true
				queue = append(queue, parents[group]...)
			}
		}
		groups := make([]string, 0, len(seen))
		for group := range seen {
			groups = append(groups, group)
		}
		slices.Sort(groups)
		out[member] = groups
	}
	return out
}

// Directories answers lookups from the latest snapshot of each domain, with
// groups resolved across domains (ResolveGroups): what every index backend
// keeps in memory, so that a lookup is a map read. The zero value is empty
// and ready to use; it is safe for concurrent use.
type Directories struct {
	mu     sync.RWMutex
	snaps  map[string]*DirectorySnapshot
	groups map[string][]string
}

// Replace makes snaps the domains' directories, and resolves the groups of
// every member again, across every domain's directory.
func (d *Directories) Replace(snaps ...*DirectorySnapshot) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.snaps == nil {
		d.snaps = map[string]*DirectorySnapshot{}
	}
	for _, s := range snaps {
		d.snaps[s.Domain] = s
	}
	d.groups = ResolveGroups(d.snaps)
}

// Lookup implements Directory: a known user is listed, not suspended, in its
// domain's directory; its groups are resolved across every domain's.
func (d *Directories) Lookup(_ context.Context, email string) (DirectoryEntry, error) {
	email = strings.ToLower(email)
	d.mu.RLock()
	defer d.mu.RUnlock()
	entry := DirectoryEntry{Groups: slices.Clone(d.groups[email])}
	if snap := d.snaps[EmailDomain(email)]; snap != nil {
		var user DirectoryUser
		user, entry.InDirectory = snap.Users[email]
		entry.Known = entry.InDirectory && !user.Suspended
		entry.ID = user.ID
	}
	return entry, nil
}
