package foldermirror

import (
	"cmp"
	"slices"
	"sync"
)

// LibrarySet is the one owner of the set of libraries the daemon syncs and
// serves: the configured ones, fixed at start, and those discovered (DESIGN
// §10), which appear, are renamed and disappear while it runs. Every package
// that syncs, schedules, watches or serves libraries reads it, and is told of
// its changes (Subscribe). It is safe for concurrent use.
type LibrarySet struct {
	mu         sync.RWMutex
	configured []Library
	// configuredIDs and configuredDrives are the configured libraries' IDs
	// and shared drives, to tell a configured library at once.
	configuredIDs, configuredDrives map[string]bool
	// discovered holds each domain's discovered libraries, by domain.
	discovered map[string][]Library
	// list and byID are the set as readers see it; a change replaces them
	// (never changes them in place), so that List's result stays valid.
	list        []Library
	byID        map[string]*Library
	subscribers []func(LibrarySetChange)
}

// LibrarySetChange is what one change of a LibrarySet did.
type LibrarySetChange struct {
	// Added are the libraries new to the set; Changed those whose name (or
	// another field) changed, as they are now; Removed those no longer in it (as they
	// were).
	Added, Changed, Removed []Library
}

// Empty tells whether the change changed nothing.
func (c *LibrarySetChange) Empty() bool {
	return len(c.Added) == 0 && len(c.Changed) == 0 && len(c.Removed) == 0
}

// NewLibrarySet returns the set of the configured libraries, none
// discovered yet.
func NewLibrarySet(configured []Library) *LibrarySet {
	s := &LibrarySet{configured: slices.Clone(configured), discovered: map[string][]Library{},
		configuredIDs: make(map[string]bool, len(configured)), configuredDrives: map[string]bool{}}
	for _, l := range configured {
		s.configuredIDs[l.ID] = true
		if l.SharedDriveID != "" {
			s.configuredDrives[l.SharedDriveID] = true
		}
	}
	s.list, s.byID = s.build()
	return s
}

// Library returns the library of that ID and true, or false if the set has
// none such.
func (s *LibrarySet) Library(id string) (Library, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if l := s.byID[id]; l != nil {
		return *l, true
	}
	return Library{}, false
}

// List returns every library, sorted by ID. The slice is shared: the
// caller must not change it.
func (s *LibrarySet) List() []Library {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.list
}

// Len is the number of libraries.
func (s *LibrarySet) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.list)
}

// IDs returns every library's ID, sorted.
func (s *LibrarySet) IDs() []string {
	list := s.List()
	ids := make([]string, len(list))
	for i := range list {
		ids[i] = list[i].ID
	}
	return ids
}

// Discovered tells whether the library of that ID was discovered rather
// than configured.
func (s *LibrarySet) Discovered(id string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return !s.configuredIDs[id] && s.byID[id] != nil
}

// Subscribe has fn told of each change of the set, after it is made, in
// the goroutine that made it; fn must not block, nor change the set.
func (s *LibrarySet) Subscribe(fn func(LibrarySetChange)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subscribers = append(s.subscribers, fn)
}

// SetDiscovered makes libs the libraries discovered for domain, replacing
// those discovered for it before, and tells the subscribers what changed.
// A library whose ID, or whose shared drive, a configured library has is
// left out: a drive listed under libraries is served once, as configured.
func (s *LibrarySet) SetDiscovered(domain string, libs []Library) LibrarySetChange {
	s.mu.Lock()
	kept := make([]Library, 0, len(libs))
	for _, l := range libs {
		if !s.isConfigured(l) {
			kept = append(kept, l)
		}
	}
	if slices.Equal(kept, s.discovered[domain]) {
		s.mu.Unlock()
		return LibrarySetChange{} // as it was: nothing to rebuild
	}
	if len(kept) == 0 {
		delete(s.discovered, domain)
	} else {
		s.discovered[domain] = kept
	}
	oldByID := s.byID
	s.list, s.byID = s.build()
	change := diffLibraries(oldByID, s.byID)
	subscribers := slices.Clone(s.subscribers)
	s.mu.Unlock()
	if !change.Empty() {
		for _, fn := range subscribers {
			fn(change)
		}
	}
	return change
}

// isConfigured tells whether l is a configured library, or its drive that
// of one. Call with s.mu held.
func (s *LibrarySet) isConfigured(l Library) bool {
	return s.configuredIDs[l.ID] || (l.SharedDriveID != "" && s.configuredDrives[l.SharedDriveID])
}

// build returns the set as readers see it: configured libraries first, a
// discovered one only if no library before it has its ID. Call with s.mu
// held.
func (s *LibrarySet) build() ([]Library, map[string]*Library) {
	n := len(s.configured)
	for _, libs := range s.discovered {
		n += len(libs)
	}
	list := make([]Library, 0, n)
	seen := make(map[string]bool, n)
	add := func(l Library) {
		if !seen[l.ID] {
			seen[l.ID] = true
			list = append(list, l)
		}
	}
	for _, l := range s.configured {
		add(l)
	}
	domains := make([]string, 0, len(s.discovered))
	for d := range s.discovered {
		domains = append(domains, d)
	}
	slices.Sort(domains)
	for _, d := range domains {
		for _, l := range s.discovered[d] {
			add(l)
		}
	}
	slices.SortFunc(list, func(a, b Library) int { return cmp.Compare(a.ID, b.ID) })
	byID := make(map[string]*Library, len(list))
	for i := range list {
		byID[list[i].ID] = &list[i]
	}
	return list, byID
}

// diffLibraries says how the set after differs from the set before.
func diffLibraries(before, after map[string]*Library) LibrarySetChange {
	var c LibrarySetChange
	for id, l := range after {
		switch old := before[id]; {
		case old == nil:
			c.Added = append(c.Added, *l)
		case *old != *l:
			c.Changed = append(c.Changed, *l)
		}
	}
	for id, l := range before {
		if after[id] == nil {
			c.Removed = append(c.Removed, *l)
		}
	}
	byID := func(a, b Library) int { return cmp.Compare(a.ID, b.ID) }
	slices.SortFunc(c.Added, byID)
	slices.SortFunc(c.Changed, byID)
	slices.SortFunc(c.Removed, byID)
	return c
}
