package auth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/MicahParks/jwkset"
	"github.com/foldermirror/foldermirror/internal/googlefake"
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
