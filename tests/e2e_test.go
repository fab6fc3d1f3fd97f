package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/googlefake"
	"github.com/foldermirror/foldermirror/internal/pgtest"
)

const (
	e2eClient  = fmtest.ClientID
	e2eStorage = "storage@example.com"
)

// model mirrors, on the test's side, the tree built in the fake and who it
// is shared with, to say independently of foldermirror what each user may
// list.
type model struct {
	fake    *googlefake.Server
	root    string
	folders map[string]*mfolder
}

type mfolder struct {
	id, name, parent string
	// grants are the principals this folder itself is shared with,
	// true for a grant that lists (not by link only).
	grants map[string]bool
}

func newModel(fake *googlefake.Server, rootName string) *model {
	m := &model{fake: fake, folders: map[string]*mfolder{}}
	m.root = m.add("", rootName)
	return m
}

func (m *model) add(parent, name string) string {
	id := m.fake.CreateFolder(e2eStorage, parent, name)
	m.folders[id] = &mfolder{id: id, name: name, parent: parent, grants: map[string]bool{}}
	return id
}

func (m *model) share(id string, p googlefake.Permission) {
	m.fake.Share(id, p)
	var principal string
	switch p.Type {
	case "user":
		principal = fm.UserPrincipal(p.EmailAddress)
	case "domain":
		principal = fm.DomainPrincipal(p.Domain)
	case "anyone":
		principal = fm.PrincipalAnyone
	}
	listed := p.Type == "user" || p.AllowFileDiscovery
	m.folders[id].grants[principal] = m.folders[id].grants[principal] || listed
}

// reach tells whether a grant on the folder or an ancestor reaches the
// user: (any grant, a listing one).
func (m *model) reach(id, email string) (reached, listing bool) {
	principals := []string{fm.UserPrincipal(email), fm.DomainPrincipal(fm.EmailDomain(email)), fm.PrincipalAnyone}
	for f := m.folders[id]; f != nil; f = m.folders[f.parent] {
		for _, p := range principals {
			if l, ok := f.grants[p]; ok {
				reached = true
				listing = listing || l
			}
		}
	}
	return reached, listing
}

func (m *model) children(id string) []*mfolder {
	var out []*mfolder
	for _, f := range m.folders {
		if f.parent == id {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b *mfolder) int {
		if c := strings.Compare(strings.ToLower(a.name), strings.ToLower(b.name)); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	return out
}

// allListable is what operation 3 must answer: depth first, by name.
func (m *model) allListable(email string) []string {
	var out []string
	var walk func(id string)
	walk = func(id string) {
		if _, ok := m.reach(id, email); ok {
			out = append(out, id)
		}
		for _, c := range m.children(id) {
			walk(c.id)
		}
	}
	walk(m.root)
	return out
}

// nested is what operation 2 must answer for a parent: listable children,
// each with its listable descendants reachable through listable folders.
func (m *model) nested(parent, email string) []tree {
	var out []tree
	for _, c := range m.children(parent) {
		if _, ok := m.reach(c.id, email); ok {
			out = append(out, tree{ID: c.id, Subfolders: m.nested(c.id, email)})
		}
	}
	return out
}

type tree struct {
	ID         string `json:"fileId"`
	Subfolders []tree `json:"subfolders"`
}

// buildE2EWorld: an Engineering tree, shared in varied ways.
func buildE2EWorld(fake *googlefake.Server) *model {
	for _, u := range []string{e2eStorage, "alice@example.com", "bob@example.com", "carol@example.com", "pat@partner.org"} {
		fake.AddUser(u)
	}
	m := newModel(fake, "Engineering")
	m.share(m.root, googlefake.Permission{Type: "user", Role: "writer", EmailAddress: "alice@example.com"})
	handbook := m.add(m.root, "Handbook")
	m.share(handbook, googlefake.Permission{Type: "domain", Role: "reader", Domain: "example.com", AllowFileDiscovery: true})
	for i := range 5 {
		m.add(m.add(handbook, fmt.Sprintf("Chapter %d", i)), "Figures")
	}
	projects := m.add(m.root, "projects")
	for i := range 12 {
		p := m.add(projects, fmt.Sprintf("Project %02d", i))
		switch i % 4 {
		case 0:
			m.share(p, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: "bob@example.com"})
		case 1:
			m.share(p, googlefake.Permission{Type: "anyone", Role: "reader"})
		case 2:
			m.share(p, googlefake.Permission{Type: "user", Role: "commenter", EmailAddress: "pat@partner.org"})
		}
		for j := range 3 {
			sub := m.add(p, fmt.Sprintf("part %c", 'a'+j))
			if j == 2 && i%3 == 0 {
				m.share(sub, googlefake.Permission{Type: "user", Role: "writer", EmailAddress: "carol@example.com"})
			}
		}
	}
	m.add(m.root, "Secret")
	return m
}

// testConfig is the configuration of a daemon against fake in a new
// directory (fmtest.Config), with the index on backend: fmtest.Bolt, the
// file in the directory, or fmtest.Postgres, a database of its own.
func testConfig(t *testing.T, fake *googlefake.Server, backend string) *config.Config {
	t.Helper()
	c := fmtest.Config(t, fake, t.TempDir())
	if backend == fmtest.Postgres {
		c.Index = config.Index{URL: pgtest.NewDatabase(t), LeaseTTL: 3 * time.Second}
	}
	return c
}

// e2eConfig is the configuration of the e2e world m: its users and its
// library eng.
func e2eConfig(t *testing.T, fake *googlefake.Server, m *model, backend string) *config.Config {
	t.Helper()
	c := testConfig(t, fake, backend)
	c.Domains = []config.Domain{{Name: "example.com", Users: []string{"alice@example.com", "bob@example.com", "carol@example.com"}}}
	c.Libraries = []config.Library{{ID: "eng", Name: "Engineering", Domain: "example.com", StorageAccount: e2eStorage, RootFolderID: m.root}}
	return c
}

// writeE2EConfig writes e2eConfig and returns its path.
func writeE2EConfig(t *testing.T, fake *googlefake.Server, m *model, backend string) string {
	t.Helper()
	return fmtest.WriteConfig(t, e2eConfig(t, fake, m, backend))
}

// TestEndToEnd: a fake Drive tree with varied sharing → foldermirror sync →
// foldermirror serve → the API as several users, each answer checked
// against the model; on every index backend.
func TestEndToEnd(t *testing.T) {
	t.Parallel()
	for _, backend := range fmtest.Backends(t) {
		t.Run(backend, func(t *testing.T) { testEndToEnd(t, backend) })
	}
}

func testEndToEnd(t *testing.T, backend string) {
	fake := fmtest.StartGoogle(t) // closed after the daemon
	m := buildE2EWorld(fake)
	path := writeE2EConfig(t, fake, m, backend)

	if r := runBinary(t, "config", "check", "--config", path); r.code != 0 {
		t.Fatalf("config check: %d %s", r.code, r.stderr)
	}
	r := runBinary(t, "sync", "--config", path)
	if r.code != 0 {
		t.Fatalf("sync: %d %s", r.code, r.stderr)
	}
	if want := fmt.Sprintf("eng: full sync (first sync): %d folders", len(m.folders)); !strings.Contains(r.stdout, want) {
		t.Errorf("sync said %q, want %q", r.stdout, want)
	}
	if !strings.Contains(r.stderr, "eng: listing") {
		t.Errorf("sync showed no progress lines: %q", r.stderr)
	}

	base := startServe(t, path).api

	for _, user := range []string{"alice@example.com", "bob@example.com", "carol@example.com", "pat@partner.org"} {
		t.Run(user, func(t *testing.T) {
			token := fake.GoogleIDToken(e2eClient, user)
			var all struct{ Items []tree }
			getJSON(t, base+"/folder/v1/libraries/eng/folders", token, 200, &all)
			var got []string
			for _, it := range all.Items {
				got = append(got, it.ID)
			}
			if want := m.allListable(user); !slices.Equal(got, want) {
				t.Errorf("operation 3: %d folders %v\nwant %d %v", len(got), got, len(want), want)
			}
			var children struct{ Items []tree }
			getJSON(t, base+"/folder/v1/libraries/eng/folders/children", token, 200, &children)
			if want := m.nested(m.root, user); !equalTrees(children.Items, want) {
				t.Errorf("operation 2:\n got %v\nwant %v", children.Items, want)
			}
			for id := range m.folders {
				reached, _ := m.reach(id, user)
				status := map[bool]int{true: 200, false: 404}[reached]
				getJSON(t, base+"/folder/v1/files/"+id, token, status, nil)
				getJSON(t, base+"/folder/v1/folders/"+id+"/permissions", token, status, nil)
			}
		})
	}
	getJSON(t, base+"/folder/v1/libraries/eng/folders", "", 401, nil)
	getJSON(t, base+"/folder/v1/libraries/eng/folders", "garbage", 401, nil)
	getJSON(t, base+"/folder/v1/libraries/nope/folders", fake.GoogleIDToken(e2eClient, "alice@example.com"), 404, nil)
}

func equalTrees(a, b []tree) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ID != b[i].ID || !equalTrees(a[i].Subfolders, b[i].Subfolders) {
			return false
		}
	}
	return true
}

// While a daemon runs, `foldermirror sync` asks it (the daemon holds the
// index) and shows the daemon's progress; a failure is a non-zero exit.
func TestSyncThroughTheDaemon(t *testing.T) {
	t.Parallel()
	fake := fmtest.StartGoogle(t) // closed after the daemon
	m := buildE2EWorld(fake)
	c := e2eConfig(t, fake, m, fmtest.Bolt)
	adminAddr := freePort(t)
	c.AdminListen = adminAddr
	path := fmtest.WriteConfig(t, c)

	startServe(t, path)

	r := runBinary(t, "sync", "--config", path, "--full")
	if r.code != 0 {
		t.Fatalf("sync: %d\n%s", r.code, r.stderr)
	}
	// The daemon's first sync may still run: --full joins it.
	if !strings.Contains(r.stderr, "asking it") || !regexp.MustCompile(`eng: full sync \((asked|first sync)\): `).MatchString(r.stdout) {
		t.Errorf("sync through the daemon said:\n%s\n%s", r.stdout, r.stderr)
	}
	if r := runBinary(t, "sync", "--config", path); r.code != 0 ||
		!strings.Contains(r.stdout, "eng: incremental sync: 0 changes") {
		t.Errorf("incremental sync through the daemon: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// A failing sync exits non-zero with the reason, said once, and a short
	// last line.
	fake.Delete(m.root)
	r = runBinary(t, "sync", "--config", path, "--full")
	said := strings.Split(strings.TrimSpace(r.stderr), "\n")
	reason, _ := strings.CutPrefix(said[len(said)-2], "eng: failed: ")
	if r.code != 1 || reason == said[len(said)-2] || strings.Count(r.stderr, reason) != 1 ||
		said[len(said)-1] != "foldermirror: 1 of 1 sync failed (eng); the reasons are above" {
		t.Errorf("failing sync: exit %d, said\n%s", r.code, r.stderr)
	}
	resp, err := http.Get("http://" + adminAddr + "/status")
	if err != nil {
		t.Fatal(err)
	}
	var status struct {
		Libraries []struct {
			Name      string
			LastError string
			Synced    bool
			Folders   int
		}
	}
	json.NewDecoder(resp.Body).Decode(&status)
	resp.Body.Close()
	if len(status.Libraries) != 1 || status.Libraries[0].LastError == "" || !status.Libraries[0].Synced || status.Libraries[0].Folders != len(m.folders) {
		t.Errorf("status after the failure: %+v (the last good tree must still be there)", status)
	}
}
