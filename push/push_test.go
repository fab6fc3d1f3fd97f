package push_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/internal/googlefake"
	"github.com/foldermirror/foldermirror/push"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

const (
	userFeed = "user:" + alice
	// forged is a channel ID of the keeper's form that no channel has.
	forged = "0123456789abcdef0123456789abcdef"
)

func TestNewRefuses(t *testing.T) {
	e := newEnv(t)
	good := push.Options{Address: e.address, ChannelTTL: ttl, Libraries: fm.NewLibrarySet(e.libs), Watcher: e.watcher,
		Channels: e.store, Leases: e.leases, Notifier: e.notifier}
	tests := []struct {
		name string
		edit func(o *push.Options)
		want string
	}{
		{name: "no address", edit: func(o *push.Options) { o.Address = "" }, want: "push.address"},
		{name: "ftp address", edit: func(o *push.Options) { o.Address = "ftp://example.com/hook" }, want: "push.address"},
		{name: "relative address", edit: func(o *push.Options) { o.Address = "/hook" }, want: "push.address"},
		{name: "short ttl", edit: func(o *push.Options) { o.ChannelTTL = 9 * time.Second }, want: "push.channelTtl"},
		{name: "long ttl", edit: func(o *push.Options) { o.ChannelTTL = 169 * time.Hour }, want: "push.channelTtl"},
		{name: "no watcher", edit: func(o *push.Options) { o.Watcher = nil }, want: "required"},
		{name: "no libraries", edit: func(o *push.Options) { o.Libraries = nil }, want: "required"},
		{name: "negative rate", edit: func(o *push.Options) { o.CallsPerSecond = -1 }, want: "not a rate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := good
			tt.edit(&opts)
			if _, err := push.New(opts); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New: %v, want an error naming %s", err, tt.want)
			}
		})
	}
	svc, err := push.New(good)
	if err != nil {
		t.Fatal(err)
	}
	if svc.Path() != hookPath {
		t.Errorf("Path %q, want %q", svc.Path(), hookPath)
	}
}

func TestRenewalMargin(t *testing.T) {
	for _, tt := range []struct{ ttl, want time.Duration }{
		{10 * time.Second, 2 * time.Second},
		{time.Minute, 6 * time.Second},
		{time.Hour, 6 * time.Minute},
		{24 * time.Hour, time.Hour},
		{168 * time.Hour, time.Hour},
	} {
		if got := push.RenewalMargin(tt.ttl); got != tt.want {
			t.Errorf("margin of %s: %s, want %s", tt.ttl, got, tt.want)
		}
	}
}

// TestNotifications: a change in a feed's Drive has exactly the feed's
// libraries synced; a channel's sync message none.
func TestNotifications(t *testing.T) {
	e := newEnv(t)
	early := &earlySync{Watcher: e.watcher, e: e}
	e.watcher = early
	svc := e.run(t, e.libs)
	e.step(t)
	if got := e.notifier.take(); !slices.Equal(got, []string{"lib-a", "lib-b", "lib-team"}) {
		t.Errorf("the first channels' registrations notified %v, want each library once (the changes before their start tokens)", got)
	}
	if got := early.answers(); !slices.Equal(got, []int{http.StatusOK, http.StatusOK}) {
		t.Errorf("sync messages posted before the watches' answers were answered %v, want 200s", got)
	}
	live := e.live()
	if len(live) != 2 || len(live[userFeed]) != 1 || len(live["drive:"+e.team]) != 1 {
		t.Fatalf("live channels %+v, want one per feed", live)
	}
	if got, want := e.storedIDs(), e.liveIDs(); !slices.Equal(got, want) {
		t.Fatalf("stored %v, live %v", got, want)
	}
	e.fake.FlushNotifications()
	if got := e.notifier.take(); len(got) != 0 {
		t.Errorf("sync messages notified %v", got)
	}
	for _, ch := range e.fake.PushChannels() {
		if d := e.fake.ChannelDeliveries(ch.ID); d.Delivered != 1 || d.Failed != 0 {
			t.Errorf("channel %s: deliveries %+v, want its sync message accepted", ch.ID, d)
		}
	}
	tests := []struct {
		name   string
		change func()
		want   []string
	}{
		{name: "My Drive", change: func() { e.fake.CreateFolder(alice, e.folderA, "new") }, want: []string{"lib-a", "lib-b"}},
		{name: "shared drive", change: func() { e.fake.CreateFolder(alice, e.team, "new") }, want: []string{"lib-team"}},
		{name: "another user's Drive", change: func() { e.fake.CreateFolder(bob, "", "new") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.change()
			e.fake.FlushNotifications()
			if got := e.notifier.take(); !slices.Equal(got, tt.want) {
				t.Errorf("notified %v, want %v", got, tt.want)
			}
		})
	}
	counter := e.metrics.Notifications()
	if got := testutil.ToFloat64(counter.WithLabelValues("sync")); got != 4 {
		t.Errorf("sync notifications %v, want 4 (2 early, 2 of Drive)", got)
	}
	if got := testutil.ToFloat64(counter.WithLabelValues("change")); got != 2 {
		t.Errorf("change notifications %v, want 2", got)
	}
	if got := testutil.ToFloat64(e.metrics.Channels()); got != 2 {
		t.Errorf("channels %v, want 2", got)
	}
	for _, st := range svc.Status() {
		if st.Polling || st.Reason != "" || st.Channel == "" || st.Accepted != 3 || st.Refused != 0 || st.LastNotification.IsZero() {
			t.Errorf("status %+v, want its channel, 3 accepted", st)
		}
	}
}

// earlySync posts a channel's sync message to the receiver before Drive
// answers the watch, as Drive may, and records the answer.
type earlySync struct {
	push.Watcher
	e   *env
	mu  sync.Mutex
	got []int
}

func (w *earlySync) Watch(ctx context.Context, f push.Feed, id, token, address string, expiration time.Time) (string, time.Time, error) {
	code, err := w.e.send(ctx, http.MethodPost, map[string]string{
		"X-Goog-Channel-ID": id, "X-Goog-Channel-Token": token, "X-Goog-Resource-State": "sync"})
	if err != nil {
		code = -1
	}
	w.mu.Lock()
	w.got = append(w.got, code)
	w.mu.Unlock()
	return w.Watcher.Watch(ctx, f, id, token, address, expiration)
}

func (w *earlySync) answers() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.got)
}

// TestRefusedRequests: a request that is not a live channel's notification
// is refused and starts nothing.
func TestRefusedRequests(t *testing.T) {
	e := newEnv(t)
	svc := e.run(t, e.libs)
	e.step(t)
	e.fake.FlushNotifications()
	ch := e.live()[userFeed][0]
	valid := map[string]string{"X-Goog-Channel-ID": ch.ID, "X-Goog-Channel-Token": ch.Token, "X-Goog-Resource-State": "update"}
	with := func(k, v string) map[string]string {
		h := map[string]string{}
		for hk, hv := range valid {
			h[hk] = hv
		}
		h[k] = v
		return h
	}
	tests := []struct {
		name    string
		method  string
		headers map[string]string
		code    int
		result  string
	}{
		{"GET", http.MethodGet, valid, http.StatusMethodNotAllowed, "method"},
		{"no headers", http.MethodPost, nil, http.StatusBadRequest, "malformed"},
		{"no channel ID", http.MethodPost, with("X-Goog-Channel-ID", ""), http.StatusBadRequest, "malformed"},
		{"no token", http.MethodPost, with("X-Goog-Channel-Token", ""), http.StatusBadRequest, "malformed"},
		{"no state", http.MethodPost, with("X-Goog-Resource-State", ""), http.StatusBadRequest, "malformed"},
		{"forged channel ID", http.MethodPost, with("X-Goog-Channel-ID", forged), http.StatusNotFound, "unknown_channel"},
		{"foreign channel ID", http.MethodPost, with("X-Goog-Channel-ID", "not-ours"), http.StatusNotFound, "unknown_channel"},
		{"wrong token", http.MethodPost, with("X-Goog-Channel-Token", ch.Token+"x"), http.StatusForbidden, "bad_token"},
		{"the other channel's token", http.MethodPost, with("X-Goog-Channel-Token", e.live()["drive:"+e.team][0].Token),
			http.StatusForbidden, "bad_token"},
	}
	e.notifier.take() // the libraries the channels' registrations had read
	counter := e.metrics.Notifications()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := testutil.ToFloat64(counter.WithLabelValues(tt.result))
			if code := e.post(t, tt.method, tt.headers); code != tt.code {
				t.Errorf("answered %d, want %d", code, tt.code)
			}
			if got := testutil.ToFloat64(counter.WithLabelValues(tt.result)) - before; got != 1 {
				t.Errorf("%s counted %v times, want once", tt.result, got)
			}
			if got := e.notifier.take(); len(got) != 0 {
				t.Errorf("notified %v", got)
			}
		})
	}
	if code := e.post(t, http.MethodPost, valid); code != http.StatusOK {
		t.Fatalf("the channel's notification answered %d", code)
	}
	if got := e.notifier.take(); !slices.Equal(got, []string{"lib-a", "lib-b"}) {
		t.Errorf("the channel's notification notified %v", got)
	}
	// The channel expires (the keeper is not asked to look meanwhile).
	e.clock.advance(ttl + time.Minute)
	if code := e.post(t, http.MethodPost, valid); code != http.StatusNotFound {
		t.Errorf("an expired channel's notification answered %d, want 404", code)
	}
	if got := e.notifier.take(); len(got) != 0 {
		t.Errorf("an expired channel's notification notified %v", got)
	}
	if got := testutil.ToFloat64(counter.WithLabelValues("expired")); got != 1 {
		t.Errorf("expired counted %v times, want once", got)
	}
	st := svc.Status()[1]
	if st.Feed != userFeed || st.Refused != 3 || !st.Polling {
		t.Errorf("status %+v, want 3 refused (two wrong tokens, one expired), polling", st)
	}
}

// TestRenewal: a channel is renewed from a margin to half a margin before
// it expires, the new one registered before the old is stopped and
// deleted, so that at every step a live channel covers each feed.
func TestRenewal(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	var violations []string
	checking := false
	e.store.after = func(op string, chans []fm.PushChannel) {
		mu.Lock()
		defer mu.Unlock()
		if !checking {
			return
		}
		for _, f := range push.Feeds(e.libs) {
			if !slices.ContainsFunc(chans, func(ch fm.PushChannel) bool {
				return ch.Feed == f.Key && ch.ResourceID != "" && e.clock.Now().Before(ch.Expiration)
			}) {
				violations = append(violations, op+": no stored channel covers "+f.Key)
			}
		}
	}
	e.watcher = &stopChecker{Watcher: e.watcher, e: e, violations: func(v string) {
		mu.Lock()
		defer mu.Unlock()
		violations = append(violations, v)
	}}
	e.run(t, e.libs)
	e.step(t)
	first := e.liveIDs()
	if len(first) != 2 {
		t.Fatalf("live channels %v, want 2", first)
	}
	mu.Lock()
	checking = true
	mu.Unlock()

	e.clock.advance(ttl - 2*push.RenewalMargin(ttl))
	e.step(t)
	if got := e.liveIDs(); !slices.Equal(got, first) {
		t.Fatalf("before the margin, live channels %v, want %v", got, first)
	}
	e.clock.advance(push.RenewalMargin(ttl)*3/2 + time.Second) // past half a margin before they expire
	e.step(t)
	second := e.liveIDs()
	if len(second) != 2 || slices.ContainsFunc(second, func(id string) bool { return slices.Contains(first, id) }) {
		t.Fatalf("after renewal, live channels %v, want two others than %v", second, first)
	}
	if got := e.storedIDs(); !slices.Equal(got, second) {
		t.Errorf("stored %v, want %v", got, second)
	}
	if got := e.fake.CallCount(callStop); got != 2 {
		t.Errorf("%d channels.stop, want 2", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(violations) > 0 {
		t.Errorf("uncovered: %v", violations)
	}
}

// TestRenewalSyncs: the old channel a renewal stops drops the message it
// still owes for the changes made just before (Drive batches them), and
// its successor does not tell of them: the feeds' libraries are synced
// once instead.
func TestRenewalSyncs(t *testing.T) {
	e := newEnv(t)
	e.run(t, e.libs)
	e.step(t)
	first := e.liveIDs()
	e.fake.FlushNotifications()
	e.notifier.take()                      // the libraries the first registrations had read
	e.fake.SetNotificationDelay(time.Hour) // the changes' message is still owed at the renewal
	e.fake.CreateFolder(alice, e.folderA, "new")
	e.fake.CreateFolder(alice, e.team, "new")
	e.clock.advance(ttl - push.RenewalMargin(ttl)/2)
	e.step(t)
	e.fake.FlushNotifications()
	for _, id := range first {
		if d := e.fake.ChannelDeliveries(id); d.Delivered != 1 {
			t.Errorf("old channel %s: deliveries %+v, want its sync message alone", id, d)
		}
	}
	if got := e.notifier.take(); !slices.Equal(got, []string{"lib-a", "lib-b", "lib-team"}) {
		t.Errorf("notified %v, want every library once", got)
	}
}

// stopChecker checks, at each Stop, that the fake has another live channel
// of the feed.
type stopChecker struct {
	push.Watcher
	e          *env
	violations func(string)
}

func (c *stopChecker) Stop(ctx context.Context, f push.Feed, id, resourceID string) error {
	if !slices.ContainsFunc(c.e.live()[f.Key], func(ch googlefake.PushChannel) bool { return ch.ID != id }) {
		c.violations("stop " + id + ": no other live channel of " + f.Key)
	}
	return c.Watcher.Stop(ctx, f, id, resourceID)
}

// TestRenewalTimed: the keeper renews on a timer of its own.
func TestRenewalTimed(t *testing.T) {
	t.Parallel() // waits for the keeper's timer
	e := newEnv(t)
	svc := e.run(t, e.libs)
	e.step(t)
	first := e.liveIDs()
	var last time.Time
	for _, ch := range e.store.snapshot() {
		if at := push.RenewAt(svc, ch); at.After(last) {
			last = at
		}
	}
	// The last renewal is due half a second from now; a look sets the timer.
	e.clock.advance(last.Sub(e.clock.Now()) - 500*time.Millisecond)
	e.step(t)
	waitFor(t, "the renewal", func() bool {
		ids := e.liveIDs()
		return len(ids) == 2 && !slices.ContainsFunc(ids, func(id string) bool { return slices.Contains(first, id) })
	})
}

// TestRefusal: a watch Drive refuses leaves the feed polling with Drive's
// reason, tried again at Retry only.
func TestRefusal(t *testing.T) {
	e := newEnv(t)
	e.fake.RefuseWebhooks(e.address, true)
	svc := e.run(t, e.libs)
	e.step(t)
	want := "push.webhookUrlUnauthorized: Unauthorized WebHook callback channel: " + e.address
	for _, st := range svc.Status() {
		if !st.Polling || st.Reason != want || st.Channel != "" {
			t.Errorf("status %+v, want polling: %s", st, want)
		}
	}
	if got := e.storedIDs(); len(got) != 0 {
		t.Errorf("stored %v", got)
	}
	watches := e.fake.CallCount(callWatch)
	if watches != 2 {
		t.Fatalf("%d changes.watch, want 2", watches)
	}
	e.clock.advance(2 * ttl)
	e.step(t)
	if got := e.fake.CallCount(callWatch); got != watches {
		t.Errorf("without Retry, %d more changes.watch", got-watches)
	}
	e.fake.RefuseWebhooks(e.address, false)
	svc.Retry()
	e.step(t)
	if got := e.liveIDs(); len(got) != 2 || !slices.Equal(e.storedIDs(), got) {
		t.Fatalf("after Retry, live %v, stored %v", got, e.storedIDs())
	}
	for _, st := range svc.Status() {
		if st.Polling || st.Reason != "" || st.Channel == "" {
			t.Errorf("status %+v, want a channel", st)
		}
	}
	if got := testutil.ToFloat64(e.metrics.Channels()); got != 2 {
		t.Errorf("channels %v, want 2", got)
	}
}

// TestRenewalRefused: a renewal Drive refuses keeps the old channel until
// it expires.
func TestRenewalRefused(t *testing.T) {
	e := newEnv(t)
	svc := e.run(t, e.libs)
	e.step(t)
	first := e.liveIDs()
	e.fake.RefuseWebhooks(e.address, true)
	e.clock.advance(ttl - push.RenewalMargin(ttl)/2)
	e.step(t)
	if got := e.liveIDs(); !slices.Equal(got, first) {
		t.Errorf("live %v, want the old channels %v", got, first)
	}
	for _, st := range svc.Status() {
		if st.Polling || !strings.HasPrefix(st.Reason, "push.webhookUrlUnauthorized") || !slices.Contains(first, st.Channel) {
			t.Errorf("status %+v, want the old channel and Drive's refusal", st)
		}
	}
	e.clock.advance(push.RenewalMargin(ttl))
	for _, st := range svc.Status() {
		if !st.Polling {
			t.Errorf("status %+v, want polling once the old channel expired", st)
		}
	}
}

// TestFeedRemoved: the channel of a feed no longer configured is stopped
// and deleted.
func TestFeedRemoved(t *testing.T) {
	e := newEnv(t)
	e.run(t, e.libs)
	e.step(t)
	old := e.live()
	e.notifier.take()    // the libraries the first registrations had read
	e.run(t, e.libs[1:]) // lib-team removed
	e.step(t)
	live := e.live()
	if len(live) != 1 || len(live[userFeed]) != 1 {
		t.Fatalf("live %+v, want the user feed's channel alone", live)
	}
	if live[userFeed][0].ID == old[userFeed][0].ID {
		t.Errorf("the user feed kept the channel %s a former holding registered", live[userFeed][0].ID)
	}
	if got, want := e.storedIDs(), e.liveIDs(); !slices.Equal(got, want) {
		t.Errorf("stored %v, want %v", got, want)
	}
	if got := e.fake.CallCount(callStop); got != 2 {
		t.Errorf("%d channels.stop, want 2", got)
	}
	if got := e.notifier.take(); !slices.Equal(got, []string{"lib-a", "lib-b"}) {
		t.Errorf("notified %v, want the libraries of the feed kept, whose channel was stopped", got)
	}
}

// TestLeaseHeldElsewhere: while another process keeps the channels, this
// one makes no watch, and receives the notifications of the channels the
// other stored.
func TestLeaseHeldElsewhere(t *testing.T) {
	e := newEnv(t)
	other, err := e.leases.Replica("replica-b").Acquire(t.Context(), fm.PushLease)
	if err != nil {
		t.Fatal(err)
	}
	svc := e.run(t, e.libs)
	e.step(t)
	if got := e.fake.CallCount(callWatch); got != 0 {
		t.Fatalf("%d changes.watch", got)
	}
	for _, st := range svc.Status() {
		if !st.Polling || !strings.Contains(st.Reason, "another process keeps the channels") {
			t.Errorf("status %+v, want polling, kept by another process", st)
		}
	}
	// The other process registers a channel of the user feed.
	feed := push.Feeds(e.libs)[1]
	const id, token = "fedcba9876543210fedcba9876543210", "the other process's secret"
	expiration := e.clock.Now().Add(ttl)
	if err := e.store.PutChannel(t.Context(), fm.PushChannel{ID: id, TokenSHA256: sha256.Sum256([]byte(token)),
		Feed: feed.Key, Expiration: expiration}, fm.Fence{Lease: fm.PushLease, Epoch: other.Fence().Epoch + 1}); err == nil {
		t.Fatal("a write under a lease not held was accepted")
	}
	otherFence := other.Fence()
	ch := fm.PushChannel{ID: id, TokenSHA256: sha256.Sum256([]byte(token)), Feed: feed.Key, Expiration: expiration}
	if err := e.store.PutChannel(t.Context(), ch, otherFence); err != nil {
		t.Fatal(err)
	}
	resourceID, expires, err := e.watcher.Watch(t.Context(), feed, id, token, e.address, expiration)
	if err != nil {
		t.Fatal(err)
	}
	ch.ResourceID, ch.Expiration = resourceID, expires
	if err := e.store.PutChannel(t.Context(), ch, otherFence); err != nil {
		t.Fatal(err)
	}
	e.fake.FlushNotifications()
	e.fake.CreateFolder(alice, e.folderA, "new")
	e.fake.FlushNotifications()
	if got := e.notifier.take(); !slices.Equal(got, []string{"lib-a", "lib-b"}) {
		t.Errorf("notified %v, want the user feed's libraries", got)
	}
	if d := e.fake.ChannelDeliveries(id); d.Delivered != 2 {
		t.Errorf("deliveries %+v, want the sync and change messages accepted", d)
	}
	if got := e.fake.CallCount(callWatch); got != 1 {
		t.Errorf("%d changes.watch, want the other process's alone", got)
	}
}

// TestLeaseLost: a process whose lease is lost stops keeping the channels.
func TestLeaseLost(t *testing.T) {
	for _, tt := range []struct {
		name string
		told bool // Lost is closed; else the lease lapsed unnoticed, and writes are refused
	}{{"lost", true}, {"lapsed unnoticed", false}} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			svc := e.run(t, e.libs)
			e.step(t)
			e.takeElsewhere(tt.told)
			e.clock.advance(ttl - push.RenewalMargin(ttl)/2)
			e.step(t)
			e.step(t)
			if got := e.fake.CallCount(callWatch); got != 2 {
				t.Errorf("%d changes.watch, want the 2 of the first holding", got)
			}
			if got := e.fake.CallCount(callStop); got != 0 {
				t.Errorf("%d channels.stop", got)
			}
			for _, st := range svc.Status() {
				if st.Channel == "" || st.Polling {
					t.Errorf("status %+v, want the channel", st)
				}
			}
			e.free()
			e.step(t)
			if got := e.fake.CallCount(callWatch); got != 4 {
				t.Errorf("%d changes.watch once the lease is free, want 4", got)
			}
		})
	}
}

// TestReread: a channel stored behind the cache's back is found on its
// first notification, by a re-read of the store; a forged ID of the
// keeper's form is refused once a re-read begun after it did not find it;
// an ID of another form never reads the store.
func TestReread(t *testing.T) {
	e := newEnv(t)
	svc := e.start(t, e.libs) // not run: the cache is only read on demand
	push.SetRereadEvery(svc, time.Millisecond)
	const id = "00112233445566778899aabbccddeeff"
	putElsewhere(t, e, id)
	if code := e.post(t, http.MethodPost, notification(id)); code != http.StatusOK {
		t.Fatalf("a stored channel's notification answered %d", code)
	}
	if got := e.store.readCount(); got != 1 {
		t.Errorf("%d reads, want 1", got)
	}
	if code := e.post(t, http.MethodPost, notification("forged-"+forged)); code != http.StatusNotFound {
		t.Errorf("an ID of another form answered %d, want 404", code)
	}
	if got := e.store.readCount(); got != 1 {
		t.Errorf("%d reads after an ID of another form, want 1", got)
	}
	if code := e.post(t, http.MethodPost, notification(forged)); code != http.StatusNotFound {
		t.Errorf("a forged ID answered %d, want 404", code)
	}
	const late = "ffeeddccbbaa99887766554433221100"
	putElsewhere(t, e, late)
	if code := e.post(t, http.MethodPost, notification(late)); code != http.StatusOK {
		t.Errorf("a channel stored since the last re-read answered %d, want 200", code)
	}
	if got := e.store.readCount(); got != 3 {
		t.Errorf("%d reads, want 3: one a notification of an unknown ID of the keeper's form", got)
	}
	if got := e.notifier.take(); !slices.Equal(got, []string{"lib-a", "lib-a", "lib-b", "lib-b"}) {
		t.Errorf("notified %v", got)
	}
}

func TestStatusJSON(t *testing.T) {
	e := newEnv(t)
	svc := e.start(t, e.libs)
	b, err := json.Marshal(svc.Status())
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"feed": "drive:" + e.team, "libraries": []any{"lib-team"}, "accepted": 0.0, "refused": 0.0, "polling": true,
			"reason": "no channel registered yet"},
		{"feed": userFeed, "libraries": []any{"lib-a", "lib-b"}, "accepted": 0.0, "refused": 0.0, "polling": true,
			"reason": "no channel registered yet"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("status %s\nwant %v", b, want)
	}
}

// TestLeftovers: what a crashed or lapsed holder left is cleaned up: a
// channel stored before its watch (never registered, or registered and not
// stored again) is deleted, an expired one deleted, neither stopped.
func TestLeftovers(t *testing.T) {
	e := newEnv(t)
	leftovers := []fm.PushChannel{
		{ID: "11111111111111111111111111111111", Feed: userFeed, Expiration: e.clock.Now().Add(ttl)},
		{ID: "22222222222222222222222222222222", Feed: "drive:" + e.team, ResourceID: "r", Expiration: e.clock.Now().Add(-time.Second)},
	}
	for _, ch := range leftovers {
		if err := e.store.PutChannel(t.Context(), ch, fm.Fence{}); err != nil {
			t.Fatal(err)
		}
	}
	e.run(t, e.libs)
	e.step(t)
	if got, want := e.storedIDs(), e.liveIDs(); len(want) != 2 || !slices.Equal(got, want) {
		t.Errorf("stored %v, want the live channels %v", got, want)
	}
	if got := e.fake.CallCount(callStop); got != 0 {
		t.Errorf("%d channels.stop", got)
	}
}

// TestStopFailure: a channel Drive does not stop stays stored, and is
// stopped again StoreRetryEvery later.
func TestStopFailure(t *testing.T) {
	e := newEnv(t)
	failing := &failingStop{Watcher: e.watcher}
	failing.fail.Store(true)
	e.watcher = failing
	e.run(t, e.libs[1:])
	e.step(t)
	first := e.liveIDs()
	e.clock.advance(ttl - push.RenewalMargin(ttl)/2)
	e.step(t)
	stored := e.storedIDs()
	if len(stored) != 2 || !slices.Contains(stored, first[0]) {
		t.Fatalf("stored %v, want the old channel %s and its successor", stored, first[0])
	}
	failing.fail.Store(false)
	e.step(t)
	if got := e.storedIDs(); !slices.Equal(got, stored) {
		t.Fatalf("stored %v before the stop is tried again, want %v", got, stored)
	}
	e.clock.advance(push.StoreRetryEvery)
	e.step(t)
	if got, want := e.storedIDs(), e.liveIDs(); len(got) != 1 || !slices.Equal(got, want) || got[0] == first[0] {
		t.Errorf("stored %v, live %v, want the successor of %s alone", got, want, first[0])
	}
}

// failingStop fails every Stop while fail is set.
type failingStop struct {
	push.Watcher
	fail atomic.Bool
}

func (w *failingStop) Stop(ctx context.Context, f push.Feed, id, resourceID string) error {
	if w.fail.Load() {
		return errors.New("channels.stop: 503 Service Unavailable")
	}
	return w.Watcher.Stop(ctx, f, id, resourceID)
}
