package syncer_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/googlefake"
	"github.com/foldermirror/foldermirror/syncer"
)

// isFilesList tells whether r is a files.list call.
func isFilesList(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/drive/v3/files")
}

// throughProxy points e's Drive calls at handler, which stands before e's fake.
func (e *env) throughProxy(handler http.Handler) {
	e.t.Helper()
	srv := httptest.NewServer(handler)
	e.t.Cleanup(srv.Close)
	e.cfg.Storage.Endpoint = srv.URL + "/drive/v3/"
	e.restartSyncer()
}

// sequential is a fresh bbolt index of libs, synced with storage.concurrency
// 1: one listing of each library, page after page.
func sequential(t *testing.T, fake *googlefake.Server, libs []string, lib string) *env {
	t.Helper()
	e := newEnv(t, fake, libs...)
	e.cfg.Storage.Concurrency = 1
	e.restartSyncer()
	if res := e.sync(lib); res.Ranges != 1 {
		t.Fatalf("a sequential sync of %s listed %d ranges", lib, res.Ranges)
	}
	return e
}

// A library listed in createdTime ranges side by side, while folders are
// created, renamed, moved (across the ranges' bounds), shared and deleted
// before every listing call, is after the incremental sync that follows
// exactly what one sequential listing of the still library gives, folder by
// folder and permission by permission.
func TestRangedListingIsExact(t *testing.T) {
	type run struct {
		backend string
		seed    uint64
	}
	runs := []run{{fmtest.Postgres, 100}}
	for seed := range rangedSeeds {
		runs = append(runs, run{fmtest.Bolt, uint64(seed + 1)})
	}
	for _, tc := range runs {
		t.Run(fmt.Sprintf("%s/seed %d", tc.backend, tc.seed), func(t *testing.T) {
			syncer.SetSplitFolders(t, 700)
			m := newMutator(t, tc.seed)
			for range 5000 {
				m.create()
			}
			m.fake.SpreadTimes(time.Date(2016, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
			libs := m.libraries()
			e := newEnvOn(t, tc.backend, m.fake, libs...)
			var mu sync.Mutex
			mutating := true
			e.throughProxy(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if isFilesList(r) {
					mu.Lock()
					for i := 0; mutating && i < 5; i++ {
						m.mutate()
					}
					mu.Unlock()
				}
				m.fake.ServeHTTP(w, r)
			}))
			ranges := map[string]int{}
			for _, lib := range []string{"mydrive", "shared"} {
				ranges[lib] = e.sync(lib).Ranges
			}
			mu.Lock()
			mutating = false
			mu.Unlock()
			if ranges["mydrive"] < 3 {
				t.Fatalf("the My Drive library was listed in %d ranges; the test needs several", ranges["mydrive"])
			}
			for _, lib := range []string{"mydrive", "shared"} {
				e.incremental(lib)
				compareIndexes(t, lib, e, sequential(t, m.fake, libs, lib), lib)
			}
			if t.Failed() {
				t.Logf("ranges %v; mutations:\n%s", ranges, m.log)
			} else {
				t.Logf("ranges %v", ranges)
			}
		})
	}
}

// A library whose folders were all created in the same second is listed as
// one range, with one call more than one listing makes: the one asking for
// the newest folder.
func TestOneSecondLibraryIsOneRange(t *testing.T) {
	syncer.SetSplitFolders(t, 1000)
	fake := startFake(t)
	at := time.Date(2020, 5, 1, 12, 0, 0, 0, time.UTC)
	fake.SetClock(func() time.Time { return at })
	root := fake.CreateFolder(storage, "", "Library")
	for i := range 2500 {
		fake.CreateFolder(storage, root, fmt.Sprint("f", i))
	}
	libs := []string{"id: lib, rootFolderId: " + root}
	e := newEnv(t, fake, libs...)
	fake.ResetCalls()
	res := e.sync("lib")
	ranged := fake.CallCount("drive.files.list")
	fake.ResetCalls()
	want := sequential(t, fake, libs, "lib")
	if res.Ranges != 1 || ranged != fake.CallCount("drive.files.list")+1 {
		t.Errorf("listed in %d ranges with %d files.list calls; want 1 range, and one call more than a sequential listing's %d",
			res.Ranges, ranged, fake.CallCount("drive.files.list"))
	}
	compareIndexes(t, "one second", e, want, "lib")
}

// When Drive does not keep the createdTime order asked for (as it documents
// it may not, for users with about a million files), the index is still
// exact: out of order from the first page, the library is listed in ranges
// cut from that page's times, each whole; out of order later, no range is
// cut any more and each is listed to the end of its query.
func TestUnorderedListingStaysExact(t *testing.T) {
	syncer.SetSplitFolders(t, 700)
	m := newMutator(t, 7)
	for range 5000 {
		m.create()
	}
	m.fake.SpreadTimes(time.Date(2016, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	libs := m.libraries()
	want := sequential(t, m.fake, libs, "mydrive")
	for _, tc := range []struct {
		name      string
		shuffle   func(r *http.Request) bool
		minRanges int
	}{
		{"from the first page", func(*http.Request) bool { return true }, 8},
		{"after ranges were cut", func(r *http.Request) bool { return r.URL.Query().Get("pageToken") != "" }, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, m.fake, libs...)
			var logs fmtest.LogBuffer
			e.logger = slog.New(slog.NewTextHandler(&logs, nil))
			e.throughProxy(shuffler(t, m.fake, tc.shuffle))
			if res := e.sync("mydrive"); res.Ranges < tc.minRanges {
				t.Errorf("listed in %d ranges; want at least %d", res.Ranges, tc.minRanges)
			}
			if !strings.Contains(logs.String(), "not list folders in createdTime order") {
				t.Errorf("no warning of the order not kept in the log:\n%s", logs.String())
			}
			compareIndexes(t, tc.name, e, want, "mydrive")
		})
	}
}

// shuffler stands before fake and shuffles the files of the pages listed
// in createdTime order that shuffle picks, as Drive's order would be if it
// ignored orderBy.
func shuffler(t *testing.T, fake *googlefake.Server, shuffle func(r *http.Request) bool) http.Handler {
	rng := rand.New(rand.NewPCG(7, 7))
	var mu sync.Mutex
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isFilesList(r) || r.URL.Query().Get("orderBy") != "createdTime" || !shuffle(r) {
			fake.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		fake.ServeHTTP(rec, r)
		var page map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil || rec.Code != http.StatusOK {
			t.Errorf("files.list answered %d %s", rec.Code, rec.Body)
			return
		}
		if files, ok := page["files"].([]any); ok {
			mu.Lock()
			rng.Shuffle(len(files), func(i, j int) { files[i], files[j] = files[j], files[i] })
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(page) //nolint:errcheck // the client sees a short body
	})
}
