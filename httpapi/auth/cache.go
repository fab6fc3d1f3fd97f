package auth

import (
	"crypto/sha256"
	"sync"
	"time"
	"unsafe"
)

// maxCachedTokens bounds a token cache.
const maxCachedTokens = 100_000

// tokenKey is a cached token's key: its SHA-256, so that no token is kept.
type tokenKey [sha256.Size]byte

// keyOf hashes the token's own bytes, which Sum256 only reads: converting it
// to a []byte would copy it to the heap on every request, a garbage copy of
// a secret left for the collector.
func keyOf(token string) tokenKey {
	return sha256.Sum256(unsafe.Slice(unsafe.StringData(token), len(token))) //nolint:gosec // read only, by Sum256
}

// checked is what checking a token gave: an e-mail, the Google account's
// subject and hosted domain (Google tokens) and the way in, or a refusal.
type checked struct {
	email   string
	subject string
	// hostedDomain is a Google token's hd: the Workspace organisation of
	// its account, "" for a consumer account (and for access tokens, whose
	// tokeninfo answers carry none).
	hostedDomain string
	method       string
	refusal      error
	until        time.Time
}

// tokenCache remembers checked tokens until their answer expires.
type tokenCache struct {
	now     func() time.Time
	mu      sync.Mutex
	entries map[tokenKey]checked
}

func newTokenCache(now func() time.Time) *tokenCache {
	return &tokenCache{now: now, entries: map[tokenKey]checked{}}
}

func (c *tokenCache) get(key tokenKey) (checked, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	got, ok := c.entries[key]
	if ok && !c.now().Before(got.until) {
		delete(c.entries, key)
		return checked{}, false
	}
	return got, ok
}

func (c *tokenCache) put(key tokenKey, got checked) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= maxCachedTokens {
		c.evict()
	}
	c.entries[key] = got
}

// evict drops expired answers, and if that is not enough, a tenth of the
// others (map order is random enough for a bounded cache).
func (c *tokenCache) evict() {
	now := c.now()
	for k, v := range c.entries {
		if !now.Before(v.until) {
			delete(c.entries, k)
		}
	}
	for k := range c.entries {
		if len(c.entries) < maxCachedTokens*9/10 {
			return
		}
		delete(c.entries, k)
	}
}
