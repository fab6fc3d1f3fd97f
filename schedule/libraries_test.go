package schedule_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/schedule"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// discovered returns the libraries of drives of those IDs, as discovery
// makes them.
func discovered(ids ...string) []fm.Library {
	rule := fm.SharedDriveDiscovery{Domain: "example.com", StorageAccount: "storage@example.com"}
	libs := make([]fm.Library, len(ids))
	for i, id := range ids {
		libs[i] = rule.Library(fm.DiscoveredDrive{ID: id, Name: "Drive " + id})
	}
	return libs
}

// A library added to the set while the scheduler runs is synced whole; one
// removed has its run cancelled and is no longer a job.
func TestLibrariesFollowTheSet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		set := libraries("lib")
		g := newGated()
		sc := newScheduler(t, schedule.Options{Syncer: g, Plan: schedule.Plan{Libraries: set}, Index: index{"lib": true}})
		sc.Start()
		synctest.Wait()
		if n := len(g.started); n != 0 {
			t.Fatalf("%d syncs at start of a library synced before", n)
		}

		set.SetDiscovered("example.com", discovered("0Adrive"))
		req := recv(t, g.started, "the sync of the drive added")
		if req.Library != "0Adrive" || req.Mode != fm.SyncFull {
			t.Fatalf("sync %+v, want a full sync of 0Adrive", req)
		}
		events := joinRunning(t, sc, "0Adrive")

		set.SetDiscovered("example.com", nil)
		if _, final := drain(t, events); final.Error == "" {
			t.Errorf("the run of a library removed ended %+v, want cancelled", final)
		}
		if _, err := sc.Follow(context.Background(), "0Adrive", fm.SyncAuto, nil); fm.ErrorCode(err) != fm.ENOTFOUND {
			t.Errorf("Follow of a library removed: %v, want ENOTFOUND", err)
		}
		if _, ok := sc.JobStatus("0Adrive"); ok {
			t.Error("the status still has the library removed")
		}
		for _, st := range sc.Status() {
			if st.Name == "0Adrive" {
				t.Errorf("Status still lists it: %+v", st)
			}
		}
		sc.Notify("0Adrive")
		synctest.Wait()
		if n := len(g.started); n != 0 {
			t.Errorf("a notification of the library removed started %d syncs", n)
		}
	})
}

// starts records when each library's sync started.
type starts struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (s *starts) Sync(_ context.Context, req fm.SyncRequest, _ fm.ProgressFunc) (*fm.SyncResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at[req.Library] = time.Now()
	return &fm.SyncResult{Library: req.Library}, nil
}

func (s *starts) SyncDirectory(_ context.Context, domain string, _ fm.Fence) (*fm.DirectoryResult, error) {
	return &fm.DirectoryResult{Domain: domain}, nil
}

// A large incremental round is spread over the schedule's period, never
// faster than PollsPerSecond; a small one starts at once.
func TestIncrementalRoundIsSpread(t *testing.T) {
	for _, tc := range []struct {
		name           string
		libraries      int
		pollsPerSecond float64
		wantInterval   time.Duration
	}{
		{"small round at once", 10, 0, 0},
		{"200 over 0.8 minute", 200, 0, 240 * time.Millisecond},
		{"200 at 2 a second", 200, 2, 500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ids := make([]string, tc.libraries)
				for i := range ids {
					ids[i] = fmt.Sprintf("lib-%03d", i)
				}
				s := &starts{at: map[string]time.Time{}}
				sc := newScheduler(t, schedule.Options{Syncer: s, Plan: schedule.Plan{Libraries: libraries(ids...)},
					PollsPerSecond: tc.pollsPerSecond, Concurrency: 4})
				begin := time.Now()
				sc.IncrementalTick()
				time.Sleep(time.Duration(tc.libraries) * tc.wantInterval)
				synctest.Wait()
				s.mu.Lock()
				defer s.mu.Unlock()
				if len(s.at) != tc.libraries {
					t.Fatalf("%d of %d libraries synced", len(s.at), tc.libraries)
				}
				for i, id := range ids {
					if want, got := time.Duration(i)*tc.wantInterval, s.at[id].Sub(begin); got != want {
						t.Fatalf("%s started after %v, want %v", id, got, want)
					}
				}
			})
		})
	}
}

// A notified sync takes the next free slot before the scheduled syncs
// queued for one.
func TestNotifiedGoesBeforeScheduled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGated()
		sc := newScheduler(t, schedule.Options{Syncer: g, Concurrency: 1, Plan: schedule.Plan{Libraries: libraries("a", "b", "c", "d")}})
		sc.IncrementalTick()
		if req := recv(t, g.started, "the first scheduled sync"); req.Library != "a" {
			t.Fatalf("first sync %+v, want a's", req)
		}
		sc.Notify("d")
		g.finish(t, sc, "a")
		if req := recv(t, g.started, "the sync after a's"); req.Library != "d" {
			t.Fatalf("sync %+v after a's, want the notified d's", req)
		}
		g.finish(t, sc, "d")
		for _, want := range []string{"b", "c"} {
			if req := recv(t, g.started, "a scheduled sync"); req.Library != want {
				t.Fatalf("sync %+v, want %s's", req, want)
			}
			g.finish(t, sc, want)
		}
	})
}

// A full run due replaces an incremental poll that a spread round queued
// for later, and runs as soon as a slot is free.
func TestFullReplacesQueuedPoll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ids := make([]string, 100)
		for i := range ids {
			ids[i] = fmt.Sprintf("lib-%03d", i)
		}
		g := newGated()
		sc := newScheduler(t, schedule.Options{Syncer: g, Concurrency: 1, Plan: schedule.Plan{Libraries: libraries(ids...)}})
		sc.IncrementalTick() // lib-001's poll is due in half a second, lib-099's in 0.8 minute
		if req := recv(t, g.started, "the round's first poll"); req.Library != "lib-000" || req.Mode != fm.SyncAuto {
			t.Fatalf("first sync %+v", req)
		}
		sc.Start() // none was ever synced: a first full sync of each is due now
		for _, want := range []string{"lib-000", "lib-001", "lib-002"} {
			g.finish(t, sc, statusRunning(sc))
			if req := recv(t, g.started, "a first full sync"); req.Library != want || req.Mode != fm.SyncFull {
				t.Fatalf("sync %+v, want %s's full sync", req, want)
			}
		}
	})
}

// statusRunning returns the name of the job that runs, "" if none.
func statusRunning(sc *schedule.Scheduler) string {
	for _, st := range sc.Status() {
		if st.Running {
			return st.Name
		}
	}
	return ""
}

// syncedLater plays an index shared by replicas: another replica may sync
// a library at any time (mark).
type syncedLater struct {
	mu     sync.Mutex
	synced map[string]bool
}

func (i *syncedLater) mark(id string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.synced[id] = true
}

func (i *syncedLater) Library(ctx context.Context, id string) (*fm.LibraryState, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	return index(i.synced).Library(ctx, id)
}

// A first sync queued while the library was never synced is skipped if,
// by the time it holds the lease, another replica has synced the library:
// replicas that found the same drives sync each once.
func TestFirstSyncLeftToTheReplicaThatMadeIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		idx := &syncedLater{synced: map[string]bool{}}
		g := newGated()
		sc := newScheduler(t, schedule.Options{Syncer: g, Plan: schedule.Plan{Libraries: libraries("a", "b")}, Index: idx, Concurrency: 1})
		sc.Start()
		first := recv(t, g.started, "the first of the first syncs")
		other := map[string]string{"a": "b", "b": "a"}[first.Library]
		idx.mark(other) // another replica synced it while this one queued it
		send(t, g.let, struct{}{}, "the end of the first sync")
		synctest.Wait()
		select {
		case req := <-g.started:
			t.Errorf("%s was synced again once another replica had synced it: %+v", req.Library, req)
		default:
		}
	})
}

// A library that leaves the set leaves /metrics too: thousands of drives
// come and go, and their series must not stay behind.
func TestLibraryRemovedLeavesTheMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		set := libraries("lib")
		g := newGated()
		metrics := schedule.NewMetrics(prometheus.NewRegistry())
		sc := newScheduler(t, schedule.Options{Syncer: g, Metrics: metrics, Plan: schedule.Plan{Libraries: set}, Index: index{"lib": true}})
		sc.Start()
		set.SetDiscovered("example.com", discovered("0Adrive"))
		recv(t, g.started, "the sync of the drive added")
		send(t, g.let, struct{}{}, "the end of its sync")
		synctest.Wait()
		if n := testutil.ToFloat64(metrics.Syncs().WithLabelValues("0Adrive", "full")); n != 1 {
			t.Fatalf("foldermirror_syncs_total of the drive's full sync: %v, want 1", n)
		}
		set.SetDiscovered("example.com", nil)
		synctest.Wait()
		for name, c := range map[string]prometheus.Collector{"syncs": metrics.Syncs(), "last success": metrics.LastSuccess()} {
			if n := testutil.CollectAndCount(c); n != 0 {
				t.Errorf("%d series of %s left once the drive left the set", n, name)
			}
		}
	})
}
