package push_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/googlefake"
	"github.com/foldermirror/foldermirror/push"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/api/drive/v3"
)

const (
	domain = "example.com"
	alice  = "alice@example.com"
	bob    = "bob@example.com"
	// hookPath is the path of push.address in the tests.
	hookPath = "/push/drive"
	// ttl is the channels' lifetime in the tests; the renewal margin is a
	// tenth of it.
	ttl = time.Hour
	// patience bounds every wait of the tests: what they wait for happens
	// long before, or never.
	patience = 30 * time.Second
	// Drive's method names, as the fake counts them.
	callWatch = "drive.changes.watch"
	callStop  = "drive.channels.stop"
)

// clock is the time of the tests: the real time plus an offset the test
// moves forward, so that Drive's fake (on the real time) and the service
// agree while the test jumps ahead.
type clock struct{ offset atomic.Int64 }

func (c *clock) Now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *clock) advance(d time.Duration) { c.offset.Add(int64(d)) }

// store is an in-memory fm.PushChannels whose writes are fenced by leases;
// after, if set, is called after each write.
type store struct {
	leases *fmtest.Leases
	mu     sync.Mutex
	chans  map[string]fm.PushChannel
	reads  int
	after  func(op string, chans []fm.PushChannel)
}

func newStore(ls *fmtest.Leases) *store {
	return &store{leases: ls, chans: map[string]fm.PushChannel{}}
}

func (s *store) Channels(context.Context) ([]fm.PushChannel, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	return s.list(), nil
}

func (s *store) PutChannel(_ context.Context, ch fm.PushChannel, fence fm.Fence) error {
	return s.write(fence, "put "+ch.ID, func() { s.chans[ch.ID] = ch })
}

func (s *store) DeleteChannel(_ context.Context, id string, fence fm.Fence) error {
	return s.write(fence, "delete "+id, func() { delete(s.chans, id) })
}

func (s *store) write(fence fm.Fence, op string, fn func()) error {
	if err := s.leases.Check(fm.PushLease, fence); err != nil {
		return err
	}
	s.mu.Lock()
	fn()
	after := s.after
	var list []fm.PushChannel
	if after != nil {
		list = s.list()
	}
	s.mu.Unlock()
	if after != nil {
		after(op, list)
	}
	return nil
}

// list returns the channels by ID; call it with s.mu held.
func (s *store) list() []fm.PushChannel {
	out := make([]fm.PushChannel, 0, len(s.chans))
	for _, ch := range s.chans {
		out = append(out, ch)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// snapshot returns the stored channels by ID.
func (s *store) snapshot() []fm.PushChannel {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.list()
}

func (s *store) readCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

// slowStore is a store on a slow database: each read of the channels
// takes what the store holds when it begins, then takes delay; while the
// gate is shut, it hangs until the gate opens or its context ends. It
// counts the reads, those that ran at once at most, those that ended, and
// those that ended cancelled.
type slowStore struct {
	*store
	began chan struct{} // a value as each read begins (dropped if full)

	mu                  sync.Mutex
	delay               time.Duration
	gate                chan struct{} // nil: open
	reads, now, most    int
	completed, canceled int
}

func newSlowStore(s *store, delay time.Duration) *slowStore {
	return &slowStore{store: s, delay: delay, began: make(chan struct{}, 1)}
}

func (s *slowStore) Channels(ctx context.Context) ([]fm.PushChannel, error) {
	list, _ := s.store.Channels(ctx)
	s.mu.Lock()
	s.reads++
	s.now++
	s.most = max(s.most, s.now)
	gate, delay := s.gate, s.delay
	s.mu.Unlock()
	select {
	case s.began <- struct{}{}:
	default:
	}
	err := s.hold(ctx, gate, delay)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now--
	if err != nil {
		s.canceled++
		return nil, err
	}
	s.completed++
	return list, nil
}

// hold waits for the gate (if shut) and delay, or the end of ctx.
func (s *slowStore) hold(ctx context.Context, gate chan struct{}, delay time.Duration) error {
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// shut has the reads that begin from now on hang until open.
func (s *slowStore) shut() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gate = make(chan struct{})
}

// open lets the hanging reads go on, and the next ones take delay.
func (s *slowStore) open(delay time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gate != nil {
		close(s.gate)
		s.gate = nil
	}
	s.delay = delay
}

// counts returns the reads begun, the most that ran at once, and those
// that ended: completed and cancelled.
func (s *slowStore) counts() (reads, most, completed, canceled int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads, s.most, s.completed, s.canceled
}

// waitRead waits, boundedly, until a read of the store begins.
func (s *slowStore) waitRead(t *testing.T) {
	t.Helper()
	select {
	case <-s.began:
	case <-time.After(patience):
		t.Fatal("the store was not read")
	}
}

// notifier records the libraries notified.
type notifier struct {
	mu  sync.Mutex
	got []string
}

func (n *notifier) Notify(lib string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.got = append(n.got, lib)
}

// take returns the libraries notified since the last take, sorted.
func (n *notifier) take() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := slices.Sorted(slices.Values(n.got))
	n.got = nil
	return out
}

// env is a Service on a Google fake with alice's My Drive libraries lib-a
// and lib-b (feed user:alice@example.com) and the shared drive library
// lib-team (feed drive:TEAM), all of the domain example.com, its receiver
// served on 127.0.0.1.
type env struct {
	fake     *googlefake.Server
	team     string // the shared drive's ID
	folderA  string // lib-a's root
	libs     []fm.Library
	set      *fm.LibrarySet // the libraries of the Service started last
	address  string
	clock    *clock
	leases   *fmtest.Leases // this process's: replica-a's
	store    *store
	channels fm.PushChannels // what the Service reads and writes: store unless a test wraps it
	notifier *notifier
	// discoveryAccounts and discovery, when set before start, are the
	// Service's DiscoveryAccounts and Discovery.
	discoveryAccounts []string
	discovery         *notifier
	watcher           push.Watcher
	metrics           *push.Metrics
	svc               *push.Service
	handler           atomic.Pointer[push.Service]
	stop              func() // ends Run, if it runs
	giveBack          func() // has replica-b give the push lease back (see takeElsewhere)
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{fake: fmtest.StartGoogle(t), clock: &clock{}, leases: fmtest.NewLeases("replica-a"), notifier: &notifier{}}
	e.store = newStore(e.leases)
	e.fake.AddUser(alice)
	e.fake.AddUser(bob)
	e.fake.AllowHTTPWebhooks(true)
	e.team = e.fake.CreateSharedDrive("Team", alice)
	e.folderA = e.fake.CreateFolder(alice, "", "A")
	folderB := e.fake.CreateFolder(alice, "", "B")
	e.libs = []fm.Library{
		{ID: "lib-team", Domain: domain, StorageAccount: alice, SharedDriveID: e.team},
		{ID: "lib-b", Domain: domain, StorageAccount: alice, RootFolderID: folderB},
		{ID: "lib-a", Domain: domain, StorageAccount: alice, RootFolderID: e.folderA},
	}
	services := map[string]*drive.Service{alice: fmtest.DriveAs(t, e.fake, alice), bob: fmtest.DriveAs(t, e.fake, bob)}
	e.watcher = push.NewDriveWatcher(func(user string) (*drive.Service, error) {
		if svc, ok := services[user]; ok {
			return svc, nil
		}
		return nil, fmt.Errorf("no Drive client for %q", user)
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if svc := e.handler.Load(); svc != nil && r.URL.Path == svc.Path() {
			svc.ServeHTTP(w, r)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	e.address = srv.URL + hookPath
	e.stop = func() {}
	t.Cleanup(func() { e.stop() })
	return e
}

// takeElsewhere has another process, replica-b, take the push lease: this
// process's holding, if any, lapses first, and is found lost if seen.
func (e *env) takeElsewhere(seen bool) {
	e.giveBack = e.leases.TakeWhenFree("replica-b", fm.PushLease)
	if seen {
		e.leases.Lapse(fm.PushLease)
	} else {
		e.leases.LapseUnseen(fm.PushLease)
	}
}

// free has the other process give the push lease back.
func (e *env) free() { e.giveBack() }

// start makes the Service of a set of the libraries and serves its
// receiver; the Service of an earlier start, if running, stops first.
func (e *env) start(t *testing.T, libs []fm.Library) *push.Service {
	t.Helper()
	e.stop()
	e.metrics = push.NewMetrics(prometheus.NewRegistry())
	var channels fm.PushChannels = e.store
	if e.channels != nil {
		channels = e.channels
	}
	e.set = fm.NewLibrarySet(libs)
	svc, err := push.New(push.Options{
		Address: e.address, ChannelTTL: ttl, Libraries: e.set, Watcher: e.watcher, Channels: channels,
		Leases: e.leases, Notifier: e.notifier, Logger: slog.New(slog.DiscardHandler), Metrics: e.metrics, Now: e.clock.Now,
		DiscoveryAccounts: e.discoveryAccounts, Discovery: e.discovery,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.svc = svc
	e.handler.Store(svc)
	return svc
}

// run starts the Service of the libraries and runs it until the test
// ends, or the next start.
func (e *env) run(t *testing.T, libs []fm.Library) *push.Service {
	t.Helper()
	svc := e.start(t, libs)
	e.stop = run(t, svc)
	return svc
}

// step has the keeper look now, and waits until it has.
func (e *env) step(t *testing.T) {
	t.Helper()
	step(t, e.svc)
}

// run runs svc until stop is called (a second call does nothing) or the
// test ends.
func run(t *testing.T, svc *push.Service) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		svc.Run(ctx)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(patience):
				t.Errorf("the service's Run has not returned %s after its context ended", patience)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// step has svc's keeper look now, and waits until it has.
func step(t *testing.T, svc *push.Service) {
	t.Helper()
	select {
	case <-push.Step(svc):
	case <-time.After(patience):
		t.Fatal("the keeper did not look")
	}
}

// live returns the fake's live channels, by feed key.
func (e *env) live() map[string][]googlefake.PushChannel {
	out := map[string][]googlefake.PushChannel{}
	for _, ch := range e.fake.PushChannels() {
		key := "user:" + ch.User
		if ch.DriveID != "" {
			key = "drive:" + ch.DriveID
		}
		out[key] = append(out[key], ch)
	}
	return out
}

// liveIDs returns the IDs of the fake's live channels, sorted.
func (e *env) liveIDs() []string {
	var ids []string
	for _, ch := range e.fake.PushChannels() {
		ids = append(ids, ch.ID)
	}
	return ids
}

// storedIDs returns the IDs of the stored channels, sorted.
func (e *env) storedIDs() []string {
	var ids []string
	for _, ch := range e.store.snapshot() {
		ids = append(ids, ch.ID)
	}
	return ids
}

// post posts a notification to the receiver with the headers given (none
// of those empty) and returns the answer's status.
func (e *env) post(t *testing.T, method string, headers map[string]string) int {
	t.Helper()
	code, err := e.send(t.Context(), method, headers)
	if err != nil {
		t.Fatal(err)
	}
	return code
}

// send is post, for any goroutine.
func (e *env) send(ctx context.Context, method string, headers map[string]string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, method, e.address, http.NoBody)
	if err != nil {
		return 0, err
	}
	for k, v := range headers {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return resp.StatusCode, nil
}

// waitFor waits, boundedly, until cond holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited in vain for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
