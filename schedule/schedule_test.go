package schedule_test

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/schedule"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

var quiet = slog.New(slog.DiscardHandler)

// syncs plays a syncer: sync and directory do each sync.
type syncs struct {
	sync      func(ctx context.Context, req fm.SyncRequest, progress fm.ProgressFunc) (*fm.SyncResult, error)
	directory func(ctx context.Context, domain string, fence fm.Fence) (*fm.DirectoryResult, error)
}

func (s *syncs) Sync(ctx context.Context, req fm.SyncRequest, progress fm.ProgressFunc) (*fm.SyncResult, error) {
	return s.sync(ctx, req, progress)
}

func (s *syncs) SyncDirectory(ctx context.Context, domain string, fence fm.Fence) (*fm.DirectoryResult, error) {
	return s.directory(ctx, domain, fence)
}

// index plays an index where the libraries it holds true were synced.
type index map[string]bool

func (i index) Library(_ context.Context, id string) (*fm.LibraryState, error) {
	if !i[id] {
		return nil, fm.Errorf(fm.ENOTFOUND, "Library %s was never synced.", id)
	}
	return &fm.LibraryState{ID: id}, nil
}

// newScheduler returns a scheduler, stopped when the test ends, of opts
// with these defaults: a plan of the library "lib", an incremental schedule
// every minute, a full one at 3:00, a concurrency of 2,
// an index where nothing was synced, leases always free, no log.
func newScheduler(t *testing.T, opts schedule.Options) *schedule.Scheduler {
	t.Helper()
	if opts.Plan.Libraries == nil && opts.Plan.Directories == nil {
		opts.Plan.Libraries = libraries("lib")
	}
	opts.Incremental, opts.Full = cmp.Or(opts.Incremental, "@every 1m"), "0 3 * * *"
	if opts.Concurrency == 0 {
		opts.Concurrency = 2
	}
	if opts.Leases == nil {
		opts.Leases = fmtest.NewLeases("replica-a")
	}
	if opts.Index == nil {
		opts.Index = index{}
	}
	opts.Logger = cmp.Or(opts.Logger, quiet)
	sc, err := schedule.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sc.Stop)
	return sc
}

func statusOf(sc *schedule.Scheduler, name string) schedule.JobStatus {
	for _, st := range sc.Status() {
		if st.Name == name {
			return st
		}
	}
	return schedule.JobStatus{}
}

// waitBound bounds the tests' waits for what another goroutine does: it
// comes long before, or never.
const waitBound = 10 * time.Second

// recv receives from ch; nothing within waitBound fails the test, saying
// that what did not come.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitBound):
		t.Fatalf("%s: nothing after %s", what, waitBound)
		var zero T
		return zero
	}
}

// send sends v on ch; no receiver within waitBound fails the test, saying
// who did not take it.
func send[T any](t *testing.T, ch chan<- T, v T, who string) {
	t.Helper()
	select {
	case ch <- v:
	case <-time.After(waitBound):
		t.Fatalf("%s: not waiting after %s", who, waitBound)
	}
}

// drain reads a sync's events until the scheduler closes their channel
// (within waitBound, else it fails the test).
func drain(t *testing.T, events <-chan schedule.Event) (progress int, final schedule.Event) {
	t.Helper()
	deadline := time.After(waitBound)
	for {
		select {
		case ev, ok := <-events:
			switch {
			case !ok:
				return progress, final
			case ev.Final():
				final = ev
			default:
				progress++
			}
		case <-deadline:
			t.Fatalf("the sync's events did not end within %s (%d progress events, final %+v)", waitBound, progress, final)
		}
	}
}

// follow follows a job's sync in mode to its end and returns its final event.
func follow(t *testing.T, sc *schedule.Scheduler, name string, mode fm.SyncMode) schedule.Event {
	t.Helper()
	events := make(chan schedule.Event, 100)
	if _, err := sc.Follow(context.Background(), name, mode, events); err != nil {
		t.Fatal(err)
	}
	_, final := drain(t, events)
	return final
}

func TestFollowAndJoin(t *testing.T) {
	release := make(chan struct{})
	s := &syncs{sync: func(ctx context.Context, req fm.SyncRequest, progress fm.ProgressFunc) (*fm.SyncResult, error) {
		progress(fm.Progress{Library: req.Library, Phase: "listing", Done: 1})
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &fm.SyncResult{Library: req.Library, Full: req.Mode == fm.SyncFull, Folders: 51, Calls: 7}, nil
	}}
	sc := newScheduler(t, schedule.Options{Syncer: s})

	first, second := make(chan schedule.Event, 100), make(chan schedule.Event, 100)
	started, err := sc.Follow(context.Background(), "lib", fm.SyncFull, first)
	if err != nil || !started {
		t.Fatalf("first Follow: %v %v", started, err)
	}
	if started, _ := sc.Follow(context.Background(), "lib", fm.SyncFull, second); started {
		t.Error("a second sync of the library started while one was running")
	}
	if sc.Trigger("lib", fm.SyncAuto) {
		t.Error("Trigger doubled a running sync")
	}
	if st := statusOf(sc, "lib"); !st.Running {
		t.Errorf("status while it runs %+v", st)
	}
	close(release)
	n, final := drain(t, first)
	_, joined := drain(t, second)
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
	if _, err := sc.Follow(context.Background(), "nope", fm.SyncFull, nil); fm.ErrorCode(err) != fm.ENOTFOUND {
		t.Errorf("unknown library: %v", err)
	}
}

// storage.concurrency bounds the libraries syncing at once: with 1, one
// library syncs at a time.
func TestConcurrencyBound(t *testing.T) {
	var mu sync.Mutex
	inFlight, most := 0, 0
	s := &syncs{sync: func(_ context.Context, req fm.SyncRequest, _ fm.ProgressFunc) (*fm.SyncResult, error) {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		time.Sleep(10 * time.Millisecond) // time for another sync to start, were it let
		mu.Lock()
		inFlight--
		mu.Unlock()
		return &fm.SyncResult{Library: req.Library}, nil
	}}
	sc := newScheduler(t, schedule.Options{Syncer: s, Concurrency: 1, Plan: schedule.Plan{Libraries: libraries("a", "b", "c")}})
	var chans []chan schedule.Event
	for _, name := range []string{"a", "b", "c"} {
		ch := make(chan schedule.Event, 100)
		chans = append(chans, ch)
		if _, err := sc.Follow(context.Background(), name, fm.SyncFull, ch); err != nil {
			t.Fatal(err)
		}
	}
	for _, ch := range chans {
		if _, final := drain(t, ch); final.Error != "" {
			t.Fatal(final.Error)
		}
	}
	if most != 1 {
		t.Errorf("%d libraries synced at once with storage.concurrency 1", most)
	}
}

// Stop cancels a running sync.
func TestStopCancelsRunningSync(t *testing.T) {
	s := &syncs{sync: func(ctx context.Context, req fm.SyncRequest, progress fm.ProgressFunc) (*fm.SyncResult, error) {
		progress(fm.Progress{Library: req.Library, Phase: "listing"})
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	sc := newScheduler(t, schedule.Options{Syncer: s})
	events := make(chan schedule.Event, 100)
	if _, err := sc.Follow(context.Background(), "lib", fm.SyncFull, events); err != nil {
		t.Fatal(err)
	}
	// The first progress event: the sync is listing.
	if ev := recv(t, events, "the sync's first progress event"); ev.Final() {
		t.Fatalf("the sync ended before Stop: %+v", ev)
	}
	start := time.Now()
	sc.Stop()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Stop took %v", d)
	}
	if _, final := drain(t, events); final.Error == "" {
		t.Errorf("final event %+v, want the cancellation", final)
	}
}

// A failed sync fails only its job: its status and the metrics say so, the
// other job syncs.
func TestStatusRecordsFailures(t *testing.T) {
	s := &syncs{sync: func(_ context.Context, req fm.SyncRequest, _ fm.ProgressFunc) (*fm.SyncResult, error) {
		if req.Library == "gone" {
			return nil, errors.New("root folder missing-folder not found")
		}
		return &fm.SyncResult{Library: req.Library, Full: true, Folders: 2}, nil
	}}
	metrics := schedule.NewMetrics(prometheus.NewRegistry())
	sc := newScheduler(t, schedule.Options{Syncer: s, Metrics: metrics, Plan: schedule.Plan{Libraries: libraries("gone", "mine")}})
	if final := follow(t, sc, "gone", fm.SyncFull); final.Error == "" {
		t.Fatal("no error")
	}
	if final := follow(t, sc, "mine", fm.SyncFull); final.Error != "" {
		t.Errorf("mine failed with gone: %s", final.Error)
	}
	st := statusOf(sc, "gone")
	if st.LastError == "" || st.LastErrorAt.IsZero() || st.LastFull != nil {
		t.Errorf("status %+v", st)
	}
	if st := statusOf(sc, "mine"); st.LastError != "" || st.LastFull == nil {
		t.Errorf("status of mine %+v", st)
	}
	if n := testutil.ToFloat64(metrics.Failures().WithLabelValues("gone", "full")); n != 1 {
		t.Errorf("%v failures counted for gone, want 1", n)
	}
	if n := testutil.ToFloat64(metrics.Failures().WithLabelValues("mine", "full")); n != 0 {
		t.Errorf("%v failures counted for mine", n)
	}
}

// The scheduler's status of a directory names its unreadable groups.
func TestDirectoryStatusNamesUnreadableGroups(t *testing.T) {
	unreadable := []string{"hidden@gamma.org", "outside@gamma.org"}
	s := &syncs{directory: func(_ context.Context, domain string, _ fm.Fence) (*fm.DirectoryResult, error) {
		return &fm.DirectoryResult{Domain: domain, Users: 2, Groups: 3, UnreadableGroups: unreadable}, nil
	}}
	sc := newScheduler(t, schedule.Options{Syncer: s, Plan: schedule.Plan{Directories: []string{"alpha.example", "beta.example"}}})
	if final := follow(t, sc, schedule.DirectoryJob("beta.example"), fm.SyncFull); final.Error != "" || final.Directory == nil {
		t.Fatalf("final event %+v", final)
	}
	st := statusOf(sc, schedule.DirectoryJob("beta.example"))
	if st.LastFull == nil || !slices.Equal(st.LastFull.UnreadableGroups, unreadable) || st.LastError != "" {
		t.Errorf("status %+v (last full %+v)", st, st.LastFull)
	}
}

// libraries returns a set of libraries of those IDs.
func libraries(ids ...string) *fm.LibrarySet {
	libs := make([]fm.Library, len(ids))
	for i, id := range ids {
		libs[i] = fm.Library{ID: id, Name: id}
	}
	return fm.NewLibrarySet(libs)
}
