package syncer_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/internal/googlefake"
	"github.com/foldermirror/foldermirror/syncer"
)

func newScheduler(t *testing.T, e *env) *syncer.Scheduler {
	t.Helper()
	sc, err := syncer.NewScheduler(e.s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sc.Stop)
	return sc
}

func statusOf(sc *syncer.Scheduler, name string) syncer.JobStatus {
	for _, st := range sc.Status() {
		if st.Name == name {
			return st
		}
	}
	return syncer.JobStatus{}
}

func drain(events <-chan syncer.Event) (progress int, final syncer.Event) {
	for ev := range events {
		if ev.Final() {
			final = ev
		} else {
			progress++
		}
	}
	return progress, final
}

func TestFollowAndJoin(t *testing.T) {
	fake := startFake(t)
	root := fake.CreateFolder(storage, "", "Root")
	for range 50 {
		fake.CreateFolder(storage, root, "x")
	}
	e := newEnv(t, fake, "id: lib, rootFolderId: "+root)
	sc := newScheduler(t, e)
	fake.SetLatency(100 * time.Millisecond)

	first, second := make(chan syncer.Event, 100), make(chan syncer.Event, 100)
	started, err := sc.Follow(context.Background(), "lib", syncer.Full, first)
	if err != nil || !started {
		t.Fatalf("first Follow: %v %v", started, err)
	}
	if started, _ := sc.Follow(context.Background(), "lib", syncer.Full, second); started {
		t.Error("a second sync of the library started while one was running")
	}
	if sc.Trigger("lib", syncer.Auto) {
		t.Error("Trigger doubled a running sync")
	}
	n, final := drain(first)
	_, joined := drain(second)
	if final.Result == nil || !final.Result.Full || final.Result.Folders != 51 || n == 0 {
		t.Errorf("first follower: %d progress events, final %+v", n, final)
	}
	if joined.Result == nil || joined.Result.Folders != 51 {
		t.Errorf("joined follower's final event %+v", joined)
	}
	st := statusOf(sc, "lib")
	if st.Running || st.LastFull == nil || st.LastFull.Folders != 51 || st.LastFull.Calls == 0 {
		t.Errorf("status %+v", st)
	}
	if _, err := sc.Follow(context.Background(), "nope", syncer.Full, nil); fm.ErrorCode(err) != fm.ENOTFOUND {
		t.Errorf("unknown library: %v", err)
	}
}

// storage.concurrency bounds the libraries syncing at once: with 1, Drive
// sees requests for one library at a time.
func TestConcurrencyBound(t *testing.T) {
	fake := startFake(t)
	var libs []string
	owner := map[string]string{} // drive or folder ID → library
	for _, name := range []string{"a", "b", "c"} {
		d := fake.CreateSharedDrive(name, storage)
		owner[d] = name
		for range 5 {
			id := fake.CreateFolder(storage, d, "x")
			fake.Share(id, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: "r@example.com"})
			owner[id] = name
		}
		libs = append(libs, "id: "+name+", sharedDriveId: "+d)
	}
	var mu sync.Mutex
	inFlight, most := map[string]int{}, 0
	libraryOf := func(r *http.Request) string {
		for id, lib := range owner {
			if strings.Contains(r.URL.Path, id) || strings.Contains(r.URL.RawQuery, id) {
				return lib
			}
		}
		return ""
	}
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lib := libraryOf(r)
		mu.Lock()
		inFlight[lib]++
		busy := 0
		for l, n := range inFlight {
			if n > 0 && l != "" {
				busy++
			}
		}
		most = max(most, busy)
		mu.Unlock()
		time.Sleep(2 * time.Millisecond)
		fake.ServeHTTP(w, r)
		mu.Lock()
		inFlight[lib]--
		mu.Unlock()
	}))
	defer proxy.Close()
	e := newEnv(t, fake, libs...)
	e.cfg.Storage.Endpoint = proxy.URL + "/drive/v3/"
	e.cfg.Storage.Concurrency = 1
	e.restartSyncer()
	sc := newScheduler(t, e)
	var chans []chan syncer.Event
	for _, name := range []string{"a", "b", "c"} {
		ch := make(chan syncer.Event, 100)
		chans = append(chans, ch)
		if _, err := sc.Follow(context.Background(), name, syncer.Full, ch); err != nil {
			t.Fatal(err)
		}
	}
	for _, ch := range chans {
		if _, final := drain(ch); final.Error != "" {
			t.Fatal(final.Error)
		}
	}
	if most != 1 {
		t.Errorf("%d libraries had Drive requests at once with storage.concurrency 1", most)
	}
}

// Stop cancels a running sync; the index keeps what it had.
func TestStopCancelsRunningSync(t *testing.T) {
	fake := startFake(t)
	d := fake.CreateSharedDrive("Team", storage)
	for range 40 {
		fake.CreateFolder(storage, d, "x")
	}
	e := newEnv(t, fake, "id: team, sharedDriveId: "+d)
	sc, err := syncer.NewScheduler(e.s)
	if err != nil {
		t.Fatal(err)
	}
	fake.SetLatency(200 * time.Millisecond)
	events := make(chan syncer.Event, 100)
	if _, err := sc.Follow(context.Background(), "team", syncer.Full, events); err != nil {
		t.Fatal(err)
	}
	// The first progress event: the sync is listing (each call 200 ms).
	if ev := <-events; ev.Final() {
		t.Fatalf("the sync ended before Stop: %+v", ev)
	}
	start := time.Now()
	sc.Stop()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Stop took %v", d)
	}
	if _, final := drain(events); final.Error == "" {
		t.Errorf("final event %+v, want the cancellation", final)
	}
	if _, err := e.db.Library(context.Background(), "team"); fm.ErrorCode(err) != fm.ENOTFOUND {
		t.Errorf("a cancelled first sync left a library behind: %v", err)
	}
}

func TestStatusRecordsFailures(t *testing.T) {
	fake := startFake(t)
	e := newEnv(t, fake, "id: gone, rootFolderId: missing-folder")
	sc := newScheduler(t, e)
	events := make(chan syncer.Event, 10)
	_, _ = sc.Follow(context.Background(), "gone", syncer.Full, events)
	if _, final := drain(events); final.Error == "" {
		t.Fatal("no error")
	}
	st := statusOf(sc, "gone")
	if st.LastError == "" || st.LastErrorAt.IsZero() || st.LastFull != nil {
		t.Errorf("status %+v", st)
	}
}
