package syncer_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/googleclient"
	"github.com/foldermirror/foldermirror/index/indextest"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/googlefake"
	"github.com/foldermirror/foldermirror/internal/wire"
	"github.com/foldermirror/foldermirror/syncer"
	"go.yaml.in/yaml/v3"
	drive "google.golang.org/api/drive/v3"
)

const (
	admin   = "admin@example.com"
	storage = "storage@example.com"
	saEmail = fmtest.ServiceAccount
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// env is a fake Drive, an index and a syncer of the configured libraries.
type env struct {
	t          testing.TB
	retry      googleclient.RetryPolicy
	tryTimeout time.Duration
	metrics    *syncer.Metrics
	logger     *slog.Logger
	fake       *googlefake.Server
	cfg        *config.Config
	db         indextest.Index
	s          *syncer.Syncer
	// set is the syncer's library set; nil: the configured libraries.
	set *fm.LibrarySet
}

// newEnv configures libraries given as the keys of a YAML flow mapping, such
// as "id: eng, rootFolderId: X" (the library is of example.com and read as
// storage unless it says otherwise), with a bbolt index.
func newEnv(t testing.TB, fake *googlefake.Server, libraries ...string) *env {
	t.Helper()
	return newEnvOn(t, fmtest.Bolt, fake, libraries...)
}

// newEnvOn is newEnv with the index on backend: fmtest.Bolt, or
// fmtest.Postgres (a database of its own on the server
// FOLDERMIRROR_TEST_POSTGRES names).
func newEnvOn(t testing.TB, backend string, fake *googlefake.Server, libraries ...string) *env {
	t.Helper()
	c := fmtest.Config(t, fake, t.TempDir())
	c.Storage.RequestsPerSecond = 10000
	c.Domains = []config.Domain{{Name: "example.com", AdminEmail: admin}}
	for _, spec := range libraries {
		c.Libraries = append(c.Libraries, library(t, spec))
	}
	cfg := fmtest.LoadConfig(t, c)
	e := &env{t: t, fake: fake, cfg: cfg, db: fmtest.OpenIndex(t, backend, cfg.DataDir)}
	e.restartSyncer()
	return e
}

// library is the library of example.com, read as storage, that spec (the
// keys of a YAML flow mapping, such as "id: eng, rootFolderId: X") describes.
func library(t testing.TB, spec string) config.Library {
	t.Helper()
	l := config.Library{Domain: "example.com", StorageAccount: storage}
	dec := yaml.NewDecoder(strings.NewReader("{" + spec + "}"))
	dec.KnownFields(true)
	if err := dec.Decode(&l); err != nil {
		t.Fatalf("library %q: %v", spec, err)
	}
	return l
}

// restartSyncer replaces the syncer, and its Google clients, by new ones of
// e.cfg, with no cached tokens.
func (e *env) restartSyncer() {
	e.t.Helper()
	if e.retry.Attempts == 0 {
		e.retry = googleclient.RetryPolicy{Attempts: 3, BaseDelay: time.Millisecond, MaxDelay: 10 * time.Millisecond}
	}
	if e.logger == nil {
		e.logger = quiet
	}
	gopts := wire.GoogleOptions(e.cfg)
	gopts.Retry, gopts.TryTimeout = e.retry, e.tryTimeout
	clients, err := googleclient.New(gopts)
	if err != nil {
		e.t.Fatal(err)
	}
	set := e.set
	if set == nil {
		set = wire.Libraries(e.cfg)
	}
	opts := wire.SyncerOptions(e.cfg, set)
	opts.Logger, opts.Metrics = e.logger, e.metrics
	e.s = syncer.New(e.db, clients, opts)
}

// startFake starts a Google fake whose users include storage.
func startFake(t testing.TB) *googlefake.Server {
	t.Helper()
	fake := fmtest.StartGoogle(t)
	fake.AddUser(storage)
	return fake
}

func (e *env) sync(lib string) *fm.SyncResult {
	e.t.Helper()
	res, err := e.s.Sync(context.Background(), fm.SyncRequest{Library: lib, Mode: fm.SyncFull}, nil)
	if err != nil {
		e.t.Fatalf("sync %s: %v", lib, err)
	}
	return res
}

// tree returns the indexed folders of a library as "name<parent" lines,
// sorted, with the root first.
func (e *env) tree(lib string) []string {
	e.t.Helper()
	st, err := e.db.Library(context.Background(), lib)
	if err != nil {
		e.t.Fatal(err)
	}
	snap, err := e.db.Snapshot(context.Background(), lib)
	if err != nil {
		e.t.Fatal(err)
	}
	names := map[string]string{}
	for _, f := range snap {
		names[f.ID] = f.Name
	}
	var lines []string
	for _, f := range snap {
		if f.ID != st.RootID {
			lines = append(lines, f.Name+"<"+names[f.ParentID])
		}
	}
	sort.Strings(lines)
	return append([]string{names[st.RootID]}, lines...)
}

func (e *env) folder(lib, id string) *fm.Folder {
	e.t.Helper()
	f, err := e.db.Folder(context.Background(), lib, id)
	if err != nil {
		e.t.Fatalf("folder %s: %v", id, err)
	}
	return f
}

// grants returns the grants a folder's permissions make.
func (e *env) grants(lib, id string) []fm.Grant {
	e.t.Helper()
	perms, err := e.db.Permissions(context.Background(), lib, id)
	if err != nil {
		e.t.Fatalf("permissions of %s: %v", id, err)
	}
	return fm.GrantsOf(perms)
}

func TestFullSyncMyDrive(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	root := fake.CreateFolder(storage, "", "Eng")
	a := fake.CreateFolder(storage, root, "A")
	a1 := fake.CreateFolder(storage, a, "A1")
	b := fake.CreateFolder(storage, root, "B")
	fake.CreateFolder(storage, b, "B1")
	trashed := fake.CreateFolder(storage, root, "Trashed")
	fake.CreateFolder(storage, trashed, "Under trash")
	fake.Trash(trashed)
	fake.CreateFile(storage, root, "shortcut", "application/vnd.google-apps.shortcut")
	fake.CreateFile(storage, root, "report.pdf", "application/pdf")
	outside := fake.CreateFolder(storage, "", "Elsewhere")
	fake.CreateFolder(storage, outside, "Not in the library")
	twoParents := fake.CreateFolder(storage, outside, "Two parents")
	fake.AddParent(twoParents, b)
	fake.Modify(a, func(f *googlefake.File) {
		f.DownloadRestrictedForReaders = true
		f.AppProperties = map[string]string{"folderDefinitionId": "projects"}
		f.ResourceKey = "rk-a"
	})
	fake.Modify(b, func(f *googlefake.File) { f.WritersCanShare = false })
	fake.Share(a, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: "bob@example.com", DisplayName: "Bob"})
	fake.Share(root, googlefake.Permission{Type: "domain", Role: "reader", Domain: "example.com", AllowFileDiscovery: true})
	crowded := fake.CreateFolder(storage, b, "Crowded")
	for i := range 130 {
		fake.Share(crowded, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: fmt.Sprintf("u%03d@example.com", i)})
	}

	e := newEnv(t, fake, "id: eng, rootFolderId: "+root)
	fake.ResetCalls()
	res := e.sync("eng")

	want := []string{"Eng", "A1<A", "A<Eng", "B1<B", "B<Eng", "Crowded<B", "Two parents<B"}
	if got := e.tree("eng"); !slices.Equal(got, want) {
		t.Errorf("tree:\n got %v\nwant %v", got, want)
	}
	if res.Folders != 7 {
		t.Errorf("result: %d folders", res.Folders)
	}
	fa, fa1, fb := e.folder("eng", a), e.folder("eng", a1), e.folder("eng", b)
	if !fa.OwnRestrictedDownload || !fa.RestrictedDownload || fa1.OwnRestrictedDownload || !fa1.RestrictedDownload || fb.RestrictedDownload {
		t.Errorf("restrictedDownload: a %+v, a1 %+v, b %+v", fa, fa1, fb)
	}
	if fa.DefinitionID != "projects" || fa.ResourceKey != "rk-a" || fa1.DefinitionID != "" {
		t.Errorf("a: definition %q resourceKey %q; a1 definition %q", fa.DefinitionID, fa.ResourceKey, fa1.DefinitionID)
	}
	if !fa.WritersCanShare || fb.WritersCanShare {
		t.Errorf("writersCanShare: a %v, b %v", fa.WritersCanShare, fb.WritersCanShare)
	}
	// a1 inherits bob and the domain from its ancestors, as Drive lists them.
	if got := principals(e.grants("eng", a1)); !slices.Equal(got, []string{"domain:example.com", "user:bob@example.com", "user:storage@example.com"}) {
		t.Errorf("a1 grants %v", got)
	}
	perms, err := e.db.Permissions(context.Background(), "eng", crowded)
	if err != nil || len(perms) != 132 {
		t.Errorf("crowded folder: %d permissions, %v", len(perms), err)
	}
	// One token, one page of folders, and permissions.list only where
	// Drive did not give them inline (over 100 permissions), in 2 pages.
	calls := fake.Calls()
	if calls["drive.changes.getStartPageToken"] != 1 || calls["drive.files.list"] != 1 ||
		calls["drive.permissions.list"] != 2 || calls["drive.files.get"] != 0 {
		t.Errorf("calls %v", calls)
	}
	if res.Calls != 4 {
		t.Errorf("result counts %d calls", res.Calls)
	}
	st, _ := e.db.Library(context.Background(), "eng")
	if st.StartPageToken == "" || st.RootID != root || st.DriveID != "" || st.LastFullSync.IsZero() {
		t.Errorf("state %+v", st)
	}
}

func principals(grants []fm.Grant) []string {
	var out []string
	for _, g := range grants {
		out = append(out, g.Principal)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func TestFullSyncSharedDrive(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	d := fake.CreateSharedDrive("Team", storage)
	fake.Share(d, googlefake.Permission{Type: "user", Role: "writer", EmailAddress: "carol@example.com"})
	fake.ModifyDrive(d, func(dr *drive.Drive) {
		dr.Restrictions = &drive.DriveRestrictions{SharingFoldersRequiresOrganizerPermission: true, CopyRequiresWriterPermission: true}
	})
	plans := fake.CreateFolder(storage, d, "Plans")
	q1 := fake.CreateFolder(storage, plans, "Q1")
	fake.Share(q1, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: "dave@example.com"})
	fake.CreateFolder(storage, d, "Archive")
	other := fake.CreateSharedDrive("Other", storage)
	fake.CreateFolder(storage, other, "Not this drive")

	e := newEnv(t, fake, "id: team, sharedDriveId: "+d)
	fake.ResetCalls()
	res := e.sync("team")
	if got, want := e.tree("team"), []string{"Team", "Archive<Team", "Plans<Team", "Q1<Plans"}; !slices.Equal(got, want) {
		t.Errorf("tree %v, want %v", got, want)
	}
	st, _ := e.db.Library(context.Background(), "team")
	if st.RootID != d || st.DriveID != d || !st.SharingRequiresOrganizer {
		t.Errorf("state %+v", st)
	}
	fq1 := e.folder("team", q1)
	if !fq1.RestrictedDownload || !fq1.WritersCanShare {
		t.Errorf("Q1: %+v", fq1)
	}
	if got := principals(e.grants("team", q1)); !slices.Equal(got, []string{"user:carol@example.com", "user:dave@example.com", "user:storage@example.com"}) {
		t.Errorf("Q1 grants %v", got)
	}
	// Permissions are listed for the drive and for Q1, the one folder with a
	// permission of its own; Plans and Archive only inherit the drive's.
	calls := fake.Calls()
	if calls["drive.drives.get"] != 1 || calls["drive.changes.getStartPageToken"] != 1 || calls["drive.files.list"] != 1 ||
		calls["drive.permissions.list"] != 2 {
		t.Errorf("calls %v for %d folders", calls, res.Folders)
	}
	if got := principals(e.grants("team", plans)); !slices.Equal(got, []string{"user:carol@example.com", "user:storage@example.com"}) {
		t.Errorf("Plans grants %v", got)
	}
}

// A shared drive renamed while a full sync reads it is named right by the
// next incremental sync, whichever call of the full sync the rename falls
// after: the changes token is taken before the drive is read, so the
// rename is past the token when it is not in what was read.
func TestDriveRenamedDuringFullSync(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	d := fake.CreateSharedDrive("Team", storage)
	fake.CreateFolder(storage, d, "Plans")
	e := newEnv(t, fake, "id: team, sharedDriveId: "+d)
	var renamed sync.Once
	e.throughProxy(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fake.ServeHTTP(w, r)
		renamed.Do(func() { fake.ModifyDrive(d, func(dr *drive.Drive) { dr.Name = "Team renamed" }) })
	}))
	e.sync("team")
	e.incremental("team")
	if got := e.folder("team", d).Name; got != "Team renamed" {
		t.Errorf("the drive's root is named %q after a full and an incremental sync; want %q", got, "Team renamed")
	}
}

// Folders that only inherit get exactly what Drive would list for them:
// compared, folder by folder, with permissions.list asked of the fake.
func TestInheritedPermissionsMatchDrive(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	fake.Seed(5)
	d := fake.CreateSharedDrive("Team", storage)
	fake.Share(d, googlefake.Permission{Type: "group", Role: "writer", EmailAddress: "team@example.com"})
	ids := []string{d}
	for i := range 120 {
		id := fake.CreateFolder(storage, ids[(i*7)%len(ids)], fmt.Sprint("f", i))
		if i%9 == 0 {
			fake.Share(id, googlefake.Permission{Type: "user", Role: []string{"reader", "writer", "commenter"}[i%3], EmailAddress: fmt.Sprintf("u%d@example.com", i%4)})
		}
		if i%17 == 0 {
			fake.Share(id, googlefake.Permission{Type: "domain", Role: "reader", Domain: "example.com", AllowFileDiscovery: i%2 == 0})
		}
		ids = append(ids, id)
	}
	e := newEnv(t, fake, "id: team, sharedDriveId: "+d)
	fake.ResetCalls()
	e.sync("team")
	if n := fake.CallCount("drive.permissions.list"); n >= 60 {
		t.Errorf("%d permissions.list calls for 121 folders, few of them with permissions of their own", n)
	}
	svc := fmtest.DriveAs(t, fake, storage)
	for _, id := range ids {
		want, err := svc.Permissions.List(id).SupportsAllDrives(true).Fields("permissions(id,type,role,emailAddress,domain,displayName,photoLink,allowFileDiscovery)").Do()
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.db.Permissions(context.Background(), "team", id)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want.Permissions) {
			t.Fatalf("%s: %d permissions, Drive lists %d", id, len(got), len(want.Permissions))
		}
		for i, p := range want.Permissions {
			if g := got[i]; g.ID != p.Id || g.Role != p.Role || g.Type != p.Type || g.EmailAddress != p.EmailAddress || g.Domain != p.Domain || g.AllowFileDiscovery != p.AllowFileDiscovery {
				t.Errorf("%s: permission %d is %+v, Drive lists %+v", id, i, g, p)
			}
		}
	}
}

// A second full sync replaces the tree: renamed, moved, trashed and
// unshared folders show as they are now.
func TestFullSyncReplaces(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	root := fake.CreateFolder(storage, "", "Root")
	a := fake.CreateFolder(storage, root, "A")
	b := fake.CreateFolder(storage, root, "B")
	c := fake.CreateFolder(storage, a, "C")
	outside := fake.CreateFolder(storage, "", "Outside")
	p := fake.Share(c, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: "bob@example.com"})
	e := newEnv(t, fake, "id: lib, rootFolderId: "+root)
	e.sync("lib")

	fake.Rename(a, "A renamed")
	fake.Move(c, b)
	fake.Unshare(c, p)
	fake.Move(b, outside)
	fake.CreateFolder(storage, root, "New")
	e.sync("lib")
	if got, want := e.tree("lib"), []string{"Root", "A renamed<Root", "New<Root"}; !slices.Equal(got, want) {
		t.Errorf("tree %v, want %v", got, want)
	}
	if _, err := e.db.Folder(context.Background(), "lib", c); fm.ErrorCode(err) != fm.ENOTFOUND {
		t.Errorf("moved-out folder still indexed: %v", err)
	}
}

func TestSyncFailuresKeepTheIndex(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	root := fake.CreateFolder(storage, "", "Root")
	fake.CreateFolder(storage, root, "A")
	e := newEnv(t, fake, "id: lib, rootFolderId: "+root, "id: gone, rootFolderId: no-such-folder",
		"id: nodrive, sharedDriveId: no-such-drive")
	e.sync("lib")
	before := e.tree("lib")

	for _, tc := range []struct {
		name, lib, want string
		setup           func()
	}{
		{"root not found", "gone", "root folder no-such-folder not found, or not shared with storage account", nil},
		{"drive not found", "nodrive", "shared drive no-such-drive not found", nil},
		{"delegation refused", "lib", "domain-wide delegation", func() { fake.RefuseDelegation(saEmail, storage); e.restartSyncer() }},
		{"unknown library", "nope", "not configured", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup()
			}
			_, err := e.s.Sync(context.Background(), fm.SyncRequest{Library: tc.lib, Mode: fm.SyncFull}, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to say %q", err, tc.want)
			}
		})
	}
	if got := e.tree("lib"); !slices.Equal(got, before) {
		t.Errorf("index changed by failed syncs: %v, was %v", got, before)
	}
}

func TestProgressReports(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	root := fake.CreateFolder(storage, "", "Root")
	for i := range 20 {
		fake.CreateFolder(storage, root, fmt.Sprint(i))
	}
	e := newEnv(t, fake, "id: lib, rootFolderId: "+root)
	var phases []string
	var writing []fm.Progress
	res, err := e.s.Sync(context.Background(), fm.SyncRequest{Library: "lib", Mode: fm.SyncFull}, func(p fm.Progress) {
		if len(phases) == 0 || phases[len(phases)-1] != p.Phase {
			phases = append(phases, p.Phase)
		}
		if p.Library != "lib" || (p.Total > 0 && p.Done > p.Total) {
			t.Errorf("progress %+v", p)
		}
		if p.Phase == "writing" {
			writing = append(writing, p)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"listing", "writing", "done"}; !slices.Equal(phases, want) {
		t.Errorf("phases %v, want %v", phases, want)
	}
	// Writing counts the folders written, from none to all of them.
	if first, last := writing[0], writing[len(writing)-1]; first.Done != 0 || first.Total != res.Folders ||
		last.Done != res.Folders || last.Total != res.Folders {
		t.Errorf("writing reported %+v; want 0 to %d of %d folders", writing, res.Folders, res.Folders)
	}
}

// A folder deleted between the listing and the reading of its permissions
// does not fail the sync: it is shown to nobody until the next sync.
func TestFolderVanishingDuringSync(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	d := fake.CreateSharedDrive("Team", storage)
	keep := fake.CreateFolder(storage, d, "Keep")
	gone := fake.CreateFolder(storage, d, "Gone")
	fake.Share(gone, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: "x@example.com"}) // so that it is listed
	deleted := false
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fake.ServeHTTP(w, r)
		if strings.HasSuffix(r.URL.Path, "/files") && !deleted {
			deleted = true
			fake.Delete(gone)
		}
	}))
	defer proxy.Close()
	e := newEnv(t, fake, "id: team, sharedDriveId: "+d)
	e.cfg.Storage.Endpoint = proxy.URL + "/drive/v3/"
	e.restartSyncer()
	e.sync("team")
	if g := e.grants("team", gone); len(g) != 0 {
		t.Errorf("vanished folder keeps grants %v", g)
	}
	if g := e.grants("team", keep); len(g) == 0 {
		t.Error("the other folder lost its grants")
	}
}
