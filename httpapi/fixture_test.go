package httpapi_test

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/httpapi"
	"github.com/foldermirror/foldermirror/httpapi/auth"
	"github.com/foldermirror/foldermirror/index/indextest"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/googlefake"
	"github.com/prometheus/client_golang/prometheus"
)

var update = flag.Bool("update", false, "rewrite golden files")

const clientID = fmtest.ClientID

// Security codes of the fixture's domains.
const (
	exampleAdminCode = "example-admin-code"
	bobCode          = "bob-code"
	otherAdminCode   = "other-admin-code"
)

// defaultRate and defaultBurst are a configuration's default budget of
// each caller (limits), the budget of the tests' servers.
const (
	defaultRate  = 1000
	defaultBurst = 2000
)

// fixture is an API server over a hand-built index, with a Google fake
// issuing the callers' ID tokens.
type fixture struct {
	t    testing.TB
	fake *googlefake.Server
	db   indextest.Index
	// set is the set of libraries served: fixtureLibraries and those of
	// fixtureOptions.
	set     *fm.LibrarySet
	metrics *httpapi.Metrics
	api     *httpapi.Server
	handler http.Handler
	// url is the API served by httpapi's own http.Server, limits and all.
	url    string
	client *http.Client
}

// fixtureOptions change a fixture.
type fixtureOptions struct {
	// configure, if not nil, changes the API's options before the server
	// is made.
	configure         func(o *httpapi.Options)
	readHeaderTimeout time.Duration
	// dir is the directory of the index (a new one by default): another
	// fixture's, to restart it.
	dir string
	// allowlisted replaces example.com's allowlistedDomains.
	allowlisted string
	// libraries are configured besides fixtureLibraries.
	libraries []fm.Library
	// backend keeps the index: fmtest.Bolt (by default) or
	// fmtest.Postgres.
	backend string
	// logger is the server's; one that discards by default.
	logger *slog.Logger
	// configureAuth, if not nil, changes the Authenticator's options
	// before it is made; fake is the fixture's Google fake.
	configureAuth func(o *auth.Options, fake *googlefake.Server)
}

// fixtureAuth is the Authenticator of a fixture: it takes fake's tokens,
// and knows two domains with users and security codes.
func fixtureAuth(fake *googlefake.Server) auth.Options {
	o := fmtest.AuthOptions(fake)
	o.Domains = []auth.Domain{{
		Name:  "example.com",
		Users: []string{"alice@example.com", "bob@example.com", "carol@example.com", "storage@example.com"},
		SecurityCodes: []auth.SecurityCode{
			{SHA256: sha256.Sum256([]byte(exampleAdminCode)), ActAsAdmin: true},
			{SHA256: sha256.Sum256([]byte(bobCode)), ActAsUser: "bob@example.com"},
		},
	}, {
		Name:          "other.org",
		Users:         []string{"olga@other.org"},
		SecurityCodes: []auth.SecurityCode{{SHA256: sha256.Sum256([]byte(otherAdminCode)), ActAsAdmin: true}},
	}}
	return o
}

// fixtureLibraries are the libraries a fixture configures: three of
// example.com, one of them never synced.
func fixtureLibraries() []fm.Library {
	const storage = "storage@example.com"
	return []fm.Library{
		{ID: "lib-eng", Name: "Engineering", Domain: "example.com", StorageAccount: storage, RootFolderID: "root", FolderDefinitionID: "standard"},
		{ID: "lib-drive", Name: "Team", Domain: "example.com", StorageAccount: storage, SharedDriveID: "drive1"},
		{ID: "lib-never", Name: "Never synced", Domain: "example.com", StorageAccount: storage, RootFolderID: "nope"},
	}
}

// fixtureAPI is what the API of a fixture serves, but for its libraries:
// the two domains' flags: the defaults theme light and beta false, under
// each domain's own (beta true for example.com, theme dark for other.org).
func fixtureAPI() httpapi.Options {
	return httpapi.Options{
		Domains: []httpapi.Domain{
			{Name: "example.com", AllowlistedDomains: []string{"partner.org"}, Flags: map[string]string{"theme": "light", "beta": "true"}},
			{Name: "other.org", Flags: map[string]string{"theme": "dark", "beta": "false"}},
		},
		CallerRequestsPerSecond: defaultRate,
		CallerBurst:             defaultBurst,
	}
}

func newFixture(t testing.TB) *fixture { return newFixtureWith(t, fixtureOptions{}) }

func newFixtureWith(t testing.TB, opts fixtureOptions) *fixture {
	t.Helper()
	fake := fmtest.StartGoogle(t)
	dir := cmp.Or(opts.dir, t.TempDir())
	authOpts, apiOpts := fixtureAuth(fake), fixtureAPI()
	apiOpts.Libraries = fm.NewLibrarySet(append(fixtureLibraries(), opts.libraries...))
	if opts.allowlisted != "" {
		apiOpts.Domains[0].AllowlistedDomains = []string{opts.allowlisted}
	}
	if opts.configure != nil {
		opts.configure(&apiOpts)
	}
	logger := cmp.Or(opts.logger, slog.New(slog.NewTextHandler(io.Discard, nil)))
	db := fmtest.OpenIndex(t, cmp.Or(opts.backend, fmtest.Bolt), filepath.Join(dir, "data"))
	writeTree(t, db, "lib-eng", fm.LibraryState{RootID: "root", LastFullSync: syncedAt}, engineeringTree())
	writeTree(t, db, "lib-drive", fm.LibraryState{RootID: "drive1", DriveID: "drive1", SharingRequiresOrganizer: true}, driveTree())

	// example.com's directory, as a directory sync reads it: its users,
	// with the fake's IDs.
	users := map[string]fm.DirectoryUser{}
	for _, u := range authOpts.Domains[0].Users {
		users[u] = fm.DirectoryUser{ID: googlefake.UserID(u)}
	}
	if err := db.ReplaceDirectory(context.Background(), &fm.DirectorySnapshot{Domain: "example.com", Users: users}, fm.Fence{}); err != nil {
		t.Fatal(err)
	}
	authOpts.Directory = db
	if opts.configureAuth != nil {
		opts.configureAuth(&authOpts, fake)
	}
	authn := auth.New(authOpts)
	t.Cleanup(authn.Close)
	apiOpts.Logger, apiOpts.Metrics = logger, httpapi.NewMetrics(prometheus.NewRegistry())
	apiOpts.ReadHeaderTimeout = opts.readHeaderTimeout
	api := httpapi.New(db, authn, apiOpts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go api.Serve(ln)
	t.Cleanup(func() { api.Shutdown(context.Background()) })
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(client.CloseIdleConnections)
	return &fixture{t: t, fake: fake, db: db, set: apiOpts.Libraries, metrics: apiOpts.Metrics, api: api, handler: api.Handler(), url: "http://" + ln.Addr().String(), client: client}
}

func writeTree(t testing.TB, db fm.IndexWriter, lib string, state fm.LibraryState, folders []fm.SyncedFolder) {
	t.Helper()
	indextest.FullSync(t, db, lib, state, 5000, folders...)
}

// syncedAt is when the fixture's Engineering library was synced.
var syncedAt = time.Date(2026, time.November, 20, 9, 30, 0, 0, time.UTC)

// Permissions as Drive lists them.
var (
	pStorage = fm.Permission{ID: "p-storage", Type: "user", Role: "owner", EmailAddress: "storage@example.com", DisplayName: "Storage"}
	pAlice   = fm.Permission{ID: "p-alice", Type: "user", Role: "writer", EmailAddress: "alice@example.com", DisplayName: "Alice", PhotoLink: "https://photos.example/alice"}
	pDomain  = fm.Permission{ID: "p-domain", Type: "domain", Role: "reader", Domain: "example.com", DisplayName: "Example", AllowFileDiscovery: true}
	pBob     = fm.Permission{ID: "p-bob", Type: "user", Role: "reader", EmailAddress: "bob@example.com", DisplayName: "Bob"}
	pBobW    = fm.Permission{ID: "p-bob", Type: "user", Role: "writer", EmailAddress: "bob@example.com", DisplayName: "Bob"}
	pAnyLink = fm.Permission{ID: "anyoneWithLink", Type: "anyone", Role: "reader"}
	pPat     = fm.Permission{ID: "p-pat", Type: "user", Role: "commenter", EmailAddress: "pat@partner.org", DisplayName: "Pat"}
	pGroup   = fm.Permission{ID: "p-group", Type: "group", Role: "fileOrganizer", EmailAddress: "ops@vendor.net", DisplayName: "Vendor ops"}
	pGone    = fm.Permission{ID: "p-gone", Type: "user", Role: "reader", DisplayName: "No address"}
)

func sf(id, parent, name string, perms ...fm.Permission) fm.SyncedFolder {
	return fm.SyncedFolder{Folder: fm.Folder{ID: id, ParentID: parent, Name: name, WritersCanShare: true}, Permissions: perms}
}

// engineeringTree is a My Drive library. Drive lists inherited permissions
// on every folder, so each folder carries its ancestors' too.
//
//	root Engineering        storage owner, alice writer
//	├── handbook Handbook   + example.com reader (discoverable)
//	│   └── policies
//	├── projects Projects
//	│   ├── apollo          + bob reader; resourceKey, definition "project"
//	│   │   └── designs
//	│   ├── locked Locked   + bob writer; writers may not share
//	│   ├── partner         + pat@partner.org commenter, vendor group, an address-less grant
//	│   └── zeus Zeus       + anyone with the link; restricts downloads
//	│       └── zeus-sub
//	└── secret Secret
func engineeringTree() []fm.SyncedFolder {
	base := []fm.Permission{pStorage, pAlice}
	with := func(extra ...fm.Permission) []fm.Permission {
		return append(append([]fm.Permission{}, base...), extra...)
	}
	apollo := sf("apollo", "projects", "apollo", with(pBob)...)
	apollo.ResourceKey = "rk-apollo"
	apollo.DefinitionID = "project"
	locked := sf("locked", "projects", "Locked", with(pBobW)...)
	locked.WritersCanShare = false
	zeus := sf("zeus", "projects", "Zeus", with(pAnyLink)...)
	zeus.OwnRestrictedDownload, zeus.RestrictedDownload = true, true
	zeusSub := sf("zeus-sub", "zeus", "sub", with(pAnyLink)...)
	zeusSub.RestrictedDownload = true
	return []fm.SyncedFolder{
		sf("root", "", "Engineering", base...),
		sf("handbook", "root", "Handbook", with(pDomain)...),
		sf("policies", "handbook", "policies", with(pDomain)...),
		sf("projects", "root", "Projects", base...),
		apollo,
		sf("designs", "apollo", "Designs", with(pBob)...),
		locked,
		sf("partner", "projects", "Partner area", with(pPat, pGroup, pGone)...),
		zeus, zeusSub,
		sf("secret", "root", "Secret", base...),
	}
}

// driveTree is a shared drive whose folders need an organizer to share.
func driveTree() []fm.SyncedFolder {
	members := []fm.Permission{
		{ID: "m-bob", Type: "user", Role: "organizer", EmailAddress: "bob@example.com"},
		{ID: "m-carol", Type: "user", Role: "writer", EmailAddress: "carol@example.com"},
	}
	return []fm.SyncedFolder{sf("drive1", "", "Team", members...), sf("plans", "drive1", "Plans", members...)}
}

func (f *fixture) token(email string, opts ...googlefake.TokenOption) string {
	return f.fake.GoogleIDToken(clientID, email, opts...)
}

// get sends an authenticated GET ("" token: none) and returns the response
// with its body read.
func (f *fixture) get(path, token string) (*http.Response, []byte) {
	f.t.Helper()
	if token == "" {
		return f.getWith(path, "")
	}
	return f.getWith(path, "Bearer "+token)
}

// getWith sends a GET with that Authorization header ("": none).
func (f *fixture) getWith(path, authorization string) (*http.Response, []byte) {
	f.t.Helper()
	return f.getWithHeaders(path, map[string]string{"Authorization": authorization})
}

// getWithHeaders sends a GET with those headers (those set to "" left out).
func (f *fixture) getWithHeaders(path string, headers map[string]string) (*http.Response, []byte) {
	f.t.Helper()
	req, err := http.NewRequest(http.MethodGet, f.url+path, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	for k, v := range headers {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	resp, err := f.client.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return resp, body
}

// checkGolden compares a JSON body with testdata/name.json, indented.
func checkGolden(t *testing.T, name string, body []byte) {
	t.Helper()
	var out bytes.Buffer
	if err := json.Indent(&out, body, "", "  "); err != nil {
		t.Fatalf("%s: not JSON: %v\n%s", name, err, body)
	}
	out.WriteByte('\n')
	path := filepath.Join("testdata", name+".json")
	if *update {
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf("%s differs from %s:\n%s", name, path, out.String())
	}
}
