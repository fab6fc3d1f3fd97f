package schedule_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/schedule"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// gated plays a syncer whose library syncs wait for the test: each sends
// its request on started, then waits to be let go, or cancelled.
type gated struct {
	started chan fm.SyncRequest
	let     chan struct{}
}

func newGated() *gated {
	return &gated{started: make(chan fm.SyncRequest, 100), let: make(chan struct{})}
}

func (g *gated) Sync(ctx context.Context, req fm.SyncRequest, _ fm.ProgressFunc) (*fm.SyncResult, error) {
	g.started <- req
	select {
	case <-g.let:
		return &fm.SyncResult{Library: req.Library, Full: req.Mode == fm.SyncFull}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (g *gated) SyncDirectory(_ context.Context, domain string, _ fm.Fence) (*fm.DirectoryResult, error) {
	return &fm.DirectoryResult{Domain: domain}, nil
}

// next checks that a sync of library runs, waits for it to reach the
// syncer and checks it is an incremental one.
func (g *gated) next(t *testing.T, sc *schedule.Scheduler, library string) {
	t.Helper()
	if !statusOf(sc, library).Running {
		t.Fatalf("no sync of %s runs", library)
	}
	if req := recv(t, g.started, "the sync of "+library+" reaching the syncer"); req.Library != library || req.Mode != fm.SyncAuto {
		t.Fatalf("sync %+v started, want an incremental one of %s", req, library)
	}
}

// finish lets the sync of name that runs end, and waits for its end.
func (g *gated) finish(t *testing.T, sc *schedule.Scheduler, name string) {
	t.Helper()
	events := joinRunning(t, sc, name)
	send(t, g.let, struct{}{}, "the sync of "+name)
	if _, final := drain(t, events); final.Error != "" {
		t.Fatalf("the sync of %s failed: %s", name, final.Error)
	}
}

// idle checks that no sync of name runs, none is pending (it would have
// started when the last one ended) and no other sync started.
func (g *gated) idle(t *testing.T, sc *schedule.Scheduler, name string) {
	t.Helper()
	if st := statusOf(sc, name); st.Running {
		t.Errorf("a sync of %s runs: %+v", name, st)
	}
	if n := len(g.started); n != 0 {
		t.Errorf("%d more syncs started", n)
	}
}

// joinRunning follows the sync of name that runs, failing the test if none
// does.
func joinRunning(t *testing.T, sc *schedule.Scheduler, name string) <-chan schedule.Event {
	t.Helper()
	events := make(chan schedule.Event, 100)
	if started, err := sc.Follow(context.Background(), name, fm.SyncAuto, events); err != nil || started {
		t.Fatalf("no sync of %s was running (Follow: started %v, %v)", name, started, err)
	}
	return events
}

// notifyAll calls Notify n times at once.
func notifyAll(sc *schedule.Scheduler, library string, n int) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { sc.Notify(library) })
	}
	wg.Wait()
}

// Notifications while a library syncs, whatever started the sync, bring
// one incremental sync after it, however many they are.
func TestNotifyWhileSyncing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(sc *schedule.Scheduler)
		mode  fm.SyncMode
		n     int
	}{
		{"one during a scheduled sync", (*schedule.Scheduler).IncrementalTick, fm.SyncAuto, 1},
		{"100 during a scheduled sync", (*schedule.Scheduler).IncrementalTick, fm.SyncAuto, 100},
		{"100 during an admin's full sync", func(sc *schedule.Scheduler) { sc.Trigger("lib", fm.SyncFull) }, fm.SyncFull, 100},
		{"one during a notified sync", func(sc *schedule.Scheduler) { sc.Notify("lib") }, fm.SyncAuto, 1},
		{"100 during a notified sync", func(sc *schedule.Scheduler) { sc.Notify("lib") }, fm.SyncAuto, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGated()
				sc := newScheduler(t, schedule.Options{Syncer: g})
				tc.start(sc)
				if req := recv(t, g.started, "the first sync"); req.Mode != tc.mode {
					t.Fatalf("the first sync %+v, want mode %v", req, tc.mode)
				}
				notifyAll(sc, "lib", tc.n)
				g.finish(t, sc, "lib")
				g.next(t, sc, "lib")
				g.finish(t, sc, "lib")
				g.idle(t, sc, "lib")
				if st := statusOf(sc, "lib"); st.LastIncremental == nil || (tc.mode == fm.SyncFull) != (st.LastFull != nil) {
					t.Errorf("status %+v: last full %+v, last incremental %+v", st, st.LastFull, st.LastIncremental)
				}
			})
		})
	}
}

// A notification with no sync of the library running starts one, recorded
// as any incremental sync.
func TestNotifyStartsASync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGated()
		metrics := schedule.NewMetrics(prometheus.NewRegistry())
		sc := newScheduler(t, schedule.Options{Syncer: g, Metrics: metrics})
		sc.Notify("lib")
		if st := statusOf(sc, "lib"); !st.Running {
			t.Errorf("status after Notify %+v, want it running", st)
		}
		g.next(t, sc, "lib")
		g.finish(t, sc, "lib")
		g.idle(t, sc, "lib")
		if st := statusOf(sc, "lib"); st.LastIncremental == nil || st.LastError != "" {
			t.Errorf("status %+v", st)
		}
		if testutil.ToFloat64(metrics.LastSuccess().WithLabelValues("lib", "incremental")) == 0 {
			t.Error("the notified sync's success was not recorded")
		}
	})
}

// Once the pending sync starts, it is the running one: a notification then
// brings one more.
func TestNotifyAfterThePendingSyncStarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGated()
		sc := newScheduler(t, schedule.Options{Syncer: g})
		sc.Notify("lib")
		g.next(t, sc, "lib")
		sc.Notify("lib")
		g.finish(t, sc, "lib")
		g.next(t, sc, "lib")
		sc.Notify("lib")
		sc.Notify("lib")
		g.finish(t, sc, "lib")
		g.next(t, sc, "lib")
		g.finish(t, sc, "lib")
		g.idle(t, sc, "lib")
	})
}

// A notified sync whose lease another process holds (a replica syncing the
// library) waits for it, then syncs: whether it was started at once or
// pending behind a sync here. (The runs try for the lease every second: the
// test's clock is synctest's.)
func TestNotifiedSyncWaitsForTheLease(t *testing.T) {
	for _, tc := range []struct {
		name       string
		syncedHere bool
	}{
		{"nothing syncing here", false},
		{"pending behind a sync here", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ls := fmtest.NewLeases("replica-a")
				g := newGated()
				sc := newScheduler(t, schedule.Options{Syncer: g, Leases: ls})
				if tc.syncedHere {
					sc.Trigger("lib", fm.SyncAuto)
					g.next(t, sc, "lib")
				}
				giveBack := ls.TakeWhenFree("replica-b", "lib") // as soon as this process gives it back
				sc.Notify("lib")
				if tc.syncedHere {
					g.finish(t, sc, "lib")
				}
				recv(t, ls.Refusals(), "the notified sync asking for the lease")
				events := joinRunning(t, sc, "lib") // the notified sync, waiting
				giveBack()
				select {
				case req := <-g.started:
					if req.Mode != fm.SyncAuto {
						t.Errorf("sync %+v, want an incremental one", req)
					}
				case ev := <-events:
					t.Fatalf("the notified sync ended without syncing: %+v", ev)
				case <-time.After(waitBound):
					t.Fatalf("the notified sync did not sync within %s of the lease's release", waitBound)
				}
				send(t, g.let, struct{}{}, "the notified sync")
				if _, final := drain(t, events); final.Error != "" || final.Result == nil {
					t.Errorf("the notified sync's final event %+v", final)
				}
				g.idle(t, sc, "lib")
			})
		})
	}
}

// Notifications of what the scheduler does not sync as a library start
// nothing.
func TestNotifyIgnoresUnknownLibraries(t *testing.T) {
	g := newGated()
	sc := newScheduler(t, schedule.Options{Syncer: g, Plan: schedule.Plan{Directories: []string{"example.com"}, Libraries: libraries("lib")}})
	for _, name := range []string{"nope", schedule.DirectoryJob("example.com"), ""} {
		sc.Notify(name)
	}
	for _, st := range sc.Status() {
		if st.Running {
			t.Errorf("a notification of another name started a sync of %s", st.Name)
		}
	}
	g.idle(t, sc, "lib")
}

// Stop cancels the running sync and drops the pending one; notifications
// then start nothing.
func TestStopDropsThePendingSync(t *testing.T) {
	g := newGated()
	sc := newScheduler(t, schedule.Options{Syncer: g})
	sc.Notify("lib")
	g.next(t, sc, "lib")
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				sc.Notify("lib")
			}
		})
	}
	sc.Stop()
	wg.Wait()
	sc.Notify("lib")
	g.idle(t, sc, "lib")
}

// The function OnIncrementalTick sets is called at each tick, in a
// goroutine of its own: a tick does not wait for it.
func TestOnIncrementalTick(t *testing.T) {
	called, hold := make(chan struct{}), make(chan struct{})
	defer close(hold)
	sc := newScheduler(t, schedule.Options{Syncer: &fenced{}})
	sc.OnIncrementalTick(func(time.Duration) {
		called <- struct{}{}
		<-hold
	})
	sc.IncrementalTick() // would never return if it called fn itself
	sc.IncrementalTick()
	recv(t, called, "the first tick's call")
	recv(t, called, "the second tick's call")
}

// The incremental schedule's ticks call it, each second of "@every 1s" (on
// synctest's clock), telling it 9/10 of the period, within which another
// process's run makes the tick's redundant.
func TestOnIncrementalTickFollowsTheSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		type call struct {
			at     time.Time
			within time.Duration
		}
		called := make(chan call, 10)
		sc := newScheduler(t, schedule.Options{Syncer: &fenced{}, Index: index{"lib": true}, Incremental: "@every 1s"})
		sc.OnIncrementalTick(func(within time.Duration) { called <- call{time.Now(), within} })
		start := time.Now()
		sc.Start()
		for tick := range 3 {
			c := recv(t, called, fmt.Sprintf("tick %d of the schedule", tick+1))
			if want := start.Add(time.Duration(tick+1) * time.Second); !c.at.Equal(want) || c.within != 900*time.Millisecond {
				t.Errorf("tick %d at %s, within %s; want at %s, within 900ms", tick+1, c.at.Sub(start), c.within, want.Sub(start))
			}
		}
	})
}

// A burst of notifications brings a sync a tenth of a second or so, not
// syncs back to back: the run pending when a sync ends waits for the gap
// before it syncs, and notifications meanwhile add no run after it (it has
// read nothing yet); one arriving while nothing runs starts at once.
func TestPendingSyncWaitsForTheGap(t *testing.T) {
	g := newGated()
	sc := newScheduler(t, schedule.Options{Syncer: g})
	waits := make(chan time.Duration, 10)
	gap := make(chan time.Time)
	sc.SetAfter(func(d time.Duration) <-chan time.Time {
		waits <- d
		return gap
	})
	sc.Notify("lib")
	if req := recv(t, g.started, "the notified sync"); req.Library != "lib" {
		t.Fatalf("sync %+v started, want lib's", req)
	}
	if n := len(waits); n != 0 {
		t.Fatalf("the first notified sync waited %d times, want at once", n)
	}
	notifyAll(sc, "lib", 10)
	send(t, g.let, struct{}{}, "the first sync") // it ends: the pending one waits for the gap
	select {
	case d := <-waits:
		if d < 50*time.Millisecond || d > time.Second {
			t.Errorf("the pending sync waits %v, want a tenth of a second or so", d)
		}
	case req := <-g.started:
		t.Fatalf("the pending sync %+v started at once, without waiting for a gap", req)
	case <-time.After(waitBound):
		t.Fatalf("the pending sync neither waited for a gap nor started within %s", waitBound)
	}
	notifyAll(sc, "lib", 10)
	if !statusOf(sc, "lib").Running {
		t.Error("the library shows as not running while its next sync waits for the gap")
	}
	if n := len(g.started); n != 0 {
		t.Fatalf("%d syncs started during the gap", n)
	}
	send(t, gap, time.Time{}, "the pending sync, waiting for the gap,")
	g.next(t, sc, "lib")
	g.finish(t, sc, "lib")
	g.idle(t, sc, "lib")
	if n := len(waits); n != 0 {
		t.Errorf("another sync waited for the gap: the notifications during the gap asked for a run after it")
	}
}
