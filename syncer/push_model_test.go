package syncer_test

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/googleclient"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/googlefake"
	"github.com/foldermirror/foldermirror/internal/wire"
	"github.com/foldermirror/foldermirror/push"
	"github.com/foldermirror/foldermirror/schedule"
	"github.com/foldermirror/foldermirror/syncer"
	drive "google.golang.org/api/drive/v3"
)

var pushModelSeeds = flag.Int("push-model-seeds", defaultPushModelSeeds,
	"random mutation sequences the push-driven model-based test runs on each backend (2, or 6 with -tags long, unless set)")

const (
	// pushBatches is how many batches of changes a run makes, of the
	// three kinds in turn.
	pushBatches = 9
	// A held burst makes heldGroups groups of heldGroup changes, each group
	// notified before the next is made.
	heldGroups, heldGroup = 12, 2
	// notificationDelay is the fake's coalescing delay in the seeds that
	// have one.
	notificationDelay = 10 * time.Millisecond
	// settleBound bounds the wait for the chain to settle: it settles long
	// before, or never.
	settleBound = time.Minute
	// never is the schedules' spec: no scheduled sync starts while a test
	// runs, so that the notifications start every sync.
	never = "@every 10000h"
	// channelTTL is the channels' lifetime, renewalMargin the push
	// service's margin for it (a tenth).
	channelTTL, renewalMargin = time.Hour, 6 * time.Minute
)

// TestPushDrivenSyncsMatchFullSync is the model-based test
// (TestIncrementalMatchesFullSync) with Drive's push notifications driving
// the syncs, through the real chain: the fake's channels post to a
// push.Service on an httptest server on 127.0.0.1, which notifies a
// schedule.Scheduler (whose schedules never fire), which runs the syncer.
// After each batch of random changes the test waits for the chain to settle
// (pushChain.settle), then compares the index as TestIncrementalMatchesFullSync
// does. Batches are, in turn: steady (changes at full speed while the
// notified syncs run, then the channels renewed, as when they near their
// expiry), bursts (three times as many changes), and held bursts, in which
// the syncs wait until every change has been notified, so that each
// library has exactly one sync running and at most one pending: the syncs
// of a held burst are then exactly min(notifications, 2), and over the run
// fewer than the notifications, while the index is exact. Seeds alternate
// the fake logging items alone or every item (as in the model test) and
// the fake's coalescing delay (none, or notificationDelay). With -tags
// long each seed runs on bbolt and on PostgreSQL
// (FOLDERMIRROR_TEST_POSTGRES); every day the even seeds run on PostgreSQL
// and the odd ones on bbolt (all on bbolt without a PostgreSQL server).
// The everyday run runs two seeds, -tags long six, -push-model-seeds any
// number. The subtests run at once with the package's other parallel
// tests.
func TestPushDrivenSyncsMatchFullSync(t *testing.T) {
	t.Parallel()
	postgres := hasPostgres(t)
	for seed := range uint64(*pushModelSeeds) {
		c := pushCase{seed: seed, alone: seed%2 == 0}
		if seed%4 == 1 || seed%4 == 2 {
			c.delay = notificationDelay
		}
		backends := []string{fmtest.Bolt, fmtest.Postgres}
		switch {
		case !postgres:
			backends = []string{fmtest.Bolt}
		case !pushModelBothBackends:
			backends = backends[1-seed%2 : 2-seed%2]
		}
		for _, backend := range backends {
			name := fmt.Sprintf("%s/seed %d, item alone %t, delay %s", backend, seed, c.alone, c.delay)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				runPushModel(t, backend, c)
			})
		}
	}
}

// pushCase is one run of the push-driven model test.
type pushCase struct {
	seed  uint64
	alone bool          // the fake logs items alone (LogItemAlone)
	delay time.Duration // the fake's notification delay
}

// batchKind is a kind of batch of changes of the push-driven model test.
type batchKind int

const (
	steady batchKind = iota // 20 changes at full speed, syncs running meanwhile, then a renewal
	burst                   // 60 changes at full speed, syncs running meanwhile
	held                    // heldGroups groups of changes while the syncs wait, each notified
)

func (k batchKind) String() string { return [...]string{"steady", "burst", "held burst"}[k] }

// runPushModel runs one seeded sequence of batches of changes, the syncs
// started by the notifications, into an index on backend.
func runPushModel(t *testing.T, backend string, c pushCase) {
	m := newMutator(t, c.seed)
	m.fake.LogItemAlone(c.alone)
	m.fake.SetNotificationDelay(c.delay)
	libs := m.libraries()
	inc := newEnvOn(t, backend, m.fake, libs...)
	inc.sync("mydrive")
	inc.sync("shared")
	chain := startChain(t, inc)
	for batch := range pushBatches {
		kind := batchKind((batch + int(c.seed)) % 3)
		when := fmt.Sprintf("batch %d (%s)", batch, kind)
		before := chain.counts()
		chain.makeChanges(m, kind)
		notified := chain.counts()
		chain.syncs.release()
		chain.settle(when)
		after := chain.counts()
		for _, lib := range []string{"mydrive", "shared"} {
			if n, syncs := notified.notifications[lib]-before.notifications[lib], after.syncs[lib]-before.syncs[lib]; kind == held && syncs != min(n, 2) {
				t.Errorf("%s: %s: %d notifications while its syncs were held, then %d syncs; want %d (one running, one pending)",
					when, lib, n, syncs, min(n, 2))
			}
			checkLibrary(t, when+", "+lib, inc, chain.drive, libs, lib)
		}
		if t.Failed() {
			t.Fatalf("after %s; mutations so far:\n%s", when, m.log)
		}
	}
	total := chain.counts()
	for _, lib := range []string{"mydrive", "shared"} {
		if total.syncs[lib] >= total.notifications[lib] {
			t.Errorf("%s: %d syncs for %d notifications: none coalesced", lib, total.syncs[lib], total.notifications[lib])
		}
	}
	t.Logf("notifications %v, syncs %v; accounts deleted: %d", total.notifications, total.syncs, len(m.gone))
}

// makeChanges makes a batch of changes of that kind; a held burst holds the
// syncs back until release.
func (c *pushChain) makeChanges(m *mutator, kind batchKind) {
	switch kind {
	case steady:
		for range 20 {
			m.mutate()
		}
		c.renew()
	case burst:
		for range 60 {
			m.mutate()
		}
	case held:
		c.syncs.hold()
		for range heldGroups {
			for range heldGroup {
				m.mutate()
			}
			c.env.fake.FlushNotifications()
		}
	}
}

// renew has the keeper renew the channels, as it does when they near
// their expiry (the service's clock moved to within the renewal margin of
// it): it registers a new channel for each feed, then stops the old one,
// has the feed's libraries synced (the old channel may owe a message) and
// deletes it. renew waits until the old channels are deleted from the
// index, after all that.
func (c *pushChain) renew() {
	c.t.Helper()
	old := map[string]bool{}
	for _, ch := range c.env.fake.PushChannels() {
		old[ch.ID] = true
	}
	c.clock.advance(channelTTL - renewalMargin/2)
	c.push.Retry()
	deadline := time.Now().Add(settleBound)
	for !c.covered() || c.stored(old) {
		if time.Now().After(deadline) {
			c.t.Fatalf("the channels were not renewed after %s: %+v", settleBound, c.push.Status())
		}
		time.Sleep(time.Millisecond)
	}
}

// stored tells whether the index still has one of the channels ids names.
func (c *pushChain) stored(ids map[string]bool) bool {
	chans, err := c.env.db.Channels(context.Background())
	if err != nil {
		c.t.Fatal(err)
	}
	return slices.ContainsFunc(chans, func(ch fm.PushChannel) bool { return ids[ch.ID] })
}

// clock is the push service's time: the real time plus an offset the test
// moves forward, so that the channels near their expiry at once (the
// fake's channels expire by the real time, far later).
type clock struct{ offset atomic.Int64 }

func (c *clock) Now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *clock) advance(d time.Duration) { c.offset.Add(int64(d)) }

// pushChain is what carries Drive's changes to the index in the test: the
// fake's channels post to a push.Service, which notifies a scheduler,
// which runs the syncer.
type pushChain struct {
	t     *testing.T
	env   *env
	libs  []fm.Library
	sched *schedule.Scheduler
	push  *push.Service
	clock clock // the push service's
	notes *countingNotifier
	syncs *heldSyncer
	drive *drive.Service // Drive as the storage account
}

// startChain starts the chain of e's libraries, synced already: the
// receiver, the scheduler, and the keeper of the channels, and waits until
// a channel covers each feed.
func startChain(t *testing.T, e *env) *pushChain {
	t.Helper()
	e.fake.AllowHTTPWebhooks(true)
	c := &pushChain{t: t, env: e, libs: e.cfg.CoreLibraries(), drive: fmtest.DriveAs(t, e.fake, storage),
		syncs: &heldSyncer{Syncer: e.s, syncs: map[string]int{}, gate: closedGate()}}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	opts := wire.SchedulerOptions(e.cfg, schedule.Options{Syncer: c.syncs, Leases: e.db.Leases(), Index: e.db, Logger: quiet,
		Plan: schedule.Plan{Libraries: wire.Libraries(e.cfg)}})
	opts.Incremental, opts.Full = never, never
	opts.Plan.Directories = nil // the libraries alone: the test syncs no directory
	sched, err := schedule.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	c.sched = sched
	sched.Start()
	t.Cleanup(sched.Stop)
	c.notes = &countingNotifier{next: sched, n: map[string]int{}}
	clients, err := googleclient.New(wire.GoogleOptions(e.cfg))
	if err != nil {
		t.Fatal(err)
	}
	c.push, err = push.New(push.Options{Address: srv.URL + "/push/drive", ChannelTTL: channelTTL, Libraries: fm.NewLibrarySet(c.libs),
		Watcher: push.NewDriveWatcher(clients.Drive), Channels: e.db, Leases: e.db.Leases(), Notifier: c.notes, Logger: quiet, Now: c.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle(c.push.Path(), c.push)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.push.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(settleBound):
			t.Errorf("the push service's Run has not returned %s after its context ended", settleBound)
		}
	})
	c.waitForChannels()
	c.waitRegistrationSyncs()
	return c
}

// waitRegistrationSyncs waits until each library was notified once by its
// channel's registration (which has the changes before the channel's
// start token read), and the syncs that brings have ended, so that the
// batches count only their own.
func (c *pushChain) waitRegistrationSyncs() {
	c.t.Helper()
	deadline := time.Now().Add(settleBound)
	for slices.ContainsFunc(c.libs, func(l fm.Library) bool { return c.notes.counts()[l.ID] == 0 }) {
		if time.Now().After(deadline) {
			c.t.Fatalf("the channels' registrations did not notify every library within %s: %v", settleBound, c.notes.counts())
		}
		time.Sleep(time.Millisecond)
	}
	c.settle("the syncs the channels' registrations bring")
}

// waitForChannels waits until the keeper has registered a channel for
// every feed and each has delivered its sync message.
func (c *pushChain) waitForChannels() {
	c.t.Helper()
	deadline := time.Now().Add(settleBound)
	for !c.covered() {
		if time.Now().After(deadline) {
			c.t.Fatalf("no channel covers every feed after %s: %+v", settleBound, c.push.Status())
		}
		time.Sleep(time.Millisecond)
	}
	c.env.fake.FlushNotifications()
	for _, ch := range c.env.fake.PushChannels() {
		if ch.Delivered != 1 || ch.Failed != 0 || ch.Dropped != 0 {
			c.t.Fatalf("channel %s of %s %s: deliveries %+v; want its sync message delivered", ch.ID, ch.User, ch.DriveID, ch.Deliveries)
		}
	}
}

// covered tells whether each feed has a channel the service stored and
// the fake has live, one channel per feed.
func (c *pushChain) covered() bool {
	live := c.env.fake.PushChannels()
	status := c.push.Status()
	if len(live) != len(status) {
		return false
	}
	for _, st := range status {
		if st.Polling || !slices.ContainsFunc(live, func(ch googlefake.PushChannel) bool { return ch.ID == st.Channel }) {
			return false
		}
	}
	return true
}

// settle waits until the chain has synced every change made so far, then
// checks that nothing was lost on the way.
//
// The wait cannot end early. FlushNotifications returns only once every
// live channel has looked at every change recorded before the call and
// has had the receiver's answer to the message those changes call for; the
// receiver answers only after calling Notify, which, under the scheduler's
// lock, either starts a run of the library or leaves one pending behind the
// running one. From then on the scheduler's Status shows the library as
// running until a run begun after the notification has ended (a pending run
// starts under the same hold of the lock that ends the run before it), and
// a run reads Drive's changes after it began. So once no job shows as
// running, each library was synced past every change its feed notified.
// A channel stopped by a renewal is not flushed, but the keeper notified
// its feed's libraries after stopping it, before renew returned. The
// changes a feed did not notify are checked apart: Drive must have no
// change for a library's feed past its token (caughtUp), no post may have
// failed or been dropped, and no sync may have failed or fallen back to a
// full sync.
func (c *pushChain) settle(when string) {
	c.t.Helper()
	c.env.fake.FlushNotifications()
	deadline := time.Now().Add(settleBound)
	for c.running() {
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: the syncs have not ended after %s: %+v", when, settleBound, c.sched.Status())
		}
		time.Sleep(time.Millisecond)
	}
	for _, ch := range c.env.fake.PushChannels() {
		if ch.Failed != 0 || ch.Dropped != 0 {
			c.t.Errorf("%s: channel %s of %s %s: deliveries %+v; want none failed or dropped", when, ch.ID, ch.User, ch.DriveID, ch.Deliveries)
		}
	}
	for _, wrong := range c.syncs.wrongs() {
		c.t.Errorf("%s: %s", when, wrong)
	}
	for _, lib := range c.libs {
		c.caughtUp(when, lib)
	}
}

// running tells whether a job of the scheduler runs (or waits for a slot).
func (c *pushChain) running() bool {
	return slices.ContainsFunc(c.sched.Status(), func(st schedule.JobStatus) bool { return st.Running })
}

// caughtUp checks that Drive lists no change of lib's feed past the token
// of its last sync, asking changes.list as the syncer does.
func (c *pushChain) caughtUp(when string, lib fm.Library) {
	c.t.Helper()
	st, err := c.env.db.Library(context.Background(), lib.ID)
	if err != nil {
		c.t.Fatal(err)
	}
	call := c.drive.Changes.List(st.StartPageToken).IncludeRemoved(true).SupportsAllDrives(true).
		Fields("newStartPageToken,nextPageToken,changes(changeType,fileId,driveId,removed)")
	if lib.IsSharedDrive() {
		call = call.DriveId(lib.SharedDriveID).IncludeItemsFromAllDrives(true)
	}
	page, err := call.Do()
	if err != nil {
		c.t.Fatalf("%s: changes.list of %s from %s: %v", when, lib.ID, st.StartPageToken, err)
	}
	if len(page.Changes) > 0 {
		ch := page.Changes[0]
		c.t.Errorf("%s: %s synced up to token %s, yet Drive lists %d changes of its feed past it (the first: %s, file %q, drive %q, removed %t): never notified, or never synced",
			when, lib.ID, st.StartPageToken, len(page.Changes), ch.ChangeType, ch.FileId, ch.DriveId, ch.Removed)
	}
}

// chainCounts are the notifications and syncs of each library so far.
type chainCounts struct{ notifications, syncs map[string]int }

func (c *pushChain) counts() chainCounts {
	return chainCounts{notifications: c.notes.counts(), syncs: c.syncs.counts()}
}

// countingNotifier counts the notifications of each library, then passes
// them on.
type countingNotifier struct {
	next push.Notifier
	mu   sync.Mutex
	n    map[string]int
}

func (c *countingNotifier) Notify(libraryID string) {
	c.mu.Lock()
	c.n[libraryID]++
	c.mu.Unlock()
	c.next.Notify(libraryID)
}

func (c *countingNotifier) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.n)
}

// heldSyncer is the scheduler's syncer: the real one, whose syncs it counts
// by library, and holds back (before they read anything) from hold to
// release. It records the syncs that failed or fell back to a full sync.
type heldSyncer struct {
	*syncer.Syncer
	mu    sync.Mutex
	gate  chan struct{} // syncs wait until it is closed
	syncs map[string]int
	wrong []string
}

func closedGate() chan struct{} {
	g := make(chan struct{})
	close(g)
	return g
}

func (h *heldSyncer) Sync(ctx context.Context, req fm.SyncRequest, progress fm.ProgressFunc) (*fm.SyncResult, error) {
	h.mu.Lock()
	gate := h.gate
	h.mu.Unlock()
	select {
	case <-gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	res, err := h.Syncer.Sync(ctx, req, progress)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.syncs[req.Library]++
	switch {
	case err != nil:
		h.wrong = append(h.wrong, fmt.Sprintf("a sync of %s failed: %v", req.Library, err))
	case res.Full:
		h.wrong = append(h.wrong, fmt.Sprintf("a sync of %s fell back to a full sync (%s)", req.Library, res.FullReason))
	}
	return res, err
}

// hold has the syncs that start from now on wait until release.
func (h *heldSyncer) hold() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gate = make(chan struct{})
}

// release lets the held syncs go, if any.
func (h *heldSyncer) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.gate:
	default:
		close(h.gate)
	}
}

func (h *heldSyncer) counts() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.syncs)
}

// wrongs returns what went wrong since it was last called.
func (h *heldSyncer) wrongs() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.wrong
	h.wrong = nil
	return w
}
