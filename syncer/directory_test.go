package syncer_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/httpapi/auth"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/googlefake"
	"github.com/foldermirror/foldermirror/syncer"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestSyncDirectory(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	for _, u := range []string{admin, "alice@example.com", "bob@example.com", "carol@example.com", "pat@partner.org"} {
		fake.AddUser(u)
	}
	fake.MakeAdmin(admin)
	fake.SuspendUser("carol@example.com", true)
	fake.AddGroup("sub@example.com", "bob@example.com", "pat@partner.org")
	fake.AddGroup("eng@example.com", "alice@example.com", "sub@example.com")
	fake.AddGroup("all@example.com", "eng@example.com", "carol@example.com")
	fake.AddGroup("loop-a@example.com", "loop-b@example.com", "alice@example.com")
	fake.AddGroup("loop-b@example.com", "loop-a@example.com")
	e := newEnv(t, fake)
	fake.ResetCalls()
	res, err := e.s.SyncDirectory(context.Background(), "example.com", fm.Fence{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Users != 5 || res.Groups != 5 {
		t.Errorf("result %+v", res)
	}
	for _, tc := range []struct {
		email  string
		known  bool
		groups []string
	}{
		{"alice@example.com", true, []string{"all@example.com", "eng@example.com", "loop-a@example.com", "loop-b@example.com"}},
		{"bob@example.com", true, []string{"all@example.com", "eng@example.com", "sub@example.com"}},
		{"carol@example.com", false, []string{"all@example.com"}},
		{"pat@partner.org", false, []string{"all@example.com", "eng@example.com", "sub@example.com"}},
		{"storage@example.com", true, nil},
	} {
		got, _ := e.db.Lookup(context.Background(), tc.email)
		wantID := googlefake.UserID(tc.email)
		if fm.EmailDomain(tc.email) != "example.com" {
			wantID = "" // not in the directory synced
		}
		if got.Known != tc.known || !slices.Equal(got.Groups, tc.groups) || got.ID != wantID {
			t.Errorf("%s: %+v; want known %v, groups %v, ID %q", tc.email, got, tc.known, tc.groups, wantID)
		}
	}
	calls := fake.Calls()
	if calls["directory.users.list"] != 1 || calls["directory.groups.list"] != 1 || calls["directory.members.list"] != 5 {
		t.Errorf("calls %v", calls)
	}

	// A user removed from the directory is no longer known after the next sync.
	fake.RemoveUser("alice@example.com")
	if _, err := e.s.SyncDirectory(context.Background(), "example.com", fm.Fence{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.db.Lookup(context.Background(), "alice@example.com"); got.Known || got.InDirectory || len(got.Groups) != 0 {
		t.Errorf("removed alice: %+v", got)
	}
}

func TestSyncDirectoryRefused(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	fake.AddUser(admin) // not made an admin
	e := newEnv(t, fake)
	_, err := e.s.SyncDirectory(context.Background(), "example.com", fm.Fence{})
	if err == nil || !strings.Contains(err.Error(), admin) || !strings.Contains(err.Error(), "Not Authorized") {
		t.Errorf("error %v; want it to name the admin and Google's refusal", err)
	}
	if _, err := e.s.SyncDirectory(context.Background(), "nope.org", fm.Fence{}); err == nil {
		t.Error("unconfigured domain synced")
	}
}

// Nested groups with storage.concurrency 1: reading the members of a group
// that has a nested one must not wait for a call slot its own reader holds.
func TestSyncDirectoryNestedGroupsConcurrencyOne(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	for _, u := range []string{admin, "alice@example.com", "bob@example.com"} {
		fake.AddUser(u)
	}
	fake.MakeAdmin(admin)
	fake.AddGroup("c@example.com", "alice@example.com")
	fake.AddGroup("a@example.com", "c@example.com")
	fake.AddGroup("b@example.com", "bob@example.com")
	e := newEnv(t, fake)
	e.cfg.Storage.Concurrency = 1
	e.restartSyncer()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := e.s.SyncDirectory(ctx, "example.com", fm.Fence{})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("directory sync still running after 10 s: deadlocked")
	}
	if got, _ := e.db.Lookup(context.Background(), "alice@example.com"); !slices.Equal(got.Groups, []string{"a@example.com", "c@example.com"}) {
		t.Errorf("alice's groups: %v", got.Groups)
	}
}

// Two configured domains in two Workspace organisations, and a third
// organisation no configured admin runs:
//
//	alpha.example (with its secondary domain alpha-sub.example, not configured)
//	  leads@alpha.example      ann, crew@beta.example, subteam@alpha-sub.example
//	  ring@alpha.example       al, ring@beta.example
//	  subteam@alpha-sub.example sue
//	beta.example (sid suspended)
//	  eng@beta.example         bob, leads@alpha.example, outside@gamma.org, hidden@gamma.org
//	  crew@beta.example        bea
//	  ring@beta.example        ring@alpha.example
//	gamma.org
//	  outside@gamma.org, hidden@gamma.org   gus
//
// Google answers 403 for outside@gamma.org's members and, through the
// proxy, 404 for hidden@gamma.org's, as it does for some other
// organisations' groups.
func twoOrganizations(t *testing.T) (*googlefake.Server, *directoryProxy) {
	t.Helper()
	fake := startFake(t)
	fake.AddOrganization("alpha.example", "alpha-sub.example")
	for _, u := range []string{"admin@alpha.example", "ann@alpha.example", "al@alpha.example", "sue@alpha-sub.example",
		"admin@beta.example", "bob@beta.example", "bea@beta.example", "sid@beta.example", "gus@gamma.org"} {
		fake.AddUser(u)
	}
	fake.MakeAdmin("admin@alpha.example")
	fake.MakeAdmin("admin@beta.example")
	fake.SuspendUser("sid@beta.example", true)
	fake.AddGroup("leads@alpha.example", "ann@alpha.example", "crew@beta.example", "subteam@alpha-sub.example")
	fake.AddGroup("ring@alpha.example", "al@alpha.example", "ring@beta.example")
	fake.AddGroup("subteam@alpha-sub.example", "sue@alpha-sub.example")
	fake.AddGroup("outside@gamma.org", "gus@gamma.org")
	fake.AddGroup("hidden@gamma.org", "gus@gamma.org")
	fake.AddGroup("eng@beta.example", "bob@beta.example", "leads@alpha.example", "outside@gamma.org", "hidden@gamma.org")
	fake.AddGroup("crew@beta.example", "bea@beta.example")
	fake.AddGroup("ring@beta.example", "ring@alpha.example")
	proxy := &directoryProxy{fake: fake, replies: map[string]cannedReply{"hidden@gamma.org": groupNotFound}}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	proxy.url = srv.URL + "/"
	return fake, proxy
}

// directoryProxy stands between the syncer and the fake's Directory API: it
// records whose members are asked for, and answers with a canned reply for
// the groups in replies.
type directoryProxy struct {
	fake *googlefake.Server
	url  string

	mu      sync.Mutex
	asked   []string
	replies map[string]cannedReply
}

type cannedReply struct {
	status int
	body   string
}

var (
	groupNotFound = cannedReply{404, `{"error":{"code":404,"message":"Resource Not Found: groupKey",` +
		`"errors":[{"domain":"global","reason":"notFound","message":"Resource Not Found: groupKey"}]}}`}
	groupForbidden = cannedReply{403, `{"error":{"code":403,"message":"Not Authorized to access this resource/api",` +
		`"errors":[{"domain":"global","reason":"forbidden","message":"Not Authorized to access this resource/api"}]}}`}
	groupRateLimited = cannedReply{403, `{"error":{"code":403,"message":"Quota exceeded",` +
		`"errors":[{"domain":"usageLimits","reason":"rateLimitExceeded","message":"Quota exceeded"}]}}`}
	groupUnavailable = cannedReply{503, `{"error":{"code":503,"message":"The service is currently unavailable.",` +
		`"errors":[{"domain":"global","reason":"backendError","message":"The service is currently unavailable."}]}}`}
	groupTooMany = cannedReply{429, `{"error":{"code":429,"message":"Too many requests",` +
		`"errors":[{"domain":"global","reason":"rateLimitExceeded","message":"Too many requests"}]}}`}
)

func (p *directoryProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, _ := strings.CutPrefix(r.URL.Path, "/admin/directory/v1/groups/")
	if group, ok := strings.CutSuffix(rest, "/members"); ok {
		p.mu.Lock()
		p.asked = append(p.asked, group)
		reply, canned := p.replies[group]
		p.mu.Unlock()
		if canned {
			w.Header().Set("Content-Type", "application/json; charset=UTF-8")
			w.WriteHeader(reply.status)
			io.WriteString(w, reply.body)
			return
		}
	}
	p.fake.ServeHTTP(w, r)
}

// reply sets the canned reply for a group's members; a zero one removes it.
func (p *directoryProxy) reply(group string, r cannedReply) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.status == 0 {
		delete(p.replies, group)
	} else {
		p.replies[group] = r
	}
}

// takeAsked returns the groups whose members were asked for since the last
// call, sorted, once each.
func (p *directoryProxy) takeAsked() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	asked := p.asked
	p.asked = nil
	slices.Sort(asked)
	return slices.Compact(asked)
}

// directoryEnv is an env of configured domains, with no library, whose
// syncer logs into log and keeps metrics.
type directoryEnv struct {
	*env
	log bytes.Buffer
}

// newDirectoryEnv configures domains, each read as admin@DOMAIN through
// directoryEndpoint.
func newDirectoryEnv(t *testing.T, fake *googlefake.Server, directoryEndpoint string, domains ...string) *directoryEnv {
	t.Helper()
	c := fmtest.Config(t, fake, t.TempDir())
	c.Storage.DirectoryEndpoint = directoryEndpoint
	c.Storage.RequestsPerSecond = 10000
	for _, d := range domains {
		c.Domains = append(c.Domains, config.Domain{Name: d, AdminEmail: "admin@" + d})
	}
	cfg := fmtest.LoadConfig(t, c)
	e := &directoryEnv{env: &env{t: t, fake: fake, cfg: cfg, db: fmtest.OpenBolt(t, cfg.DataDir)}}
	e.logger = slog.New(slog.NewTextHandler(&e.log, nil))
	e.metrics = syncer.NewMetrics(prometheus.NewRegistry())
	e.restartSyncer()
	return e
}

// syncDirectory syncs a domain's directory or fails the test.
func (e *env) syncDirectory(domain string) *fm.DirectoryResult {
	e.t.Helper()
	res, err := e.s.SyncDirectory(context.Background(), domain, fm.Fence{})
	if err != nil {
		e.t.Fatalf("directory of %s: %v", domain, err)
	}
	return res
}

// lookup asks the API's view of the directory (the synced one and the
// configuration) about a caller.
func (e *env) lookup(email string) (bool, []string) {
	e.t.Helper()
	var domains []auth.Domain
	for _, d := range e.cfg.Domains {
		domains = append(domains, auth.Domain{Name: d.Name, Users: d.Users})
	}
	got, err := auth.Directory{Domains: domains, Synced: e.db}.Lookup(context.Background(), email)
	if err != nil {
		e.t.Fatal(err)
	}
	return got.Known, got.Groups
}

// A group nested in another configured domain's group is resolved from that
// domain's directory, whichever domain syncs first; each admin reads only
// its own organisation's groups; the groups of another organisation are
// reported, not fatal.
func TestSyncDirectoriesAcrossOrganizations(t *testing.T) {
	t.Parallel()
	for _, order := range [][]string{{"alpha.example", "beta.example"}, {"beta.example", "alpha.example"}} {
		t.Run(order[0]+" first", func(t *testing.T) {
			fake, proxy := twoOrganizations(t)
			e := newDirectoryEnv(t, fake, proxy.url, "alpha.example", "beta.example")
			proxy.takeAsked()
			asked := map[string][]string{
				"alpha.example": {"leads@alpha.example", "ring@alpha.example", "subteam@alpha-sub.example"},
				"beta.example":  {"crew@beta.example", "eng@beta.example", "hidden@gamma.org", "outside@gamma.org", "ring@beta.example"},
			}
			unreadable := map[string][]string{"beta.example": {"hidden@gamma.org", "outside@gamma.org"}}
			for i, domain := range order {
				res := e.syncDirectory(domain)
				if got := proxy.takeAsked(); !slices.Equal(got, asked[domain]) {
					t.Errorf("%s's admin asked for the members of %v, want %v", domain, got, asked[domain])
				}
				if !slices.Equal(res.UnreadableGroups, unreadable[domain]) {
					t.Errorf("%s: unreadable groups %v, want %v", domain, res.UnreadableGroups, unreadable[domain])
				}
				gauge := e.metrics.UnreadableGroups()
				if n := testutil.CollectAndCount(gauge); n != i+1 {
					t.Errorf("after %s: unreadable groups metric of %d domains, want %d", domain, n, i+1)
				}
				if got := testutil.ToFloat64(gauge.WithLabelValues(domain)); got != float64(len(unreadable[domain])) {
					t.Errorf("%s: unreadable groups metric %v", domain, got)
				}
			}
			if n := strings.Count(e.log.String(), "level=WARN"); n != 1 || !strings.Contains(e.log.String(), `groups="[hidden@gamma.org outside@gamma.org]"`) {
				t.Errorf("%d warnings, want one naming the unreadable groups:\n%s", n, e.log.String())
			}
			for _, tc := range []struct {
				email  string
				known  bool
				groups []string
			}{
				{"ann@alpha.example", true, []string{"eng@beta.example", "leads@alpha.example"}},
				{"bea@beta.example", true, []string{"crew@beta.example", "eng@beta.example", "leads@alpha.example"}},
				{"sue@alpha-sub.example", false, []string{"eng@beta.example", "leads@alpha.example", "subteam@alpha-sub.example"}},
				{"al@alpha.example", true, []string{"ring@alpha.example", "ring@beta.example"}},
				{"bob@beta.example", true, []string{"eng@beta.example"}},
				{"sid@beta.example", false, nil},
				{"gus@gamma.org", false, nil},
			} {
				if known, groups := e.lookup(tc.email); known != tc.known || !slices.Equal(groups, tc.groups) {
					t.Errorf("%s: known %v, groups %v; want %v %v", tc.email, known, groups, tc.known, tc.groups)
				}
			}
		})
	}
}

// Until the other domain's directory is synced, its groups nested in this
// one's contribute no members.
func TestSyncDirectoryBeforeTheOtherDomain(t *testing.T) {
	t.Parallel()
	fake, proxy := twoOrganizations(t)
	e := newDirectoryEnv(t, fake, proxy.url, "alpha.example", "beta.example")
	e.syncDirectory("beta.example")
	if _, groups := e.lookup("ann@alpha.example"); len(groups) != 0 {
		t.Errorf("ann's groups before alpha's directory: %v", groups)
	}
	if _, groups := e.lookup("bea@beta.example"); !slices.Equal(groups, []string{"crew@beta.example"}) {
		t.Errorf("bea's groups before alpha's directory: %v", groups)
	}
}

// A user removed from the directory loses access at the next sync of its
// domain's directory, although groups of another organisation, which the
// admin may not read, are nested in its groups; so does a member removed
// from a group of the other domain.
func TestRemovedUsersLoseAccessDespiteUnreadableGroups(t *testing.T) {
	t.Parallel()
	fake, proxy := twoOrganizations(t)
	e := newDirectoryEnv(t, fake, proxy.url, "alpha.example", "beta.example")
	e.syncDirectory("alpha.example")
	e.syncDirectory("beta.example")
	if known, _ := e.lookup("bob@beta.example"); !known {
		t.Fatal("bob not known at first")
	}
	fake.RemoveUser("bob@beta.example")
	fake.RemoveGroupMember("leads@alpha.example", "crew@beta.example")
	if res := e.syncDirectory("beta.example"); len(res.UnreadableGroups) != 2 {
		t.Fatalf("beta's unreadable groups: %v", res.UnreadableGroups)
	}
	if known, groups := e.lookup("bob@beta.example"); known || len(groups) != 0 {
		t.Errorf("bob after his removal: known %v, groups %v", known, groups)
	}
	if _, groups := e.lookup("bea@beta.example"); !slices.Equal(groups, []string{"crew@beta.example", "eng@beta.example", "leads@alpha.example"}) {
		t.Errorf("bea's groups before alpha's next sync: %v", groups)
	}
	e.syncDirectory("alpha.example")
	if _, groups := e.lookup("bea@beta.example"); !slices.Equal(groups, []string{"crew@beta.example"}) {
		t.Errorf("bea's groups after crew left leads: %v", groups)
	}
}

// Only a permanent refusal of another domain's group makes it unreadable:
// the same refusal for the domain's own group, and errors that outlast the
// retries, fail the sync, which keeps the last good directory whole.
func TestSyncDirectoryFailuresKeepTheLastGoodDirectory(t *testing.T) {
	t.Parallel()
	fake, proxy := twoOrganizations(t)
	e := newDirectoryEnv(t, fake, proxy.url, "alpha.example", "beta.example")
	e.syncDirectory("beta.example")
	fake.RemoveUser("bob@beta.example")
	for _, tc := range []struct {
		name  string
		group string
		reply cannedReply
	}{
		{"another organisation's group: 503 throughout", "outside@gamma.org", groupUnavailable},
		{"another organisation's group: 429 throughout", "outside@gamma.org", groupTooMany},
		{"another organisation's group: rate-limit 403 throughout", "outside@gamma.org", groupRateLimited},
		{"the domain's own group: 403", "crew@beta.example", groupForbidden},
		{"the domain's own group: 404", "crew@beta.example", groupNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proxy.reply(tc.group, tc.reply)
			defer proxy.reply(tc.group, cannedReply{})
			_, err := e.s.SyncDirectory(context.Background(), "beta.example", fm.Fence{})
			if err == nil || !strings.Contains(err.Error(), tc.group) || !strings.Contains(err.Error(), fmt.Sprint(tc.reply.status)) {
				t.Fatalf("error %v; want one naming %s and %d", err, tc.group, tc.reply.status)
			}
			if known, groups := e.lookup("bob@beta.example"); !known || !slices.Equal(groups, []string{"eng@beta.example"}) {
				t.Errorf("the last good directory is gone: bob known %v, groups %v", known, groups)
			}
		})
	}
	e.syncDirectory("beta.example")
	if known, _ := e.lookup("bob@beta.example"); known {
		t.Error("bob still known after a sync that succeeded")
	}
}
