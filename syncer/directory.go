package syncer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/googleclient"
	"golang.org/x/sync/errgroup"
	admin "google.golang.org/api/admin/directory/v1"
	"google.golang.org/api/googleapi"
)

// Directory page sizes: the most the API returns a call.
const (
	usersPageSize   = 500
	groupsPageSize  = 200
	membersPageSize = 200
)

// SyncDirectory reads a domain's users and groups, with their direct
// members, as the domain's adminEmail, and replaces the domain's directory
// in the index under fence, which resolves nested groups across every
// domain's directory.
//
// A group nested in the domain's is read as follows. One of another
// configured domain that has a directory (an adminEmail) is not read here:
// its members come from that domain's directory, whenever it is synced.
// One of any other domain is read with this domain's admin (a secondary
// domain of its organisation is readable); if Google refuses (403) or does
// not know it (404), it is an unreadable group: it contributes no members,
// is logged once with a warning, and is reported in the result and counted
// in the foldermirror_directory_unreadable_groups metric.
//
// Any other failure (an error that outlasted the retries, a refusal to list
// the domain's own users, groups or members) fails the sync: the domain's
// last good directory stays, whole. A domain's directory is thus replaced
// whole or not at all; when several domains are synced and some fail, the
// others are replaced and the failed ones keep their last good directory.
func (s *Syncer) SyncDirectory(ctx context.Context, domain string, fence fm.Fence) (*fm.DirectoryResult, error) {
	dom := s.domain(domain)
	if dom == nil {
		return nil, fm.Errorf(fm.ENOTFOUND, "Domain %s is not configured.", domain)
	}
	if dom.AdminEmail == "" {
		return nil, fmt.Errorf("directory of %s: domains[].adminEmail is not set", domain)
	}
	var calls atomic.Int64
	ctx = googleclient.WithCallCounter(ctx, &calls)
	start := s.opts.Now()
	svc, err := s.clients.Directory(dom.AdminEmail)
	if err != nil {
		return nil, err
	}
	r := &directoryReader{svc: svc, domain: dom.Name, readElsewhere: s.directoryDomains(dom.Name), concurrency: s.opts.Concurrency}
	snap, groups, err := r.read(ctx)
	if err != nil {
		return nil, fmt.Errorf("directory of %s, read as %s: %w", domain, dom.AdminEmail, err)
	}
	snap.SyncedAt = start.UTC()
	if err := s.index.ReplaceDirectory(ctx, snap, fence); err != nil {
		return nil, err
	}
	s.opts.Metrics.unreadableGroups.WithLabelValues(dom.Name).Set(float64(len(snap.Unreadable)))
	res := &fm.DirectoryResult{Domain: domain, Users: len(snap.Users), Groups: groups, UnreadableGroups: snap.Unreadable,
		Calls: calls.Load(), Duration: s.opts.Now().Sub(start)}
	if n := len(snap.Unreadable); n > 0 {
		s.logger.Warn("directory: nested groups its admin may not read contribute no members",
			"domain", domain, "admin", dom.AdminEmail, "count", n, "groups", snap.Unreadable[:min(n, maxGroupsLogged)])
	}
	s.logger.Info("directory synced", "domain", domain, "users", res.Users, "groups", res.Groups,
		"unreadableGroups", len(res.UnreadableGroups), "calls", res.Calls, "duration", res.Duration)
	return res, nil
}

// maxGroupsLogged bounds the unreadable groups a warning names; the result
// and /status name them all.
const maxGroupsLogged = 20

// directoryDomains returns the configured domains other than domain that
// have a directory of their own: groups of theirs are resolved from it.
func (s *Syncer) directoryDomains(domain string) map[string]bool {
	out := map[string]bool{}
	for _, d := range s.opts.Domains {
		if d.AdminEmail != "" && !strings.EqualFold(d.Name, domain) {
			out[strings.ToLower(d.Name)] = true
		}
	}
	return out
}

// directoryReader reads one domain's directory.
type directoryReader struct {
	svc    *admin.Service
	domain string
	// readElsewhere holds the domains whose groups come from their own
	// directory: they are not read here.
	readElsewhere map[string]bool
	concurrency   int

	mu         sync.Mutex          // guards what follows while members are read
	direct     map[string][]string // member e-mail → the groups read that contain it directly
	unreadable []string
}

func (r *directoryReader) read(ctx context.Context) (*fm.DirectorySnapshot, int, error) {
	snap := &fm.DirectorySnapshot{Domain: r.domain, Users: map[string]fm.DirectoryUser{}}
	err := r.svc.Users.List().Domain(r.domain).MaxResults(usersPageSize).Fields("nextPageToken,users(id,primaryEmail,suspended)").
		Pages(ctx, func(page *admin.Users) error {
			for _, u := range page.Users {
				snap.Users[strings.ToLower(u.PrimaryEmail)] = fm.DirectoryUser{ID: u.Id, Suspended: u.Suspended}
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
	slices.Sort(r.unreadable)
	snap.DirectGroups, snap.Unreadable = r.direct, r.unreadable
	return snap, len(groups), nil
}

// readMembers lists the members of groups, and of the groups nested in them
// that are read here, storage.concurrency calls at a time. It goes level by
// level: the groups found nested in one level's are read in the next, so
// that no call waits for a slot while holding one.
func (r *directoryReader) readMembers(ctx context.Context, groups []string) error {
	r.direct = map[string][]string{}
	requested := map[string]bool{}
	for level := groups; len(level) > 0; {
		var todo []string
		for _, group := range level {
			if !requested[group] && !r.readElsewhere[fm.EmailDomain(group)] {
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
				nested[i], err = r.listMembers(gctx, group)
				switch {
				case err == nil:
				case fm.EmailDomain(group) != r.domain && refusedGroup(err):
					r.markUnreadable(group)
				default:
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

// listMembers records a group's direct members, once all are read, and
// returns the nested groups.
func (r *directoryReader) listMembers(ctx context.Context, group string) ([]string, error) {
	var members, nested []string
	err := r.svc.Members.List(group).MaxResults(membersPageSize).Fields("nextPageToken,members(email,type)").
		Pages(ctx, func(page *admin.Members) error {
			for _, m := range page.Members {
				email := strings.ToLower(m.Email)
				if email == "" {
					continue // the whole customer: no e-mail to grant to
				}
				members = append(members, email)
				if m.Type == "GROUP" {
					nested = append(nested, email)
				}
			}
			return nil
		})
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range members {
		r.direct[m] = append(r.direct[m], group)
	}
	return nested, nil
}

func (r *directoryReader) markUnreadable(group string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unreadable = append(r.unreadable, group)
}

// refusedGroup tells whether Google refused to list a group's members for
// good: 404 (no such group, for this admin) or 403 for a reason other than
// a rate limit (another organisation's group).
func refusedGroup(err error) bool {
	var gerr *googleapi.Error
	if !errors.As(err, &gerr) {
		return false
	}
	return gerr.Code == http.StatusNotFound || gerr.Code == http.StatusForbidden && !googleclient.IsRateLimit(gerr)
}
