package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/MicahParks/jwkset"
	"golang.org/x/time/rate"
)

// Fetching signing keys.
const (
	// keySetRefreshEvery is how often signing keys are fetched in the
	// background, so that rotations are picked up.
	keySetRefreshEvery = 15 * time.Minute
	// keyFetchRetryMin and keyFetchRetryMax bound the backoff between
	// fetches while they fail (a first fetch included), unless
	// Options.keyFetchRetry says otherwise.
	keyFetchRetryMin = time.Second
	keyFetchRetryMax = time.Minute
	// keyFetchTimeout bounds one fetch of one URL.
	keyFetchTimeout = 10 * time.Second
	// maxKeySetBytes bounds a key set document; Google's is about 2 KiB.
	maxKeySetBytes = 1 << 20
	// unknownKeyRefetchEvery bounds how often a token signed with a key the
	// set does not hold makes the set be fetched again.
	unknownKeyRefetchEvery = time.Minute
	// unknownKeyWaitMax bounds how long a request waits for a fetch of the
	// keys (the first one, or a refetch for an unknown key ID).
	unknownKeyWaitMax = 5 * time.Second
	// keysRetryIn is the Retry-After of a token refused for want of keys.
	keysRetryIn = 5 * time.Second
)

var (
	// errNotFetchedYet: the first fetch of a key set has not ended yet.
	errNotFetchedYet = errors.New("the signing keys have not been fetched yet")
	// errFetchTooSlow: a request stopped waiting for a fetch still in flight.
	errFetchTooSlow = errors.New("the fetch of the signing keys is taking too long")
)

// keysUnavailableError says that a token's key cannot be looked up: the key
// set was never fetched, or its last fetch failed (so a key ID it lacks may
// be one it would now hold). A key ID missing from a set whose last fetch
// succeeded is jwkset.ErrKeyNotFound instead.
type keysUnavailableError struct {
	authority string
	err       error
}

func (e *keysUnavailableError) Error() string {
	return fmt.Sprintf("%s's signing keys are unavailable: %v", e.authority, e.err)
}

func (e *keysUnavailableError) Unwrap() error { return e.err }

// remoteKeys is the signing keys an authority publishes at its URLs, as a
// jwkset.Storage for keyfunc. They are fetched in the background from the
// start (which does not wait for them), again every keySetRefreshEvery,
// sooner with a growing backoff while fetches fail (whatever started them),
// and at most once every unknownKeyRefetchEvery for a key ID the set does
// not hold. Token headers (jku, x5u, jwk) are never followed: keys come from
// urls only.
type remoteKeys struct {
	// Storage holds the keys of every URL as last fetched; only KeyRead and
	// KeyReadAll are used, by keyfunc.
	jwkset.Storage
	// ctx is the keys' lifetime: fetches end with it.
	ctx       context.Context
	authority string
	urls      []string
	client    *http.Client
	logger    *slog.Logger
	// refetch allows the refetches for unknown key IDs.
	refetch *rate.Limiter

	mu    sync.Mutex
	byURL map[string][]jwkset.JWK
	// fetching is closed when the fetch in flight ends; nil when none is.
	fetching chan struct{}
	// failed is why the last fetch failed (errNotFetchedYet before the
	// first one ends); nil after a fetch of every URL succeeded.
	failed error
	// next is when keepFresh fetches next, backoff the wait after the next
	// failure, between retry's bounds; rescheduled tells keepFresh that
	// next changed.
	next        time.Time
	backoff     time.Duration
	retry       backoff
	rescheduled chan struct{}
}

// backoff bounds the waits between retries: the first is min, each next
// twice the last, up to max.
type backoff struct{ min, max time.Duration }

// newRemoteKeys returns the keys of urls, kept in store, and starts
// fetching them; they are fetched until ctx ends.
func newRemoteKeys(ctx context.Context, authority string, urls []string, store jwkset.Storage, opts Options) *remoteKeys {
	retry := opts.keyFetchRetry
	if retry == (backoff{}) {
		retry = backoff{keyFetchRetryMin, keyFetchRetryMax}
	}
	k := &remoteKeys{
		Storage: store, ctx: ctx, authority: authority, urls: urls,
		client: opts.HTTPClient, logger: opts.Logger,
		refetch: rate.NewLimiter(rate.Every(unknownKeyRefetchEvery), 1),
		byURL:   map[string][]jwkset.JWK{}, failed: errNotFetchedYet,
		next: time.Now().Add(keySetRefreshEvery), backoff: retry.min, retry: retry,
		rescheduled: make(chan struct{}, 1),
	}
	k.fetch()
	go k.keepFresh()
	return k
}

// KeyRead returns the key of ID kid. A key ID the set lacks makes it wait
// for a fetch begun after it looked, if one is in flight or the minute's
// refetch is still allowed (see awaitFetch). It fails with
// jwkset.ErrKeyNotFound when the set is fresh and lacks kid, or with a
// *keysUnavailableError when it is not.
func (k *remoteKeys) KeyRead(ctx context.Context, kid string) (jwkset.JWK, error) {
	if jwk, err := k.Storage.KeyRead(ctx, kid); !errors.Is(err, jwkset.ErrKeyNotFound) {
		return jwk, err
	}
	ended := k.awaitFetch(ctx, func() bool {
		_, err := k.Storage.KeyRead(ctx, kid)
		return !errors.Is(err, jwkset.ErrKeyNotFound)
	})
	var jwk jwkset.JWK
	var err error
	failed := k.lookAt(func() { jwk, err = k.Storage.KeyRead(ctx, kid) })
	switch {
	case !errors.Is(err, jwkset.ErrKeyNotFound):
		return jwk, err
	case !ended:
		return jwkset.JWK{}, &keysUnavailableError{authority: k.authority, err: errFetchTooSlow}
	case failed != nil:
		return jwkset.JWK{}, &keysUnavailableError{authority: k.authority, err: failed}
	}
	return jwkset.JWK{}, fmt.Errorf("%w: key ID %q", jwkset.ErrKeyNotFound, kid)
}

// KeyReadAll returns every key, for a token without a key ID. Without any
// key it waits for a fetch as KeyRead does, and fails with a
// *keysUnavailableError if that does not bring one.
func (k *remoteKeys) KeyReadAll(ctx context.Context) ([]jwkset.JWK, error) {
	if keys, err := k.Storage.KeyReadAll(ctx); err != nil || len(keys) > 0 {
		return keys, err
	}
	ended := k.awaitFetch(ctx, func() bool {
		keys, err := k.Storage.KeyReadAll(ctx)
		return err != nil || len(keys) > 0
	})
	var keys []jwkset.JWK
	var err error
	failed := k.lookAt(func() { keys, err = k.Storage.KeyReadAll(ctx) })
	switch {
	case err != nil || len(keys) > 0:
		return keys, err
	case !ended:
		return nil, &keysUnavailableError{authority: k.authority, err: errFetchTooSlow}
	case failed != nil:
		return nil, &keysUnavailableError{authority: k.authority, err: failed}
	}
	return nil, nil
}

// lookAt runs look on the keys and returns why the fetch that brought them
// failed, nil if it did not: both of the same fetch, which no fetch can
// end between (a fetch ends holding k.mu).
func (k *remoteKeys) lookAt(look func()) (failed error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	look()
	return k.failed
}

// awaitFetch waits, at most unknownKeyWaitMax or until ctx ends, for a
// fetch begun after the caller looked at the keys and found them lacking:
// the fetch in flight, which may have begun before, then, unless found
// reports that the keys now hold what the caller looks for, a fetch in
// flight by then or a new one if the minute's refetch is still allowed. It
// reports false if it stopped waiting before a fetch ended.
func (k *remoteKeys) awaitFetch(ctx context.Context, found func() bool) bool {
	timer := time.NewTimer(unknownKeyWaitMax)
	defer timer.Stop()
	if done := k.inFlight(); done != nil && !awaitDone(ctx, timer, done) {
		return false
	}
	if found() {
		return true
	}
	done := k.refetchNow()
	if done == nil {
		return true // the minute's refetch is spent
	}
	return awaitDone(ctx, timer, done)
}

// awaitDone waits for done to close, and reports false if timer fired or
// ctx ended first.
func awaitDone(ctx context.Context, timer *time.Timer, done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	case <-timer.C:
		return false
	case <-ctx.Done():
		return false
	}
}

// keepFresh fetches the keys when the schedule that each fetch sets says
// (see schedule), until k.ctx ends.
func (k *remoteKeys) keepFresh() {
	for {
		k.mu.Lock()
		next := k.next
		k.mu.Unlock()
		timer := time.NewTimer(time.Until(next))
		select {
		case <-timer.C:
			select {
			case <-k.fetch():
			case <-k.ctx.Done():
				return
			}
		case <-k.rescheduled:
			timer.Stop()
		case <-k.ctx.Done():
			timer.Stop()
			return
		}
	}
}

// inFlight returns a channel closed when the fetch in flight ends, or nil
// when none is.
func (k *remoteKeys) inFlight() <-chan struct{} {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.fetching
}

// fetch starts a fetch of every URL unless one is in flight, and returns a
// channel closed when it ends.
func (k *remoteKeys) fetch() <-chan struct{} {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.startFetch()
}

// refetchNow is fetch for a key ID the keys lack: unless a fetch is in
// flight (which joining costs nothing), it spends the minute's refetch, and
// returns nil if that is spent already.
func (k *remoteKeys) refetchNow() <-chan struct{} {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.fetching == nil && !k.refetch.Allow() {
		return nil
	}
	return k.startFetch()
}

// startFetch starts a fetch of every URL unless one is in flight, and
// returns a channel closed when it ends. Call with k.mu held.
func (k *remoteKeys) startFetch() <-chan struct{} {
	if k.fetching == nil {
		k.fetching = make(chan struct{})
		go k.fetchAll(k.fetching)
	}
	return k.fetching
}

// fetchAll fetches every URL, keeps the keys of those that answered (the
// others keep their previous keys), and closes done.
func (k *remoteKeys) fetchAll(done chan struct{}) {
	ctx := k.ctx
	fetched := map[string][]jwkset.JWK{}
	var errs []error
	for _, u := range k.urls {
		keys, err := fetchKeySet(ctx, k.client, u)
		if err != nil {
			if ctx.Err() == nil { // else closed: nothing went wrong
				k.logger.WarnContext(ctx, "could not fetch signing keys", "authority", k.authority, "url", u, "err", err)
			}
			errs = append(errs, fmt.Errorf("%s: %w", u, err))
			continue
		}
		fetched[u] = keys
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for u, keys := range fetched {
		k.byURL[u] = keys
	}
	var all []jwkset.JWK
	for _, u := range k.urls {
		all = append(all, k.byURL[u]...)
	}
	_ = k.KeyReplaceAll(ctx, all) // a memory storage does not fail
	k.failed = errors.Join(errs...)
	k.schedule()
	k.fetching = nil
	close(done)
}

// schedule sets when keepFresh fetches next, after a fetch: in
// keySetRefreshEvery after a success; after a failure sooner, with a backoff
// that doubles between k.retry's bounds, jittered so that
// replicas spread out. Call with k.mu held.
func (k *remoteKeys) schedule() {
	if k.failed == nil {
		k.next, k.backoff = time.Now().Add(keySetRefreshEvery), k.retry.min
	} else {
		k.next = time.Now().Add(k.backoff/2 + rand.N(k.backoff/2+1))
		k.backoff = min(2*k.backoff, k.retry.max)
	}
	select {
	case k.rescheduled <- struct{}{}:
	default: // keepFresh has yet to see the previous one
	}
}

// fetchKeySet fetches and parses the JWK set at u. Keys of types jwkset
// does not support are left out; any other bad key fails the fetch.
func fetchKeySet(ctx context.Context, client *http.Client, u string) ([]jwkset.JWK, error) {
	ctx, cancel := context.WithTimeout(ctx, keyFetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, errors.New(resp.Status)
	}
	var set jwkset.JWKSMarshal
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxKeySetBytes)).Decode(&set); err != nil {
		return nil, fmt.Errorf("decode the key set: %w", err)
	}
	keys := make([]jwkset.JWK, 0, len(set.Keys))
	for _, m := range set.Keys {
		jwk, err := jwkset.NewJWKFromMarshal(m, jwkset.JWKMarshalOptions{}, jwkset.JWKValidateOptions{})
		switch {
		case errors.Is(err, jwkset.ErrUnsupportedKey):
			continue
		case err != nil:
			return nil, fmt.Errorf("key %q: %w", m.KID, err)
		}
		keys = append(keys, jwk)
	}
	return keys, nil
}
