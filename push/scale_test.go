package push_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/push"
)

// frozenClock is a time that moves only when the test moves it.
type frozenClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *frozenClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *frozenClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// memWatcher is a Watcher of no Drive: every watch succeeds, with the
// expiration asked for. It records when, on its clock, each call was made.
type memWatcher struct {
	now            func() time.Time
	mu             sync.Mutex
	watches, stops []time.Time
}

func (w *memWatcher) Watch(_ context.Context, _ push.Feed, id, _, _ string, expiration time.Time) (string, time.Time, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.watches = append(w.watches, w.now())
	return "resource-" + id, expiration, nil
}

func (w *memWatcher) Stop(context.Context, push.Feed, string, string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stops = append(w.stops, w.now())
	return nil
}

// calls returns how many watches and stops were made.
func (w *memWatcher) calls() (watches, stops int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.watches), len(w.stops)
}

// perSecond counts the calls at each time.
func perSecond(times []time.Time) map[time.Time]int {
	out := map[time.Time]int{}
	for _, t := range times {
		out[t]++
	}
	return out
}

// drives returns n discovered shared-drive libraries.
func drives(n int) []fm.Library {
	libs := make([]fm.Library, n)
	for i := range libs {
		id := fmt.Sprintf("0AD%05d", i)
		libs[i] = discovered(domain, id, id)
	}
	return libs
}

// scaleEnv is a Service of many discovered shared drives on memWatcher, on
// a frozen clock, its calls at rate a second.
type scaleEnv struct {
	set     *fm.LibrarySet
	clock   *frozenClock
	watcher *memWatcher
	store   *store
	svc     *push.Service
}

func newScaleEnv(t *testing.T, libs []fm.Library, rate float64) *scaleEnv {
	t.Helper()
	e := &scaleEnv{set: fm.NewLibrarySet(nil), clock: &frozenClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}}
	e.set.SetDiscovered(domain, libs)
	e.watcher = &memWatcher{now: e.clock.Now}
	leases := fmtest.NewLeases("replica-a")
	e.store = newStore(leases)
	svc, err := push.New(push.Options{
		Address: "https://fm.example.com/push", ChannelTTL: ttl, Libraries: e.set, CallsPerSecond: rate,
		Watcher: e.watcher, Channels: e.store, Leases: leases, Notifier: &notifier{},
		Logger: slog.New(slog.DiscardHandler), Now: e.clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.svc = svc
	run(t, svc)
	return e
}

// TestWatchRate: with 2,000 feeds at start, the watches keep within the
// rate, a second's worth at a time, and are not slower than it.
func TestWatchRate(t *testing.T) {
	const feeds, rate = 2000, 20
	e := newScaleEnv(t, drives(feeds), rate)
	start := e.clock.Now()
	seconds := 0
	for ; ; seconds++ {
		step(t, e.svc)
		if watches, _ := e.watcher.calls(); watches == feeds {
			break
		}
		if seconds > feeds/rate+1 {
			t.Fatalf("%d watches after %d s, want %d by %d s", len(e.watcher.watches), seconds, feeds, feeds/rate)
		}
		e.clock.advance(time.Second)
	}
	if seconds < feeds/rate-1 {
		t.Errorf("%d watches in %d s, faster than %d a second", feeds, seconds, rate)
	}
	for at, n := range perSecond(e.watcher.watches) {
		if n > rate {
			t.Errorf("%d watches at %s, over %d a second", n, at.Sub(start), rate)
		}
	}
	if _, stops := e.watcher.calls(); stops != 0 {
		t.Errorf("%d stops", stops)
	}
	sum := e.svc.Summary()
	if sum.Watched != feeds || sum.Polling != 0 || sum.Domains[domain].Watched != feeds {
		t.Errorf("summary %+v, want every feed watched", sum)
	}
}

// gatedWatcher is a memWatcher whose watches come in by groups of want:
// each waits until its group has come (or a second has passed). It records
// the most in flight at once.
type gatedWatcher struct {
	memWatcher
	want     int
	gate     sync.Cond
	arrived  int
	inFlight int
	most     int
}

func newGatedWatcher(now func() time.Time, want int) *gatedWatcher {
	w := &gatedWatcher{memWatcher: memWatcher{now: now}, want: want}
	w.gate.L = &w.mu
	return w
}

func (w *gatedWatcher) Watch(_ context.Context, _ push.Feed, id, _, _ string, expiration time.Time) (string, time.Time, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.arrived++
	groupEnd := (w.arrived + w.want - 1) / w.want * w.want
	w.inFlight++
	w.most = max(w.most, w.inFlight)
	w.gate.Broadcast()
	timeout := time.AfterFunc(time.Second, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.gate.Broadcast()
	})
	defer timeout.Stop()
	for start := time.Now(); w.arrived < groupEnd && time.Since(start) < time.Second; {
		w.gate.Wait()
	}
	w.watches = append(w.watches, w.now())
	w.inFlight--
	return "resource-" + id, expiration, nil
}

// TestWatchesAtOnce: the keeper registers the channels of several feeds at
// once, a few at a time: a watch waits on Drive, and one at a time would
// take far longer than the rate allows (10,000 drives: 12 minutes where
// the rate allowed under 3).
func TestWatchesAtOnce(t *testing.T) {
	const feeds = 2 * push.TendAtOnce
	e := &scaleEnv{set: fm.NewLibrarySet(nil), clock: &frozenClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}}
	e.set.SetDiscovered(domain, drives(feeds))
	watcher := newGatedWatcher(e.clock.Now, push.TendAtOnce)
	leases := fmtest.NewLeases("replica-a")
	svc, err := push.New(push.Options{
		Address: "https://fm.example.com/push", ChannelTTL: ttl, Libraries: e.set, CallsPerSecond: 10 * feeds,
		Watcher: watcher, Channels: newStore(leases), Leases: leases, Notifier: &notifier{},
		Logger: slog.New(slog.DiscardHandler), Now: e.clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	run(t, svc)
	start := time.Now()
	step(t, svc)
	if watches, _ := watcher.calls(); watches != feeds {
		t.Fatalf("%d watches, want %d", watches, feeds)
	}
	watcher.mu.Lock()
	defer watcher.mu.Unlock()
	if watcher.most != push.TendAtOnce {
		t.Errorf("at most %d watches at once (%d feeds in %v), want %d", watcher.most, feeds, time.Since(start).Round(time.Millisecond), push.TendAtOnce)
	}
}

// TestRenewalsSpread: channels registered at once are renewed spread over
// half a margin, each before it expires, rather than all at once.
func TestRenewalsSpread(t *testing.T) {
	const feeds, parts = 2000, 10
	e := newScaleEnv(t, drives(feeds), 10*feeds) // no limit to speak of
	step(t, e.svc)
	if watches, _ := e.watcher.calls(); watches != feeds {
		t.Fatalf("%d watches at start, want %d", watches, feeds)
	}
	margin := push.RenewalMargin(ttl)
	e.clock.advance(ttl - margin - time.Second)
	step(t, e.svc)
	if watches, _ := e.watcher.calls(); watches != feeds {
		t.Fatalf("%d renewals before a margin from the expiration", watches-feeds)
	}
	e.clock.advance(time.Second)
	renewed := 0
	for i := range parts {
		e.clock.advance(margin / 2 / parts)
		step(t, e.svc)
		watches, _ := e.watcher.calls()
		n := watches - feeds - renewed
		renewed += n
		if n > 2*feeds/parts {
			t.Errorf("%d renewals in slice %d of half a margin, want about %d", n, i, feeds/parts)
		}
	}
	if watches, stops := e.watcher.calls(); renewed != feeds || stops != feeds {
		t.Errorf("%d renewals, %d stops by half a margin before the expiration, want %d", watches-feeds, stops, feeds)
	}
	if got := len(e.store.snapshot()); got != feeds {
		t.Errorf("%d channels stored, want %d", got, feeds)
	}
}

// TestRemovalFirst: the channel of a drive removed is stopped before any
// other call, however many watches wait for their turn.
func TestRemovalFirst(t *testing.T) {
	const feeds, rate = 2000, 20
	libs := drives(feeds)
	e := newScaleEnv(t, libs, rate)
	step(t, e.svc)
	removed := "drive:" + libs[0].ID
	stored := e.store.snapshot()
	if len(stored) != rate || !slices.ContainsFunc(stored, func(ch fm.PushChannel) bool { return ch.Feed == removed }) {
		t.Fatalf("%d channels stored, want those of the first %d feeds, %s's among them", len(stored), rate, removed)
	}
	e.set.SetDiscovered(domain, libs[1:])
	e.clock.advance(time.Second / rate)
	step(t, e.svc)
	if watches, stops := e.watcher.calls(); watches != rate || stops != 1 {
		t.Errorf("%d watches, %d stops once a call is allowed, want the stop alone", watches, stops)
	}
	for _, ch := range e.store.snapshot() {
		if ch.Feed == removed {
			t.Errorf("the removed drive's channel %s is stored", ch.ID)
		}
	}
}
