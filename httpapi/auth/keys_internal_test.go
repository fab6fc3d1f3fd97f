package auth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/MicahParks/jwkset"
	"github.com/foldermirror/foldermirror/internal/googlefake"
	"github.com/foldermirror/foldermirror/internal/wait"
)

// lateStore is a key store whose first lookup that misses returns only
// once a fetch has replaced the keys: the lookup of a request that came
// as a fetch was ending, which missed the keys just before the fetch
// brought them. missing is closed at that miss.
type lateStore struct {
	jwkset.Storage
	missing, replaced     chan struct{}
	missOnce, replaceOnce sync.Once
}

func (s *lateStore) KeyReplaceAll(ctx context.Context, given []jwkset.JWK) error {
	err := s.Storage.KeyReplaceAll(ctx, given)
	s.replaceOnce.Do(func() { close(s.replaced) })
	return err
}

func (s *lateStore) KeyRead(ctx context.Context, kid string) (jwkset.JWK, error) {
	jwk, err := s.Storage.KeyRead(ctx, kid)
	if err != nil {
		s.missOnce.Do(func() {
			close(s.missing)
			<-s.replaced
		})
	}
	return jwk, err
}

// A request that missed its key just before the fetch in flight brought it
// finds it in the fetched set, without spending the minute's refetch for
// unknown key IDs: a key rotated next is fetched at its first token. (The
// request spent it, the refetch going to a set that held the key, and the
// rotated key's first token was refused for its signature:
// TestKeyRotation's flake.)
func TestRefetchNotSpentOnAFetchJustEnded(t *testing.T) {
	fake := googlefake.New()
	store := &lateStore{Storage: jwkset.NewMemoryStorage(), missing: make(chan struct{}), replaced: make(chan struct{})}
	// The first fetch is answered once the request missed its key.
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-store.missing
		fake.ServeHTTP(w, r)
	}))
	t.Cleanup(server.Close)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	opts := Options{HTTPClient: http.DefaultClient, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	keys := newRemoteKeys(ctx, "Google", []string{server.URL + "/oauth2/v3/certs"}, store, opts)

	first := keyID(t, fake.GoogleIDToken("client", "alice@example.com"))
	if _, err := keys.KeyRead(ctx, first); err != nil {
		t.Fatalf("the key of the first token: %v", err)
	}
	fake.RotateSigningKey()
	rotated := keyID(t, fake.GoogleIDToken("client", "alice@example.com"))
	if _, err := keys.KeyRead(ctx, rotated); err != nil {
		t.Errorf("the rotated key, at its first token: %v", err)
	}
	if n := fake.CallCount("oauth2.certs"); n != 2 {
		t.Errorf("%d fetches of the key set, want 2 (the first, the rotated key's)", n)
	}
}

// keyID returns the kid of a JWT's header.
func keyID(t *testing.T, token string) string {
	t.Helper()
	header, _, _ := strings.Cut(token, ".")
	b, err := base64.RawURLEncoding.DecodeString(header)
	var h struct{ Kid string }
	if err != nil || json.Unmarshal(b, &h) != nil || h.Kid == "" {
		t.Fatalf("no key ID in the header %q", header)
	}
	return h.Kid
}

// heldKeyServer answers key fetches from a fake, as an http.RoundTripper;
// the first fetch reads the keys as they are when it asks, then waits for
// held to close before answering.
type heldKeyServer struct {
	fake    *googlefake.Server
	held    chan struct{}
	fetches atomic.Int32
}

func (s *heldKeyServer) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	s.fake.ServeHTTP(rec, r)
	if s.fetches.Add(1) == 1 {
		<-s.held
	}
	return rec.Result(), nil
}

// A request whose key ID the set lacks, waiting for a fetch in flight that
// began before the key was made (a rotation during the fetch), has the set
// fetched again when that fetch ends without it, the minute's refetch
// allowing: the fetch it waited for could not hold the key.
// (TestKeyRotation's Microsoft flake: the first fetch of Microsoft's two
// URLs still in flight at the rotation.) In a synctest bubble, so that the
// request is waiting for the fetch when it ends.
func TestRefetchAfterAFetchFromBeforeTheKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := googlefake.New()
		server := &heldKeyServer{fake: fake, held: make(chan struct{})}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		opts := Options{HTTPClient: &http.Client{Transport: server}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		keys := newRemoteKeys(ctx, "Microsoft", []string{"http://keys.test/common/discovery/keys"}, jwkset.NewMemoryStorage(), opts)
		synctest.Wait() // the first fetch read the keys, and waits to answer
		fake.RotateMicrosoftSigningKey()
		kid := keyID(t, fake.MicrosoftIDToken("2.0", "tenant", "app", "bob@example.com"))
		got := make(chan error, 1)
		go func() {
			_, err := keys.KeyRead(ctx, kid)
			got <- err
		}()
		synctest.Wait() // the request waits for the fetch in flight
		close(server.held)
		if err := <-got; err != nil {
			t.Errorf("the rotated key, its first token coming during a fetch from before the rotation: %v", err)
		}
		if n := server.fetches.Load(); n != 2 {
			t.Errorf("%d fetches, want 2 (the first, a refetch for the rotated key)", n)
		}
	})
}

// lookCounter is a key store that calls onMiss, when set, at each lookup
// of a key ID that misses, with the number of such misses so far.
type lookCounter struct {
	jwkset.Storage
	misses int
	onMiss func(n int)
}

func (s *lookCounter) KeyRead(ctx context.Context, kid string) (jwkset.JWK, error) {
	jwk, err := s.Storage.KeyRead(ctx, kid)
	if err != nil && s.onMiss != nil {
		s.misses++
		s.onMiss(s.misses)
	}
	return jwk, err
}

// A fetch that ends between a request's last look at the keys and its
// reading of whether the last fetch failed does not make the request take
// the keys it did not see for fresh: it gets its key, or 503, never a 401
// for a key a fresh set lacks. (A try of TestKeysDownAtRefetch once the
// keys were back, a retry ending at that moment, got 401 signature.) The
// request's last look (its third: the first, the look after any fetch in
// flight, the last) has the fetch run, wherever the code lets a fetch end
// there.
func TestFetchEndingAtTheLastLook(t *testing.T) {
	fake := googlefake.New()
	fake.Start()
	t.Cleanup(fake.Close)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	store := &lookCounter{Storage: jwkset.NewMemoryStorage()}
	opts := Options{HTTPClient: http.DefaultClient, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	keys := newRemoteKeys(ctx, "Google", []string{fake.GoogleJWKSURL()}, store, opts)
	wait.Receive(t, keys.fetch(), "the first fetch") // joins it
	fake.RotateSigningKey()
	fake.SetSigningKeysDown(true)
	rotated := keyID(t, fake.GoogleIDToken("client", "alice@example.com"))
	if _, err := keys.KeyRead(ctx, rotated); !errors.As(err, new(*keysUnavailableError)) {
		t.Fatalf("the rotated key, its refetch failing: %v, want the keys unavailable", err)
	}

	store.onMiss = func(n int) {
		if n != 3 || !keys.mu.TryLock() {
			return // not the last look, or one no fetch can end during
		}
		keys.mu.Unlock()
		fake.SetSigningKeysDown(false)
		wait.Receive(t, keys.fetch(), "a fetch with the keys back")
	}
	if _, err := keys.KeyRead(ctx, rotated); errors.Is(err, jwkset.ErrKeyNotFound) {
		t.Errorf("the rotated key, a fetch bringing it ending at the last look: %v, want the key or the keys unavailable", err)
	}
}
