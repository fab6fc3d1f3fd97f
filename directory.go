package foldermirror

import (
	"context"
	"slices"
	"strings"
	"sync"
)

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
