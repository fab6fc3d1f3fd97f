package syncer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
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

// scaledRanges makes a world of a test of the createdTime ranges
// rangedShrink times smaller (four every day, whole with -tags long): it
// sets, for t, the page size of files.list and the folders left that cut a
// range to pageSize and split over rangedShrink, and returns folders over
// rangedShrink, the folders to make. The listing has as many pages and
// ranges, whose bounds as many changes cross.
func scaledRanges(t *testing.T, folders, pageSize, split int) int {
	syncer.SetListPageSize(t, pageSize/rangedShrink)
	syncer.SetSplitFolders(t, split/rangedShrink)
	return folders / rangedShrink
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
// folder and permission by permission; its listing costs a few calls more
// than a sequential one. Against a server that ignores the createdTime
// bounds of its queries (as the npm package google-drive-mock does), the
// ranges give way to one sequential listing, and the sync says so.
func TestRangedListingIsExact(t *testing.T) {
	type run struct {
		backend string
		seed    uint64
		ignore  googlefake.TimeBounds
	}
	runs := []run{{fmtest.Postgres, 100, 0}}
	for seed := range rangedSeeds {
		runs = append(runs, run{fmtest.Bolt, uint64(seed + 1), 0}, run{fmtest.Bolt, uint64(seed + 50), googlefake.AllTimeBounds})
	}
	if rangedSeeds > 1 {
		runs = append(runs, run{fmtest.Postgres, 150, googlefake.AllTimeBounds})
	}
	for _, tc := range runs {
		name := fmt.Sprintf("%s/seed %d", tc.backend, tc.seed)
		if tc.ignore != 0 {
			name += "/createdTime bounds ignored"
		}
		t.Run(name, func(t *testing.T) { rangedListingIsExact(t, tc.backend, tc.seed, tc.ignore) })
	}
}

// rangedListingIsExact is a run of TestRangedListingIsExact: on backend,
// the world of seed, the fake ignoring the createdTime bounds ignore. The
// world is smaller then, in smaller pages: the fallback lists it as one.
func rangedListingIsExact(t *testing.T, backend string, seed uint64, ignore googlefake.TimeBounds) {
	folders := scaledRanges(t, 5000, 1000, 700)
	if ignore != 0 {
		folders = scaledRanges(t, 1200, 100, 200)
	}
	m := newMutator(t, seed)
	for range folders {
		m.create()
	}
	m.fake.SpreadTimes(time.Date(2016, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	m.fake.IgnoreCreatedTimeBounds(ignore)
	libs := m.libraries()
	e := newEnvOn(t, backend, m.fake, libs...)
	var logs fmtest.LogBuffer
	e.logger = slog.New(slog.NewTextHandler(&logs, nil))
	var mu sync.Mutex
	mutating := true
	limit := &callLimit{max: 300, next: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isFilesList(r) {
			mu.Lock()
			for i := 0; mutating && i < 5; i++ {
				m.mutate()
			}
			mu.Unlock()
		}
		m.fake.ServeHTTP(w, r)
	})}
	e.throughProxy(limit)
	results := map[string]*fm.SyncResult{}
	calls := map[string]int64{}
	for _, lib := range []string{"mydrive", "shared"} {
		before := limit.calls.Load()
		results[lib] = e.sync(lib)
		calls[lib] = limit.calls.Load() - before
	}
	mu.Lock()
	mutating = false
	mu.Unlock()
	if mine := results["mydrive"]; ignore == 0 && mine.Ranges < 3 {
		t.Fatalf("the My Drive library was listed in %d ranges; the test needs several", mine.Ranges)
	}
	checkFallbacks(t, results, ignore != 0, logs.String())
	for _, lib := range []string{"mydrive", "shared"} {
		e.incremental(lib)
		m.fake.ResetCalls()
		want := sequential(t, m.fake, libs, lib)
		seq := int64(m.fake.CallCount("drive.files.list"))
		if most := 2*seq + 2*int64(results[lib].Ranges) + 2; calls[lib] > most {
			t.Errorf("%s: %d files.list calls in %d ranges; a sequential listing makes %d, want at most %d",
				lib, calls[lib], results[lib].Ranges, seq, most)
		}
		t.Logf("%s: %d files.list calls in %d ranges (fallback %q); a sequential listing makes %d",
			lib, calls[lib], results[lib].Ranges, results[lib].ListingFallback, seq)
		compareIndexes(t, lib, e, want, lib)
	}
	if t.Failed() {
		t.Logf("mutations:\n%s", m.log)
	}
}

// checkFallbacks checks that the listings of results, against a server
// that ignores the createdTime bounds of its queries when ignored, fell
// back to one sequential listing when a range was cut (else the bounds
// were never asked for), and the log said so; and that none did against a
// server that honours them.
func checkFallbacks(t *testing.T, results map[string]*fm.SyncResult, ignored bool, log string) {
	t.Helper()
	cut := false
	for lib, res := range results {
		cut = cut || res.Ranges > 1
		switch {
		case !ignored && res.ListingFallback != "":
			t.Errorf("%s: the ranges fell back to a sequential listing against a server that honours their bounds: %s", lib, res.ListingFallback)
		case ignored && res.Ranges > 1 && !strings.Contains(res.ListingFallback, "ignored the createdTime bounds"):
			t.Errorf("%s: listed in %d ranges; the result says of a fallback %q, want that the server ignored the createdTime bounds",
				lib, res.Ranges, res.ListingFallback)
		}
	}
	switch {
	case ignored && !cut:
		t.Fatal("no library was listed in several ranges; the test needs some")
	case ignored && !strings.Contains(log, "one sequential listing"):
		t.Errorf("no warning of the fallback to one sequential listing in the log:\n%s", log)
	}
}

// pagesAfterProbe stands before next and answers the files.list pages
// after a listing's first a few milliseconds late, so that the full sync's
// probe for the newest folder comes back while the first listing goes on,
// and ranges are cut: the tests that need some do not depend on how fast
// the machine lists a small library.
func pagesAfterProbe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isFilesList(r) && r.URL.Query().Get("pageToken") != "" {
			time.Sleep(3 * time.Millisecond)
		}
		next.ServeHTTP(w, r)
	})
}

// callLimit stands before next and answers the files.list calls past the
// first max with 400, so that a listing that would go on forever fails the
// test rather than hang it; calls counts them.
type callLimit struct {
	next  http.Handler
	max   int64
	calls atomic.Int64
}

func (c *callLimit) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if isFilesList(r) && c.calls.Add(1) > c.max {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.WriteHeader(http.StatusBadRequest)
		msg := fmt.Sprintf("the test allows %d files.list calls", c.max)
		fmt.Fprintf(w, `{"error":{"code":400,"message":%q,"errors":[{"reason":"badRequest","message":%q}]}}`, msg, msg)
		return
	}
	c.next.ServeHTTP(w, r)
}

// A library whose folders were all created in the same second is listed as
// one range, with one call more than one listing makes: the one asking for
// the newest folder.
func TestOneSecondLibraryIsOneRange(t *testing.T) {
	folders := scaledRanges(t, 2500, 1000, 1000)
	fake := startFake(t)
	at := time.Date(2020, 5, 1, 12, 0, 0, 0, time.UTC)
	fake.SetClock(func() time.Time { return at })
	root := fake.CreateFolder(storage, "", "Library")
	for i := range folders {
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
	folders := scaledRanges(t, 5000, 1000, 700)
	m := newMutator(t, 7)
	for range folders {
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
			e.throughProxy(pagesAfterProbe(shuffler(t, m.fake, tc.shuffle)))
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

// Against a server that ignores some of the createdTime bounds of its
// queries, with or without the order asked for, the index is exact, the
// listing costs about one sequential listing, and when a page showed a
// folder outside its range's bounds, the sync says it fell back to one.
func TestIgnoredTimeBoundsStayExact(t *testing.T) {
	folders := scaledRanges(t, 1000, 100, 200)
	m := newMutator(t, 9)
	for range folders {
		m.create()
	}
	m.fake.SpreadTimes(time.Date(2016, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	libs := m.libraries()
	m.fake.ResetCalls()
	want := sequential(t, m.fake, libs, "mydrive")
	seq := int64(m.fake.CallCount("drive.files.list"))
	for _, tc := range []struct {
		name    string
		ignore  googlefake.TimeBounds
		shuffle func(r *http.Request) bool // nil: the order is kept
		// fallback: the fallback must come. It comes for an ignored upper
		// bound only when a range reads as far as its query's end, and
		// when the order is lost after the first page, only if a range
		// was cut before.
		fallback bool
	}{
		{"lower bounds ignored", googlefake.LowerTimeBounds, nil, true},
		{"upper bounds ignored", googlefake.UpperTimeBounds, nil, false},
		{"bounds and order ignored", googlefake.AllTimeBounds, func(*http.Request) bool { return true }, true},
		{"bounds ignored, order lost after the first page", googlefake.AllTimeBounds,
			func(r *http.Request) bool { return r.URL.Query().Get("pageToken") != "" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m.fake.IgnoreCreatedTimeBounds(tc.ignore)
			t.Cleanup(func() { m.fake.IgnoreCreatedTimeBounds(0) })
			e := newEnv(t, m.fake, libs...)
			var logs fmtest.LogBuffer
			e.logger = slog.New(slog.NewTextHandler(&logs, nil))
			var next http.Handler = m.fake
			if tc.shuffle != nil {
				next = shuffler(t, m.fake, tc.shuffle)
			}
			limit := &callLimit{next: pagesAfterProbe(next), max: 200}
			e.throughProxy(limit)
			res := e.sync("mydrive")
			calls := limit.calls.Load()
			if most := 2*seq + 2*int64(res.Ranges) + 2; calls > most {
				t.Errorf("%d files.list calls in %d ranges; a sequential listing makes %d, want at most %d", calls, res.Ranges, seq, most)
			}
			if tc.fallback {
				checkFallbacks(t, map[string]*fm.SyncResult{"mydrive": res}, true, logs.String())
			}
			t.Logf("%d files.list calls in %d ranges (fallback %q); a sequential listing makes %d", calls, res.Ranges, res.ListingFallback, seq)
			compareIndexes(t, tc.name, e, want, "mydrive")
		})
	}
}

// A server whose listings never end (each page's nextPageToken leads to
// the first page again) makes the full sync fail with an error that says
// so, after a few calls more than a sequential listing would make, in
// ranges or page after page.
func TestEndlessListingStops(t *testing.T) {
	syncer.SetListPageSize(t, 100)
	syncer.SetSplitFolders(t, 100)
	fake := startFake(t)
	root := fake.CreateFolder(storage, "", "Library")
	for i := range 300 {
		fake.CreateFolder(storage, root, fmt.Sprint("f", i))
	}
	fake.SpreadTimes(time.Date(2016, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	for _, concurrency := range []int{1, 8} {
		t.Run(fmt.Sprint("concurrency ", concurrency), func(t *testing.T) {
			e := newEnv(t, fake, "id: lib, rootFolderId: "+root)
			e.cfg.Storage.Concurrency = concurrency
			limit := &callLimit{next: endless(t, fake), max: 100}
			e.throughProxy(limit)
			_, err := e.s.Sync(context.Background(), fm.SyncRequest{Library: "lib", Mode: fm.SyncFull}, nil)
			if err == nil || !strings.Contains(err.Error(), "gave no folder not listed before") {
				t.Fatalf("after %d files.list calls, the sync returned %v; want an error saying the listing makes no progress", limit.calls.Load(), err)
			}
			if calls := limit.calls.Load(); calls > 40 {
				t.Errorf("the sync stopped after %d files.list calls; a sequential listing makes 4", calls)
			}
			t.Logf("%d files.list calls: %v", limit.calls.Load(), err)
		})
	}
}

// endless stands before fake and makes its listings endless: every page has
// the nextPageToken "again", which lists the first page again.
func endless(t *testing.T, fake *googlefake.Server) http.Handler {
	token := regexp.MustCompile(`"nextPageToken":"[^"]*",?`)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isFilesList(r) {
			fake.ServeHTTP(w, r)
			return
		}
		q := r.URL.Query()
		if q.Get("pageToken") == "again" {
			q.Del("pageToken")
			r.URL.RawQuery = q.Encode()
		}
		rec := httptest.NewRecorder()
		fake.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		if rec.Code != http.StatusOK || len(body) == 0 || body[0] != '{' {
			t.Errorf("files.list answered %d %s", rec.Code, body)
			return
		}
		body = append([]byte(`{"nextPageToken":"again",`), token.ReplaceAll(body[1:], nil)...)
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})
}
