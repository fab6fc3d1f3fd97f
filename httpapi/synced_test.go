package httpapi_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"testing"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/httpapi"
	"github.com/foldermirror/foldermirror/httpapi/auth"
	"github.com/foldermirror/foldermirror/index/indextest"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/googlefake"
	"github.com/foldermirror/foldermirror/internal/wire"
	"github.com/foldermirror/foldermirror/syncer"
	"github.com/prometheus/client_golang/prometheus"
	drive "google.golang.org/api/drive/v3"
)

// The tests of this file answer from an index the syncer wrote, reading the
// fake, rather than from a hand-built one.

const syncedStorage = "storage@example.com"

// synced is an API over an index that a syncer fills from a fake.
type synced struct {
	t       *testing.T
	fake    *googlefake.Server
	db      indextest.Index
	syncer  *syncer.Syncer
	api     *httpapi.Server
	handler http.Handler
}

// newSynced configures example.com (admin code exampleAdminCode) and other.org
// (admin code otherAdminCode) with libs, read as syncedStorage, keeps the
// index on backend, and serves the API over it.
func newSynced(t *testing.T, backend string, fake *googlefake.Server, libs ...fm.Library) *synced {
	t.Helper()
	c := fmtest.Config(t, fake, t.TempDir())
	c.Domains = []config.Domain{{Name: "example.com"}, {Name: "other.org"}}
	for _, l := range libs {
		l.Name, l.StorageAccount = l.ID, syncedStorage
		c.Libraries = append(c.Libraries, config.Library(l))
	}
	cfg := fmtest.LoadConfig(t, c)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	db := fmtest.OpenIndex(t, backend, cfg.DataDir)
	s, _, err := wire.NewSyncer(cfg, wire.Libraries(cfg), db, logger, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	authOpts := fmtest.AuthOptions(fake)
	authOpts.Domains = []auth.Domain{
		{Name: "example.com", SecurityCodes: []auth.SecurityCode{{SHA256: sha256.Sum256([]byte(exampleAdminCode)), ActAsAdmin: true}}},
		{Name: "other.org", SecurityCodes: []auth.SecurityCode{{SHA256: sha256.Sum256([]byte(otherAdminCode)), ActAsAdmin: true}}},
	}
	authn := auth.New(authOpts)
	t.Cleanup(authn.Close)
	api := httpapi.New(db, authn, httpapi.Options{
		Libraries:               fm.NewLibrarySet(cfg.CoreLibraries()),
		Domains:                 []httpapi.Domain{{Name: "example.com"}, {Name: "other.org"}},
		CallerRequestsPerSecond: defaultRate,
		CallerBurst:             defaultBurst,
		Logger:                  logger,
	})
	return &synced{t: t, fake: fake, db: db, syncer: s, api: api, handler: api.Handler()}
}

// sync syncs a library in mode, and fails the test unless it ran so; then
// it warms the library's catalog, as the daemon does after each sync.
func (s *synced) sync(lib string, mode fm.SyncMode) {
	s.t.Helper()
	res, err := s.syncer.Sync(context.Background(), fm.SyncRequest{Library: lib, Mode: mode}, nil)
	if err != nil {
		s.t.Fatalf("sync %s: %v", lib, err)
	}
	if res.Full != (mode == fm.SyncFull) {
		s.t.Fatalf("sync %s: full %v, asked %v", lib, res.Full, mode)
	}
	if err := s.api.Warm(context.Background(), lib); err != nil {
		s.t.Fatalf("warm %s: %v", lib, err)
	}
}

// get answers a GET of path with a security code.
func (s *synced) get(path, code string) (int, []byte) {
	s.t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Header.Set("Authorization", "securityCode "+code)
	w := httptest.NewRecorder()
	s.handler.ServeHTTP(w, req)
	return w.Code, w.Body.Bytes()
}

// drivePermissionIDs returns the IDs of the permissions Drive lists for a
// folder, in Drive's order, deleted accounts' left out.
func drivePermissionIDs(t *testing.T, svc *drive.Service, id string) []string {
	t.Helper()
	ids := []string{}
	err := svc.Permissions.List(id).SupportsAllDrives(true).PageSize(100).Fields("nextPageToken,permissions(id,deleted)").
		Pages(context.Background(), func(l *drive.PermissionList) error {
			for _, p := range l.Permissions {
				if !p.Deleted {
					ids = append(ids, p.Id)
				}
			}
			return nil
		})
	if err != nil {
		t.Fatalf("permissions.list of %s: %v", id, err)
	}
	return ids
}

// checkDriveOrder checks that operation 4 answers, for every folder of the
// library, the permissions Drive lists for it, in Drive's order.
func (s *synced) checkDriveOrder(when, lib string, svc *drive.Service) {
	s.t.Helper()
	folders, err := s.db.Snapshot(context.Background(), lib)
	if err != nil {
		s.t.Fatal(err)
	}
	for _, f := range folders {
		status, body := s.get("/folder/v1/folders/"+url.PathEscape(f.ID)+"/permissions", exampleAdminCode)
		if status != http.StatusOK {
			s.t.Fatalf("%s: operation 4 of %s: %d %s", when, f.ID, status, body)
		}
		var answer struct {
			StoragePermissions []struct {
				PermissionID string `json:"permissionId"`
			} `json:"storagePermissions"`
		}
		if err := json.Unmarshal(body, &answer); err != nil {
			s.t.Fatal(err)
		}
		got := []string{}
		for _, p := range answer.StoragePermissions {
			got = append(got, p.PermissionID)
		}
		if want := drivePermissionIDs(s.t, svc, f.ID); !slices.Equal(got, want) {
			s.t.Errorf("%s: %s (%q): operation 4 lists %v, Drive %v", when, lib, f.Name, got, want)
		}
	}
}

// Operation 4 lists each folder's permissions in Drive's order, for a
// shared drive (whose folders that only inherit are never read: their lists
// are made) and a My Drive library, after a full sync and after an
// incremental one that changed ancestors' permissions without Drive
// sending a change for each descendant, on every index backend.
func TestPermissionsInDriveOrder(t *testing.T) {
	for _, backend := range fmtest.Backends(t) {
		t.Run(backend, func(t *testing.T) {
			fake := fmtest.StartGoogle(t)
			fake.AddUser(syncedStorage)
			user := func(email, role string) googlefake.Permission {
				return googlefake.Permission{Type: "user", Role: role, EmailAddress: email}
			}
			root := fake.CreateFolder(syncedStorage, "", "Library")
			fake.Share(root, user("zoe@example.com", "reader"))
			fake.Share(root, googlefake.Permission{Type: "domain", Role: "reader", Domain: "example.com", AllowFileDiscovery: true})
			team := fake.CreateSharedDrive("Team", syncedStorage)
			fake.Share(team, user("zoe@example.com", "writer"))
			fake.Share(team, googlefake.Permission{Type: "group", Role: "reader", EmailAddress: "staff@example.com"})
			var mine, shared []string
			for i := range 12 {
				mine = append(mine, fake.CreateFolder(syncedStorage, pick(root, mine, i), fmt.Sprint("m", i)))
				shared = append(shared, fake.CreateFolder(syncedStorage, pick(team, shared, i), fmt.Sprint("s", i)))
				if i%4 == 1 {
					fake.Share(mine[i], user(fmt.Sprintf("u%d@example.com", i), "writer"))
					fake.Share(shared[i], user(fmt.Sprintf("u%d@example.com", i), "commenter"))
				}
			}
			s := newSynced(t, backend, fake, fm.Library{ID: "mydrive", Domain: "example.com", RootFolderID: root},
				fm.Library{ID: "team", Domain: "example.com", SharedDriveID: team})
			svc := fmtest.DriveAs(t, fake, syncedStorage)
			for _, lib := range []string{"mydrive", "team"} {
				s.sync(lib, fm.SyncFull)
				s.checkDriveOrder("after a full sync", lib, svc)
			}

			fake.LogItemAlone(true) // descendants' lists are the sync's to make
			fake.Share(root, user("amy@example.com", "commenter"))
			fake.Share(mine[1], user("bea@example.com", "reader"))
			fake.Share(team, user("amy@example.com", "reader"))
			fake.Share(shared[1], user("bea@example.com", "reader"))
			for _, lib := range []string{"mydrive", "team"} {
				s.sync(lib, fm.SyncAuto)
				s.checkDriveOrder("after an incremental sync", lib, svc)
			}
		})
	}
}

// pick returns the parent of the i-th folder: the root, or a folder made
// before.
func pick(root string, made []string, i int) string {
	if i%3 == 0 {
		return root
	}
	return made[i/2]
}

// A library holds only the folders under its own root: when a My Drive
// library's storage account is added to another domain's shared drive (or
// that drive changes, or the account leaves it), the "drive" change in the
// account's feed concerns no library of the account's. The drive's root is
// not a folder of the library, and operation 5 of its ID is 404 to the
// domain's admin, on every index backend.
func TestAnotherDomainsDriveStaysOut(t *testing.T) {
	for _, backend := range fmtest.Backends(t) {
		t.Run(backend, func(t *testing.T) {
			fake := fmtest.StartGoogle(t)
			fake.AddUser(syncedStorage)
			root := fake.CreateFolder(syncedStorage, "", "Library")
			fake.CreateFolder(syncedStorage, root, "Inside")
			partner := fake.CreateSharedDrive("Partner", "olga@other.org")
			fake.Share(partner, googlefake.Permission{Type: "domain", Role: "reader", Domain: "other.org"})
			s := newSynced(t, backend, fake, fm.Library{ID: "mydrive", Domain: "example.com", RootFolderID: root})
			s.sync("mydrive", fm.SyncFull)

			var member string
			for _, step := range []struct {
				name string
				do   func()
			}{
				{"the storage account added to the drive", func() {
					member = fake.Share(partner, googlefake.Permission{Type: "user", Role: "writer", EmailAddress: syncedStorage})
				}},
				{"the drive renamed", func() { fake.Rename(partner, "Partner 2") }},
				{"the storage account removed from the drive", func() { fake.Unshare(partner, member) }},
			} {
				step.do()
				s.sync("mydrive", fm.SyncAuto)
				if f, err := s.db.Folder(context.Background(), "mydrive", partner); fm.ErrorCode(err) != fm.ENOTFOUND {
					t.Errorf("%s: the drive's root is a folder of the My Drive library: %+v %v", step.name, f, err)
				}
				for _, code := range []string{exampleAdminCode, otherAdminCode} {
					if status, body := s.get("/folder/v1/files/"+partner, code); status != http.StatusNotFound {
						t.Errorf("%s: operation 5 of the drive: %d %s", step.name, status, body)
					}
				}
				if status, body := s.get("/folder/v1/libraries/mydrive/folders", exampleAdminCode); status != http.StatusOK || !slices.Equal(folderNames(t, body), []string{"Library", "Inside"}) {
					t.Errorf("%s: operation 3: %d %s", step.name, status, body)
				}
			}
		})
	}
}

// folderNames returns the names of the items of a folder list, in order.
func folderNames(t *testing.T, body []byte) []string {
	t.Helper()
	var list struct {
		Items []struct {
			Name string `json:"name"`
		} `json:"items"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, it := range list.Items {
		names = append(names, it.Name)
	}
	return names
}
