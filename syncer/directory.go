package syncer

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"golang.org/x/sync/errgroup"
	admin "google.golang.org/api/admin/directory/v1"
)

// Directory page sizes: the most the API returns a call.
const (
	usersPageSize   = 500
	groupsPageSize  = 200
	membersPageSize = 200
)

// DirectoryResult tells what a directory sync read.
type DirectoryResult struct {
	Domain   string
	Users    int
	Groups   int
	Calls    int64
	Duration time.Duration
}

// SyncDirectory reads a domain's users and groups, with their members, as the
// domain's adminEmail, and replaces the domain's directory in the index.
func (s *Syncer) SyncDirectory(ctx context.Context, domain string) (*DirectoryResult, error) {
	dom := s.cfg.Domain(domain)
	if dom == nil {
		return nil, fm.Errorf(fm.ENOTFOUND, "Domain %s is not configured.", domain)
	}
	if dom.AdminEmail == "" {
		return nil, fmt.Errorf("directory of %s: domains[].adminEmail is not set", domain)
	}
	var calls atomic.Int64
	ctx = withCallCounter(ctx, &calls)
	start := s.opts.Now()
	svc, err := s.directoryFor(dom.AdminEmail)
	if err != nil {
		return nil, err
	}
	r := &directoryReader{svc: svc, domain: dom.Name, concurrency: s.cfg.Storage.Concurrency}
	snap, groups, err := r.read(ctx)
	if err != nil {
		return nil, fmt.Errorf("directory of %s, read as %s: %w", domain, dom.AdminEmail, err)
	}
	snap.SyncedAt = start.UTC()
	if err := s.index.ReplaceDirectory(ctx, snap); err != nil {
		return nil, err
	}
	res := &DirectoryResult{Domain: domain, Users: len(snap.Users), Groups: groups, Calls: calls.Load(), Duration: s.opts.Now().Sub(start)}
	s.logger.Info("directory synced", "domain", domain, "users", res.Users, "groups", res.Groups, "calls", res.Calls, "duration", res.Duration)
	return res, nil
}

// directoryReader reads one domain's directory.
type directoryReader struct {
	svc         *admin.Service
	domain      string
	concurrency int

	mu       sync.Mutex          // guards memberOf while members are read
	memberOf map[string][]string // member e-mail → the groups it is a direct member of
	isGroup  map[string]bool
}

func (r *directoryReader) read(ctx context.Context) (*fm.DirectorySnapshot, int, error) {
	snap := &fm.DirectorySnapshot{Domain: r.domain, Users: map[string]bool{}, Groups: map[string][]string{}}
	err := r.svc.Users.List().Domain(r.domain).MaxResults(usersPageSize).Fields("nextPageToken,users(primaryEmail,suspended)").
		Pages(ctx, func(page *admin.Users) error {
			for _, u := range page.Users {
				snap.Users[strings.ToLower(u.PrimaryEmail)] = u.Suspended
			}
			return nil
		})
	if err != nil {
		return nil, 0, fmt.Errorf("list users: %w", err)
	}
	var groups []string
	err = r.svc.Groups.List().Domain(r.domain).MaxResults(groupsPageSize).Fields("nextPageToken,groups(email)").
		Pages(ctx, func(page *admin.Groups) error {
			for _, g := range page.Groups {
				groups = append(groups, strings.ToLower(g.Email))
			}
			return nil
		})
	if err != nil {
		return nil, 0, fmt.Errorf("list groups: %w", err)
	}
	if err := r.readMembers(ctx, groups); err != nil {
		return nil, 0, err
	}
	snap.Groups = r.closure()
	return snap, len(groups), nil
}

// readMembers lists the members of groups, and of the groups nested in them,
// storage.concurrency calls at a time. It goes level by level: the groups
// found nested in one level's are read in the next, so that no call waits
// for a slot while holding one.
func (r *directoryReader) readMembers(ctx context.Context, groups []string) error {
	r.memberOf, r.isGroup = map[string][]string{}, map[string]bool{}
	requested := map[string]bool{}
	for level := groups; len(level) > 0; {
		var todo []string
		for _, group := range level {
			r.isGroup[group] = true
			if !requested[group] {
				requested[group] = true
				todo = append(todo, group)
			}
		}
		nested := make([][]string, len(todo))
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(max(1, r.concurrency))
		for i, group := range todo {
			g.Go(func() error {
				var err error
				if nested[i], err = r.listMembers(gctx, group); err != nil {
					return fmt.Errorf("list members of %s: %w", group, err)
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
		level = slices.Concat(nested...)
	}
	return nil
}

// listMembers records a group's direct members and returns the nested groups.
func (r *directoryReader) listMembers(ctx context.Context, group string) ([]string, error) {
	var nested []string
	err := r.svc.Members.List(group).MaxResults(membersPageSize).Fields("nextPageToken,members(email,type)").
		Pages(ctx, func(page *admin.Members) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			for _, m := range page.Members {
				email := strings.ToLower(m.Email)
				if email == "" {
					continue // the whole customer: no e-mail to grant to
				}
				r.memberOf[email] = append(r.memberOf[email], group)
				if m.Type == "GROUP" {
					nested = append(nested, email)
				}
			}
			return nil
		})
	return nested, err
}

// closure returns, for each member that is not a group, every group it
// belongs to directly or through nested groups, sorted.
func (r *directoryReader) closure() map[string][]string {
	out := map[string][]string{}
	for member := range r.memberOf {
		if r.isGroup[member] {
			continue
		}
		seen := map[string]bool{}
		queue := slices.Clone(r.memberOf[member])
		for len(queue) > 0 {
			g := queue[0]
			queue = queue[1:]
			if seen[g] {
				continue
			}
			seen[g] = true
			queue = append(queue, r.memberOf[g]...)
		}
		groups := make([]string, 0, len(seen))
		for g := range seen {
			groups = append(groups, g)
		}
		slices.Sort(groups)
		out[member] = groups
	}
	return out
}
