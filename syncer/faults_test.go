package syncer_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/googleclient"
	"github.com/foldermirror/foldermirror/internal/googlefake"
)

// faultWorld is a My Drive library of two pages of folders and a shared
// drive whose folders often have permissions of their own; it returns the
// fake, the libraries' configuration and folders of each.
func faultWorld(t *testing.T) (*googlefake.Server, []string, [2][]string) {
	fake := startFake(t)
	fake.Seed(11)
	root := fake.CreateFolder(storage, "", "Root")
	ids := []string{root}
	for i := range 1500 {
		id := fake.CreateFolder(storage, ids[i/8], fmt.Sprint("f", i))
		if i%50 == 0 {
			fake.Share(id, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: fmt.Sprintf("u%d@example.com", i%7)})
		}
		ids = append(ids, id)
	}
	d := fake.CreateSharedDrive("Team", storage)
	dids := []string{d}
	for i := range 400 {
		id := fake.CreateFolder(storage, dids[i/4], fmt.Sprint("d", i))
		if i%2 == 0 {
			fake.Share(id, googlefake.Permission{Type: "user", Role: "writer", EmailAddress: fmt.Sprintf("w%d@example.com", i%5)})
		}
		dids = append(dids, id)
	}
	return fake, []string{"id: mine, rootFolderId: " + root, "id: team, sharedDriveId: " + d}, [2][]string{ids, dids}
}

func faultyEnv(t *testing.T, fake *googlefake.Server, libs []string) *env {
	e := newEnv(t, fake, libs...)
	e.retry = googleclient.RetryPolicy{Attempts: 10, BaseDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond}
	e.tryTimeout = 300 * time.Millisecond
	e.restartSyncer()
	return e
}

func driveCalls(calls map[string]int) int {
	n := 0
	for m, c := range calls {
		if strings.HasPrefix(m, "drive.") {
			n += c
		}
	}
	return n
}

// countFaults sums the faults of a count by kind.
func countFaults(byKind map[googlefake.Fault]int) int {
	n := 0
	for _, c := range byKind {
		n += c
	}
	return n
}

// With 20 % of Drive calls failing in every transient way, full and
// incremental syncs give exactly the fault-free result, within 1.5 × the
// fault-free calls over the run (a library of a few calls may double its
// own for one fault).
func TestTransientFaults(t *testing.T) {
	t.Parallel()
	fake, libs, ids := faultWorld(t)
	clean, faulty := newEnv(t, fake, libs...), faultyEnv(t, fake, libs)
	var gotAll, wantAll int
	for round := range 6 {
		if round > 0 {
			mutateForFaults(fake, ids, round)
		}
		for _, lib := range []string{"mine", "team"} {
			fake.SetFaults(0, 0)
			fake.ResetCalls()
			if _, err := clean.s.Sync(context.Background(), fm.SyncRequest{Library: lib, Mode: fm.SyncAuto}, nil); err != nil {
				t.Fatal(err)
			}
			want := driveCalls(fake.Calls())
			fake.SetFaults(0.2, uint64(round*10+len(lib)))
			fake.ResetCalls()
			before := countFaults(fake.InjectedFaults())
			res, err := faulty.s.Sync(context.Background(), fm.SyncRequest{Library: lib, Mode: fm.SyncAuto}, nil)
			fake.SetFaults(0, 0)
			if err != nil {
				t.Fatalf("round %d, %s: %v", round, lib, err)
			}
			got, faults := driveCalls(fake.Calls()), countFaults(fake.InjectedFaults())-before
			t.Logf("round %d, %s (full %v): %d calls, %d without faults; injected %v", round, lib, res.Full, got, want, fake.InjectedFaults())
			// Each fault costs its retry, and may cost pages read ahead
			// beside the failed one: in a library of a few calls one fault
			// can double them. A sync is held to a bound no runaway retry
			// meets; the whole run to 1.5 × the calls without faults.
			gotAll, wantAll = gotAll+got, wantAll+want
			if limit := 2*want + 4*faults; got > limit {
				t.Errorf("round %d, %s: %d calls, more than %d (2 × the %d without faults and 4 a fault: %d faults)", round, lib, got, limit, want, faults)
			}
			compareIndexes(t, fmt.Sprintf("round %d, %s", round, lib), faulty, clean, lib)
		}
	}
	if float64(gotAll) > 1.5*float64(wantAll) {
		t.Errorf("%d calls in all, more than 1.5 × the %d without faults", gotAll, wantAll)
	}
	if n := fake.InjectedFaults(); len(n) < len(googlefake.AllFaults) {
		t.Errorf("not every fault was tried: %v", n)
	}
}

// mutateForFaults renames, shares, adds and trashes in both libraries.
func mutateForFaults(fake *googlefake.Server, ids [2][]string, round int) {
	for lib, folders := range ids {
		for i := 1; i < 40; i++ {
			id := folders[(i*37+round*101)%len(folders)]
			switch i % 4 {
			case 0:
				fake.Rename(id, fmt.Sprint("renamed ", i))
			case 1:
				fake.Share(id, googlefake.Permission{Type: "user", Role: "commenter", EmailAddress: fmt.Sprintf("c%d@example.com", lib)})
			case 2:
				fake.CreateFolder(storage, id, "new")
			default:
				fake.Trash(id)
			}
		}
	}
}

// A permanent error fails only its library's sync: its last good tree is
// still served, the other library syncs meanwhile. (What the scheduler's
// status and metrics say of a failed sync, package schedule tests.)
func TestPermanentErrorsFailOneLibrary(t *testing.T) {
	t.Parallel()
	fake, libs, _ := faultWorld(t)
	fake.AddUser("other-storage@example.com")
	teamRoot := strings.TrimPrefix(libs[1], "id: team, sharedDriveId: ")
	fake.Share(teamRoot, googlefake.Permission{Type: "user", Role: "organizer", EmailAddress: "other-storage@example.com"})
	libs[1] += ", storageAccount: other-storage@example.com"
	forbidden := false
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if forbidden && strings.Contains(r.URL.RawQuery, teamRoot) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `{"error":{"code":403,"message":"The user does not have sufficient permissions for this file.","errors":[{"domain":"global","reason":"insufficientFilePermissions","message":"The user does not have sufficient permissions for this file."}]}}`)
			return
		}
		fake.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	e := newEnv(t, fake, libs...)
	e.cfg.Storage.Endpoint = proxy.URL + "/drive/v3/"
	e.restartSyncer()
	e.sync("mine")
	e.sync("team")
	before := e.tree("team")

	for _, tc := range []struct {
		name    string
		breakIt func()
	}{
		{"403 without a retry reason", func() { forbidden = true }},
		{"delegation refused", func() {
			forbidden = false
			fake.RefuseDelegation(saEmail, "other-storage@example.com")
			e.restartSyncer()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.breakIt()
			errs := map[string]error{}
			var mu sync.Mutex
			var wg sync.WaitGroup
			for _, lib := range []string{"team", "mine"} {
				wg.Go(func() {
					_, err := e.s.Sync(context.Background(), fm.SyncRequest{Library: lib, Mode: fm.SyncFull}, nil)
					mu.Lock()
					defer mu.Unlock()
					errs[lib] = err
				})
			}
			wg.Wait()
			if errs["team"] == nil {
				t.Errorf("team synced despite the fault")
			}
			if err := errs["mine"]; err != nil {
				t.Errorf("mine failed with team: %v", err)
			}
			if got := e.tree("team"); strings.Join(got, "|") != strings.Join(before, "|") {
				t.Errorf("team's tree changed: %v", got)
			}
		})
	}
	if _, err := e.db.Library(context.Background(), "team"); fm.ErrorCode(err) != "" {
		t.Errorf("team's state: %v", err)
	}
}

// sharedDriveOfShares is a shared drive of 1500 folders (two pages of
// listing), each with a permission of its own, read through proxy.
func sharedDriveOfShares(t *testing.T, proxy func(fake *googlefake.Server) http.Handler) *env {
	fake := startFake(t)
	d := fake.CreateSharedDrive("Team", storage)
	for i := range 1500 {
		id := fake.CreateFolder(storage, d, fmt.Sprint("d", i))
		fake.Share(id, googlefake.Permission{Type: "user", Role: "writer", EmailAddress: fmt.Sprintf("w%d@example.com", i%5)})
	}
	srv := httptest.NewServer(proxy(fake))
	t.Cleanup(srv.Close)
	e := newEnv(t, fake, "id: team, sharedDriveId: "+d)
	e.cfg.Storage.Endpoint = srv.URL + "/drive/v3/"
	e.restartSyncer()
	return e
}

func writeForbidden(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusForbidden)
	fmt.Fprint(w, `{"error":{"code":403,"message":"Forbidden.","errors":[{"domain":"global","reason":"forbidden","message":"Forbidden."}]}}`)
}

// wait sleeps for d, or until the request is given up.
func wait(r *http.Request, d time.Duration) bool {
	select {
	case <-time.After(d):
		return true
	case <-r.Context().Done():
		return false
	}
}

// A shared drive's listing and the permissions read while it goes on stop
// each other: when the listing fails, the folders queued get no more
// permissions calls; when a permissions call fails, the listing stops.
func TestListingAndPermissionsStopEachOther(t *testing.T) {
	t.Run("listing fails", func(t *testing.T) {
		var failed atomic.Bool
		var after atomic.Int32 // permissions.list calls after the listing failed
		e := sharedDriveOfShares(t, func(fake *googlefake.Server) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case strings.HasSuffix(r.URL.Path, "/files") && r.URL.Query().Get("pageToken") != "":
					failed.Store(true)
					writeForbidden(w)
					return
				case strings.HasSuffix(r.URL.Path, "/permissions"):
					hold := 5 * time.Millisecond
					if failed.Load() {
						// Held until the sync gives it up: each worker makes
						// at most one call after the failure, however long
						// the sync takes to see it (a loaded machine once
						// let a worker make two).
						after.Add(1)
						hold = 2 * time.Second
					}
					if !wait(r, hold) {
						return
					}
				}
				fake.ServeHTTP(w, r)
			})
		})
		_, err := e.s.Sync(context.Background(), fm.SyncRequest{Library: "team", Mode: fm.SyncFull}, nil)
		if err == nil || !strings.Contains(err.Error(), "list folders") {
			t.Fatalf("error %v; want the listing's", err)
		}
		if !failed.Load() {
			t.Fatal("the listing never failed")
		}
		if n := after.Load(); n > int32(2*e.cfg.Storage.Concurrency) {
			t.Errorf("%d permissions.list calls after the listing failed; want at most %d", n, 2*e.cfg.Storage.Concurrency)
		}
	})
	t.Run("permissions fail", func(t *testing.T) {
		var lists atomic.Int32
		e := sharedDriveOfShares(t, func(fake *googlefake.Server) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case strings.HasSuffix(r.URL.Path, "/permissions"):
					writeForbidden(w)
					return
				case strings.HasSuffix(r.URL.Path, "/files"):
					lists.Add(1)
					if !wait(r, 200*time.Millisecond) {
						return
					}
				}
				fake.ServeHTTP(w, r)
			})
		})
		_, err := e.s.Sync(context.Background(), fm.SyncRequest{Library: "team", Mode: fm.SyncFull}, nil)
		if err == nil || !strings.Contains(err.Error(), "list permissions") {
			t.Fatalf("error %v; want the permissions'", err)
		}
		if n := lists.Load(); n > 1 {
			t.Errorf("%d files.list calls; want the listing to stop by its first page", n)
		}
	})
}
