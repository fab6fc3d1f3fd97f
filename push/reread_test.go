package push_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/push"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// token is the token of the channels the tests store as another process.
const token = "secret"

// notification returns the headers of a notification of the channel of
// that ID, with token.
func notification(id string) map[string]string {
	return map[string]string{"X-Goog-Channel-ID": id, "X-Goog-Channel-Token": token, "X-Goog-Resource-State": "change"}
}

// putElsewhere stores a live channel of alice's feed with that ID, as
// another process would: the Service is not told.
func putElsewhere(t *testing.T, e *env, id string) {
	t.Helper()
	if err := e.store.PutChannel(t.Context(), fm.PushChannel{ID: id, TokenSHA256: sha256.Sum256([]byte(token)),
		Feed: userFeed, ResourceID: "r", Expiration: e.clock.Now().Add(ttl)}, fm.Fence{}); err != nil {
		t.Fatal(err)
	}
}

// forgedID returns a random channel ID of the keeper's form.
func forgedID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// answer is what the receiver answered a forged notification, and when.
type answer struct {
	code       int // 0: not answered within the bound
	retryAfter string
	took       time.Duration
}

// flood posts notifications of forged IDs of the keeper's form from n
// goroutines, each at least one and then more until ctx ends, and returns
// the answers; a request not answered within bound counts as unanswered.
func flood(ctx context.Context, e *env, n int, bound time.Duration) []answer {
	var (
		mu  sync.Mutex
		out []answer
		wg  sync.WaitGroup
	)
	for range n {
		wg.Go(func() {
			for first := true; first || ctx.Err() == nil; first = false {
				a := forge(e, bound)
				mu.Lock()
				out = append(out, a)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return out
}

// forge posts one notification of a forged ID, waiting bound at most.
func forge(e *env, bound time.Duration) answer {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.address, http.NoBody)
	if err != nil {
		panic(err)
	}
	for k, v := range notification(forgedID()) {
		req.Header.Set(k, v)
	}
	begin := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{took: time.Since(begin)}
	}
	defer resp.Body.Close()
	return answer{code: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), took: time.Since(begin)}
}

// TestUnknownFloodWithASlowStore: a flood of forged channel IDs of the
// keeper's form, the store's reads slow or hanging, holds no request
// longer than the wait: an ID the store could not be asked about in time
// is answered 503 (Drive tries again), one a re-read begun after the
// request did not find 404. The store is read by one re-read at a time,
// once per interval at most, each bounded by its own timeout.
func TestUnknownFloodWithASlowStore(t *testing.T) {
	t.Parallel() // waits on timers and a slow store
	e := newEnv(t)
	slow := newSlowStore(e.store, 0)
	e.channels = slow
	t.Cleanup(func() { slow.open(0) })
	svc := e.start(t, e.libs) // not run: the store is read only for the receiver
	const every, wait, timeout = 100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond
	push.SetRereadEvery(svc, every)
	push.SetUnknownWait(svc, wait)
	push.SetRereadTimeout(svc, timeout)
	counter := e.metrics.Notifications()

	// The database hangs: 40 requests at once, one each.
	slow.shut()
	bound := wait + 2*time.Second
	once, ended := context.WithCancel(t.Context())
	ended()
	answers := flood(once, e, 40, bound)
	byCode := map[int]int{} // 0: unanswered
	for _, a := range answers {
		if a.code == http.StatusServiceUnavailable && a.retryAfter == "" {
			a.code = -1 // 503 without Retry-After
		}
		byCode[a.code]++
	}
	if byCode[http.StatusServiceUnavailable] != len(answers) {
		t.Fatalf("answers by status while the store's read hung (0: none within %s): %v; want 503 with Retry-After, all %d",
			bound, byCode, len(answers))
	}
	if reads, most, _, _ := slow.counts(); reads != 1 || most != 1 {
		t.Errorf("%d reads of the store, %d at once, want 1", reads, most)
	}
	if got := testutil.ToFloat64(counter.WithLabelValues("unconfirmed")); got != 40 {
		t.Errorf("unconfirmed counted %v times, want 40", got)
	}
	waitFor(t, "the hung re-read to end at its timeout", func() bool { _, _, _, canceled := slow.counts(); return canceled == 1 })

	// The database answers, slowly: the flood goes on.
	slow.open(every)
	push.SetUnknownWait(svc, time.Second)
	readsBefore, _, _, _ := slow.counts()
	ctx, stop := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer stop()
	begin := time.Now()
	answers = flood(ctx, e, 8, time.Second+2*time.Second)
	elapsed := time.Since(begin)
	notFound := 0
	for _, a := range answers {
		switch {
		case a.code == http.StatusNotFound:
			notFound++
		case a.code == 0:
			t.Errorf("a forged ID unanswered after %s", a.took)
		case a.code != http.StatusServiceUnavailable:
			t.Errorf("a forged ID answered %d after %s, want 404 (or 503) within %s", a.code, a.took, time.Second)
		}
	}
	if notFound == 0 {
		t.Errorf("no forged ID of %d answered 404: none confirmed unknown", len(answers))
	}
	reads, atOnce, _, _ := slow.counts()
	if most := int(elapsed/every) + 2; reads-readsBefore > most || atOnce != 1 {
		t.Errorf("%d reads of the store in %s (%d at once) for %d requests, want %d at most, one at a time",
			reads-readsBefore, elapsed.Round(time.Millisecond), atOnce, len(answers), most)
	}
	if got := e.notifier.take(); len(got) != 0 {
		t.Errorf("forged IDs notified %v", got)
	}
}

// TestLiveChannelDuringAFlood: during a steady flood of forged IDs, the
// first notification of a channel another process stored moments ago
// (after a re-read began) is answered 200 and syncs the feed.
func TestLiveChannelDuringAFlood(t *testing.T) {
	t.Parallel() // waits on timers and a slow store
	e := newEnv(t)
	slow := newSlowStore(e.store, 200*time.Millisecond)
	e.channels = slow
	svc := e.start(t, e.libs)
	push.SetUnknownWait(svc, patience) // what is tested is the answer, not how soon (TestUnknownFloodWithASlowStore)
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	var answers []answer
	done := make(chan struct{})
	go func() {
		defer close(done)
		answers = flood(ctx, e, 8, patience)
	}()
	select {
	case <-slow.began: // drop a read begun before
	default:
	}
	slow.waitRead(t)
	const live = "00112233445566778899aabbccddeeff"
	putElsewhere(t, e, live)
	code := e.post(t, http.MethodPost, notification(live))
	stop()
	select {
	case <-done:
	case <-time.After(patience):
		t.Fatal("the flood did not end")
	}
	if code != http.StatusOK {
		t.Errorf("a channel stored by another process during the flood answered %d, want 200", code)
	}
	if got := e.notifier.take(); !slices.Equal(got, []string{"lib-a", "lib-b"}) {
		t.Errorf("notified %v, want the feed's libraries lib-a, lib-b", got)
	}
	for _, a := range answers {
		if a.code != http.StatusNotFound && a.code != http.StatusServiceUnavailable {
			t.Errorf("a forged ID answered %d, want 404 or 503", a.code)
		}
	}
}

// TestCancelledRequestKeepsTheReread: the re-read a notification of an
// unknown ID brought goes on once the request is cancelled, and what it
// finds serves the notifications after it.
func TestCancelledRequestKeepsTheReread(t *testing.T) {
	t.Parallel() // waits on timers and a slow store
	e := newEnv(t)
	slow := newSlowStore(e.store, 0)
	e.channels = slow
	t.Cleanup(func() { slow.open(0) })
	svc := e.start(t, e.libs)
	push.SetUnknownWait(svc, patience)
	const live = "00112233445566778899aabbccddeeff"
	putElsewhere(t, e, live)
	slow.shut()
	ctx, cancel := context.WithCancel(t.Context())
	sent := make(chan error, 1)
	go func() {
		_, err := e.send(ctx, http.MethodPost, notification(forged))
		sent <- err
	}()
	slow.waitRead(t)
	cancel()
	select {
	case <-sent:
	case <-time.After(patience):
		t.Fatal("the cancelled request did not end")
	}
	counter := e.metrics.Notifications()
	waitFor(t, "the cancelled request's answer", func() bool {
		return testutil.ToFloat64(counter.WithLabelValues("unknown_channel"))+testutil.ToFloat64(counter.WithLabelValues("unconfirmed")) == 1
	})
	if _, _, _, canceled := slow.counts(); canceled != 0 {
		t.Fatalf("the shared re-read ended with the cancelled request (%d read cancelled)", canceled)
	}
	slow.open(0)
	waitFor(t, "the re-read to end", func() bool { _, _, completed, _ := slow.counts(); return completed == 1 })
	if code := e.post(t, http.MethodPost, notification(live)); code != http.StatusOK {
		t.Errorf("the channel the re-read found answered %d, want 200", code)
	}
	if reads, _, _, _ := slow.counts(); reads != 1 {
		t.Errorf("%d reads of the store, want 1: the re-read's", reads)
	}
}

// TestWaitingBounded: the notifications waiting for a re-read are bounded;
// one more is answered 503 at once.
func TestWaitingBounded(t *testing.T) {
	e := newEnv(t)
	slow := newSlowStore(e.store, 0)
	e.channels = slow
	t.Cleanup(func() { slow.open(0) })
	svc := e.start(t, e.libs)
	push.SetUnknownWait(svc, patience)
	push.SetMaxWaiting(svc, 2)
	slow.shut()
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { _, _ = e.send(ctx, http.MethodPost, notification(forgedID())) })
	}
	waitFor(t, "two notifications waiting", func() bool { return push.Waiting(svc) == 2 })
	if code := e.post(t, http.MethodPost, notification(forgedID())); code != http.StatusServiceUnavailable {
		t.Errorf("a third notification answered %d while two waited, want 503", code)
	}
	if got := push.Waiting(svc); got != 2 {
		t.Errorf("%d waiting, want 2", got)
	}
	cancel()
	wg.Wait()
	waitFor(t, "the cancelled notifications to stop waiting", func() bool { return push.Waiting(svc) == 0 })
	if reads, _, _, _ := slow.counts(); reads != 1 {
		t.Errorf("%d reads of the store, want 1", reads)
	}
}
