package tests

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/googlefake"
	drive "google.golang.org/api/drive/v3"
)

var propertySeeds = flag.Int("property-seeds", defaultPropertySeeds, "random worlds the access-control property test checks (1, or 3 with -tags long, unless set)")

// The access-control property: in random worlds (trees, users, nested
// groups, grants of every kind), synced and served, every answer of the API
// to every user equals what an oracle written here, from the world's
// description alone, says that user may see and do; and no answer names a
// folder outside what the user may see.
// Every seed runs on bbolt; the first also on PostgreSQL, when a server is
// given: for every user with -tags long, for one of each kind every day
// (oneOfEachKind). The worlds, and the users of each, are checked at once:
// the answers come from the daemons.
func TestAccessControlProperty(t *testing.T) {
	t.Parallel()
	for _, backend := range fmtest.Backends(t) {
		for seed := range *propertySeeds {
			if backend != fmtest.Bolt && seed > 0 {
				break
			}
			t.Run(fmt.Sprintf("%s seed %d", backend, seed), func(t *testing.T) {
				t.Parallel()
				w := newPropertyWorld(t, uint64(seed))
				base := w.serve(t, backend)
				users := w.users
				if backend != fmtest.Bolt && !propertyEveryUserOnPostgres {
					users = w.oneOfEachKind()
				}
				for _, user := range users {
					t.Run(user, func(t *testing.T) {
						t.Parallel()
						w.checkUser(t, base, user)
					})
				}
			})
		}
	}
}

const (
	pDomain  = "example.com"
	pStorage = "storage@example.com"
	pAdmin   = "admin@example.com"
	pClient  = "property.apps.googleusercontent.com"
)

var myDriveRoles = []string{"reader", "commenter", "writer"}
var sharedRoles = []string{"reader", "commenter", "writer", "fileOrganizer", "organizer"}

// pgrant is a permission set directly on a folder (or a drive membership).
type pgrant struct {
	kind, who, role string
	discoverable    bool
}

func (g pgrant) principal() string {
	switch g.kind {
	case "anyone":
		return "anyone"
	case "domain":
		return "domain:" + g.who
	}
	return g.kind + ":" + g.who
}

type pfolder struct {
	id, name, parent string
	grants           []pgrant
	restricted       bool // copyRequiresWriterPermission on this folder
	writersCannot    bool // writersCanShare false (My Drive)
}

type plib struct {
	id, root         string
	shared           bool
	organizerToShare bool // sharingFoldersRequiresOrganizerPermission
	members          []pgrant
	folders          map[string]*pfolder
}

type propertyWorld struct {
	rng       *rand.Rand
	fake      *googlefake.Server
	users     []string
	suspended string
	// consumers sign in with a consumer Google account at their address
	// (no hd), with the kind of token named ("id" or "access"); the others
	// with their Workspace account's ID token.
	consumers map[string]string
	groups    map[string][]string // group → direct members
	libs      []*plib
}

func newPropertyWorld(t *testing.T, seed uint64) *propertyWorld {
	fake := fmtest.StartGoogle(t)
	w := &propertyWorld{rng: rand.New(rand.NewPCG(seed, 99)), fake: fake, groups: map[string][]string{}}
	for _, u := range []string{pStorage, pAdmin} {
		fake.AddUser(u)
	}
	fake.MakeAdmin(pAdmin)
	for i := range 6 {
		w.users = append(w.users, fmt.Sprintf("u%d@%s", i, pDomain))
	}
	w.users = append(w.users, "x0@partner.org", "x1@other.net", "x2@partner.org", "x3@partner.org")
	w.consumers = map[string]string{"x2@partner.org": "id", "x3@partner.org": "access"}
	for _, u := range w.users {
		fake.AddUser(u)
	}
	w.suspended = w.users[5]
	fake.SuspendUser(w.suspended, true)
	w.makeGroups()
	w.libs = []*plib{w.makeLibrary("lib-mydrive", false), w.makeLibrary("lib-shared", true)}
	return w
}

// oneOfEachKind returns the first user of each kind: of the domain, the
// suspended one, of another organisation, and each kind of consumer
// account.
func (w *propertyWorld) oneOfEachKind() []string {
	seen := map[string]bool{}
	var out []string
	for _, u := range w.users {
		kind := "consumer, " + w.consumers[u] + " token"
		switch {
		case u == w.suspended:
			kind = "suspended"
		case w.consumers[u] != "":
		case strings.HasSuffix(u, "@"+pDomain):
			kind = "of the domain"
		default:
			kind = "of another organisation"
		}
		if !seen[kind] {
			seen[kind] = true
			out = append(out, u)
		}
	}
	return out
}

// makeGroups makes four groups with random members: users of any domain,
// and other groups (cycles allowed).
func (w *propertyWorld) makeGroups() {
	names := []string{"g0@" + pDomain, "g1@" + pDomain, "g2@" + pDomain, "g3@" + pDomain}
	for _, g := range names {
		var members []string
		for _, u := range w.users {
			if w.rng.IntN(4) == 0 {
				members = append(members, u)
			}
		}
		for _, other := range names {
			if other != g && w.rng.IntN(5) == 0 {
				members = append(members, other)
			}
		}
		w.groups[g] = members
	}
	for _, g := range names {
		w.fake.AddGroup(g)
	}
	for _, g := range names {
		for _, m := range w.groups[g] {
			w.fake.AddGroupMember(g, m)
		}
	}
}

func (w *propertyWorld) randomGrant(roles []string) pgrant {
	g := pgrant{role: roles[w.rng.IntN(len(roles))], discoverable: w.rng.IntN(2) == 0}
	switch w.rng.IntN(6) {
	case 0, 1:
		g.kind, g.who = "user", w.users[w.rng.IntN(len(w.users))]
	case 2, 3:
		g.kind, g.who = "group", fmt.Sprintf("g%d@%s", w.rng.IntN(4), pDomain)
	case 4:
		g.kind, g.who = "domain", []string{pDomain, "partner.org"}[w.rng.IntN(2)]
	default:
		g.kind = "anyone"
	}
	return g
}

func (w *propertyWorld) share(id string, g pgrant) {
	p := googlefake.Permission{Type: g.kind, Role: g.role, AllowFileDiscovery: g.discoverable}
	if g.kind == "domain" {
		p.Domain = g.who
	} else {
		p.EmailAddress = g.who
	}
	w.fake.Share(id, p)
}

var pNames = []string{"alpha", "Alpha", "beta", "Gamma", "delta", "Ärger", "zeta", "Eta", "alpha beta"}

func (w *propertyWorld) makeLibrary(id string, shared bool) *plib {
	l := &plib{id: id, shared: shared, folders: map[string]*pfolder{}}
	roles := myDriveRoles
	if shared {
		roles = sharedRoles
		l.root = w.fake.CreateSharedDrive("Drive "+id, pStorage)
		l.organizerToShare = w.rng.IntN(2) == 0
		w.fake.ModifyDrive(l.root, func(d *drive.Drive) {
			d.Restrictions = &drive.DriveRestrictions{SharingFoldersRequiresOrganizerPermission: l.organizerToShare}
		})
		for range 1 + w.rng.IntN(3) {
			m := w.randomGrant(roles)
			if m.kind == "anyone" || m.kind == "domain" {
				continue // drive members are users and groups
			}
			l.members = append(l.members, m)
			w.share(l.root, m)
		}
	} else {
		l.root = w.fake.CreateFolder(pStorage, "", "Root of "+id)
	}
	l.folders[l.root] = &pfolder{id: l.root, name: "root"}
	ids := []string{l.root}
	for range 40 + w.rng.IntN(30) {
		parent := ids[w.rng.IntN(len(ids))]
		f := &pfolder{name: pNames[w.rng.IntN(len(pNames))], parent: parent}
		f.id = w.fake.CreateFolder(pStorage, parent, f.name)
		if w.rng.IntN(8) == 0 {
			f.restricted = true
			w.fake.Modify(f.id, func(x *googlefake.File) { x.CopyRequiresWriterPermission = true })
		}
		if !shared && w.rng.IntN(6) == 0 {
			f.writersCannot = true
			w.fake.Modify(f.id, func(x *googlefake.File) { x.WritersCanShare = false })
		}
		for range w.rng.IntN(3) {
			g := w.randomGrant(roles)
			if shared && g.kind == "anyone" && w.rng.IntN(2) == 0 {
				g.kind, g.who = "user", w.users[0]
			}
			f.grants = append(f.grants, g)
			w.share(f.id, g)
		}
		l.folders[f.id] = f
		ids = append(ids, f.id)
	}
	return l
}

// serve writes a configuration, syncs everything with the binary's sync
// command and serves it with its serve command; it returns the API's base
// URL.
func (w *propertyWorld) serve(t *testing.T, backend string) string {
	c := testConfig(t, w.fake, backend)
	c.Auth.Google.ClientIDs = []string{pClient}
	c.Domains = []config.Domain{{Name: pDomain, AdminEmail: pAdmin}}
	for _, l := range w.libs {
		lib := config.Library{ID: l.id, Domain: pDomain, StorageAccount: pStorage, RootFolderID: l.root}
		if l.shared {
			lib.RootFolderID, lib.SharedDriveID = "", l.root
		}
		c.Libraries = append(c.Libraries, lib)
	}
	path := fmtest.WriteConfig(t, c)
	if r := runBinary(t, "sync", "--config", path); r.code != 0 {
		t.Fatalf("sync exited %d\n%s", r.code, r.stderr)
	}
	return startServe(t, path).api
}

// The oracle.

var roleRank = map[string]int{"reader": 1, "commenter": 2, "writer": 3, "fileOrganizer": 4, "organizer": 5, "owner": 6}

// principalsOf: the user, its groups (through nested groups), its
// organisation's domain, anyone. A Workspace account's organisation is its
// address's domain (a known user of the configured domain, or the hd of its
// token at another); a consumer account at an address has none (DESIGN §4).
func (w *propertyWorld) principalsOf(user string) map[string]bool {
	ps := map[string]bool{"user:" + user: true, "anyone": true}
	if w.consumers[user] == "" {
		ps["domain:"+strings.SplitN(user, "@", 2)[1]] = true
	}
	for changed := true; changed; {
		changed = false
		for g, members := range w.groups {
			if ps["group:"+g] {
				continue
			}
			for _, m := range members {
				if ps["user:"+m] || ps["group:"+m] {
					ps["group:"+g], changed = true, true
					break
				}
			}
		}
	}
	return ps
}

// merged is Drive's view of one principal on a folder: the highest role
// granted on the folder or an ancestor, discoverable if any grant is.
type merged struct {
	rank         int
	discoverable bool
}

func (l *plib) effective(id string) map[string]merged {
	eff := map[string]merged{}
	add := func(g pgrant) {
		m := eff[g.principal()]
		m.rank = max(m.rank, roleRank[g.role])
		m.discoverable = m.discoverable || g.kind == "user" || g.kind == "group" || g.discoverable
		eff[g.principal()] = m
	}
	eff["user:"+pStorage] = merged{rank: roleRank["owner"], discoverable: true}
	if l.shared {
		eff["user:"+pStorage] = merged{rank: roleRank["organizer"], discoverable: true}
	}
	for _, g := range l.members {
		add(g)
	}
	for f := l.folders[id]; f != nil; f = l.folders[f.parent] {
		for _, g := range f.grants {
			add(g)
		}
	}
	return eff
}

// access returns the user's role rank on a folder and whether it may list it.
func (l *plib) access(id string, ps map[string]bool) (rank int, listable bool) {
	for p, m := range l.effective(id) {
		if ps[p] {
			rank = max(rank, m.rank)
			listable = listable || m.discoverable
		}
	}
	return rank, listable
}

func (l *plib) restricted(id string) bool {
	for f := l.folders[id]; f != nil; f = l.folders[f.parent] {
		if f.restricted {
			return true
		}
	}
	return false
}

// operations is the permittedOperations table, written again.
func (l *plib) operations(id string, rank int) []string {
	ops := []string{"VIEW_ACL", "OPEN_IN_DRIVE"}
	if rank >= roleRank["writer"] || !l.restricted(id) {
		ops = append(ops, "DOWNLOAD")
	}
	if rank < roleRank["writer"] {
		return ops
	}
	if id != l.root {
		ops = append(ops, "RENAME", "MOVE_TO_ANOTHER_FOLDER", "DELETE")
	}
	ops = append(ops, "CREATE_SUBFOLDER", "CREATE_DOCUMENT_IN_THIS_FOLDER")
	writerMayShare := !l.folders[id].writersCannot && !l.organizerToShare
	if rank >= roleRank["fileOrganizer"] || writerMayShare {
		ops = append(ops, "MODIFY_ACL")
	}
	return ops
}

func (l *plib) children(id string) []*pfolder {
	var out []*pfolder
	for _, f := range l.folders {
		if f.parent == id && f.id != l.root {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b *pfolder) int {
		if c := strings.Compare(strings.ToLower(a.name), strings.ToLower(b.name)); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	return out
}

// item is a folder of an answer, as far as the oracle predicts it.
type item struct {
	ID         string   `json:"fileId"`
	Ops        []string `json:"permittedOperations"`
	Subfolders []item   `json:"subfolders"`
}

func (l *plib) listing(parent string, ps map[string]bool, nested bool) []item {
	out := []item{}
	for _, c := range l.children(parent) {
		rank, listable := l.access(c.id, ps)
		if !listable {
			continue
		}
		it := item{ID: c.id, Ops: l.operations(c.id, rank), Subfolders: []item{}}
		if nested {
			it.Subfolders = l.listing(c.id, ps, true)
		}
		out = append(out, it)
	}
	return out
}

func (l *plib) all(ps map[string]bool) []item {
	out := []item{}
	var walk func(id string)
	walk = func(id string) {
		if rank, listable := l.access(id, ps); listable {
			out = append(out, item{ID: id, Ops: l.operations(id, rank), Subfolders: []item{}})
		}
		for _, c := range l.children(id) {
			walk(c.id)
		}
	}
	walk(l.root)
	return out
}

func (l *plib) visibleLibrary(user string, ps map[string]bool) bool {
	if strings.HasSuffix(user, "@"+pDomain) {
		return true
	}
	for id := range l.folders {
		if rank, _ := l.access(id, ps); rank > 0 {
			return true
		}
	}
	return false
}

// checkUser asks the API everything as user and compares with the oracle.
func (w *propertyWorld) checkUser(t *testing.T, base, user string) {
	c := &apiClient{t: t, base: base, token: w.token(user), user: user}
	if user == w.suspended {
		c.expect("/folder/v1/libraries/"+w.libs[0].id+"/folders", http.StatusUnauthorized, nil)
		return
	}
	ps := w.principalsOf(user)
	for _, l := range w.libs {
		seen := map[string]bool{} // folders the user may see at all
		for id := range l.folders {
			if rank, _ := l.access(id, ps); rank > 0 {
				seen[id] = true
			}
		}
		c.seen = seen
		if !l.visibleLibrary(user, ps) {
			c.expect("/folder/v1/libraries/"+l.id+"/folders", http.StatusNotFound, nil)
			c.expect("/folder/v1/libraries/"+l.id+"/folders/children", http.StatusNotFound, nil)
			c.expect("/folder/v1/files/"+l.root+"/children", http.StatusNotFound, nil)
			continue
		}
		c.expectItems("/folder/v1/libraries/"+l.id+"/folders", l.all(ps))
		// Operation 6 on the root answers what operation 2 without a parent
		// does, whether or not the caller may see the root itself.
		for _, path := range []string{"/folder/v1/libraries/" + l.id + "/folders/children", "/folder/v1/files/" + l.root + "/children"} {
			c.expectItems(path, l.listing(l.root, ps, true))
			c.expectItems(path+"?onlyDirectChildren=true", l.listing(l.root, ps, false))
		}
		for id := range l.folders {
			rank, _ := l.access(id, ps)
			if rank == 0 {
				c.expect("/folder/v1/files/"+id, http.StatusNotFound, nil)
				if id != l.root {
					c.expect("/folder/v1/files/"+id+"/children", http.StatusNotFound, nil)
				}
				c.expect("/folder/v1/folders/"+id+"/permissions", http.StatusNotFound, nil)
				c.expect("/folder/v1/libraries/"+l.id+"/folders/children?folderServiceId="+id, http.StatusNotFound, nil)
				continue
			}
			var one item
			c.expect("/folder/v1/files/"+id, http.StatusOK, &one)
			if one.ID != id || !slices.Equal(one.Ops, l.operations(id, rank)) {
				t.Errorf("%s: folder %s: ops %v, want %v", user, id, one.Ops, l.operations(id, rank))
			}
			c.expectItems("/folder/v1/files/"+id+"/children", l.listing(id, ps, true))
			c.expectItems("/folder/v1/libraries/"+l.id+"/folders/children?folderServiceId="+id+"&onlyDirectChildren=true", l.listing(id, ps, false))
			c.expect("/folder/v1/folders/"+id+"/permissions", http.StatusOK, nil)
		}
	}
}

// token returns a token user signs in with.
func (w *propertyWorld) token(user string) string {
	switch w.consumers[user] {
	case "id":
		return w.fake.ConsumerIDToken(pClient, user)
	case "access":
		return w.fake.ConsumerAccessToken(pClient, user, time.Hour, "email")
	}
	return w.fake.GoogleIDToken(pClient, user)
}

type apiClient struct {
	t                 *testing.T
	base, token, user string
	seen              map[string]bool
}

func (c *apiClient) expect(path string, status int, into any) {
	c.t.Helper()
	body := getJSON(c.t, c.base+path, c.token, status, into)
	c.checkNames(path, body)
}

// checkNames: no answer names a folder the user may not see.
func (c *apiClient) checkNames(path string, body []byte) {
	var v any
	json.Unmarshal(body, &v)
	for _, id := range fmtest.FileIDs(v) {
		if !c.seen[id] {
			c.t.Errorf("%s: GET %s names folder %s, which it may not see", c.user, path, id)
		}
	}
}

func (c *apiClient) expectItems(path string, want []item) {
	c.t.Helper()
	var got struct{ Items []item }
	c.expect(path, http.StatusOK, &got)
	if !equalItems(got.Items, want) {
		g, _ := json.Marshal(got.Items)
		wj, _ := json.Marshal(want)
		c.t.Errorf("%s: GET %s:\n got %s\nwant %s", c.user, path, g, wj)
	}
}

func equalItems(a, b []item) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ID != b[i].ID || !slices.Equal(a[i].Ops, b[i].Ops) || !equalItems(a[i].Subfolders, b[i].Subfolders) {
			return false
		}
	}
	return true
}
