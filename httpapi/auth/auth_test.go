package auth_test

import (
	"crypto/rand"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/httpapi/auth"
	"github.com/foldermirror/foldermirror/internal/googlefake"
)

const emailScope = "https://www.googleapis.com/auth/userinfo.email"

func TestAccessTokens(t *testing.T) {
	w := newWorld(t)
	w.fake.AddUser("carol@example.com")
	w.fake.AddUser("dave@example.com")
	w.fake.SetEmailVerified("carol@example.com", false)
	for _, tc := range []struct {
		name, token, code, reason, email string
	}{
		{"valid", w.fake.GoogleAccessToken(googleClient, "alice@example.com", time.Hour, emailScope, "openid"), "", "", "alice@example.com"},
		{"short email scope", w.fake.GoogleAccessToken(googleClient, "bob@example.com", time.Hour, "email"), "", "", "bob@example.com"},
		{"expired", w.fake.GoogleAccessToken(googleClient, "alice@example.com", -time.Minute, emailScope), fm.EUNAUTHENTICATED, auth.ReasonInvalid, ""},
		{"foreign client", w.fake.GoogleAccessToken("evil.apps.googleusercontent.com", "alice@example.com", time.Hour, emailScope), fm.EUNAUTHENTICATED, auth.ReasonAudience, ""},
		{"no email scope", w.fake.GoogleAccessToken(googleClient, "alice@example.com", time.Hour, "https://www.googleapis.com/auth/drive"), fm.EUNAUTHENTICATED, auth.ReasonScope, ""},
		{"unverified e-mail", w.fake.GoogleAccessToken(googleClient, "carol@example.com", time.Hour, emailScope), fm.EUNAUTHENTICATED, auth.ReasonClaims, ""},
		{"unknown user of the domain", w.fake.GoogleAccessToken(googleClient, "dave@example.com", time.Hour, emailScope), fm.EUNAUTHENTICATED, auth.ReasonUnknownUser, ""},
		{"made up", "ya29.not-a-real-token", fm.EUNAUTHENTICATED, auth.ReasonInvalid, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := w.try("Bearer "+tc.token, "", "")
			if got.email != tc.email || got.code != tc.code || got.reason != tc.reason {
				t.Errorf("got %+v, want %s %s %s", got, tc.email, tc.code, tc.reason)
			}
		})
	}
}

// A checked access token costs one tokeninfo call for 5 minutes; when
// tokeninfo cannot be reached, callers get 503 with Retry-After, not 401.
func TestAccessTokenCacheAndOutage(t *testing.T) {
	w := newWorld(t)
	token := w.fake.GoogleAccessToken(googleClient, "alice@example.com", time.Hour, emailScope)
	for range 5 {
		if got := w.try("Bearer "+token, "", ""); got.email != "alice@example.com" {
			t.Fatalf("got %+v", got)
		}
	}
	if n := w.fake.CallCount("oauth2.tokeninfo"); n != 1 {
		t.Errorf("%d tokeninfo calls for 5 requests with one token", n)
	}
	w.fake.SetTokeninfoDown(true)
	if got := w.try("Bearer "+token, "", ""); got.email != "alice@example.com" {
		t.Errorf("cached token refused while tokeninfo is down: %+v", got)
	}
	other := w.fake.GoogleAccessToken(googleClient, "bob@example.com", time.Hour, emailScope)
	got := w.try("Bearer "+other, "", "")
	if got.code != fm.EUNAVAILABLE || got.retryAfter <= 0 {
		t.Errorf("tokeninfo down: %+v, want EUNAVAILABLE with a Retry-After", got)
	}
	w.fake.SetTokeninfoDown(false)
	if got := w.try("Bearer "+other, "", ""); got.email != "bob@example.com" {
		t.Errorf("after the outage: %+v (an outage must not be cached)", got)
	}
}

// clock is a settable clock, safe for concurrent use.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// tokeninfo's answer for a good access token is kept 5 minutes at most,
// however long the token has to live, so that a token revoked is refused
// within 5 minutes; a token that expires sooner is kept until it expires.
func TestAccessTokenCachedFiveMinutesAtMost(t *testing.T) {
	c := &clock{now: time.Now()}
	w := newWorldWith(t, func(w *world) { w.now = c.Now })
	long := "Bearer " + w.fake.GoogleAccessToken(googleClient, "alice@example.com", time.Hour, emailScope)
	short := "Bearer " + w.fake.GoogleAccessToken(googleClient, "bob@example.com", 3*time.Minute, emailScope)
	start := c.Now()
	for _, tc := range []struct {
		at          time.Duration
		revoke      bool   // revoke the long-lived token first
		long, short string // the e-mail or refusal reason each token gets
		calls       int    // tokeninfo calls so far
	}{
		{0, false, "alice@example.com", "bob@example.com", 2},
		{2*time.Minute + 50*time.Second, false, "alice@example.com", "bob@example.com", 2},
		{3*time.Minute + 10*time.Second, true, "alice@example.com", auth.ReasonExpired, 3},  // the short one asked again
		{4*time.Minute + 55*time.Second, false, "alice@example.com", auth.ReasonExpired, 4}, // its refusal kept a minute
		{5*time.Minute + 5*time.Second, false, auth.ReasonInvalid, auth.ReasonExpired, 5},   // the long one asked again
	} {
		c.advance(start.Add(tc.at).Sub(c.Now()))
		if tc.revoke {
			w.fake.RevokeAccessToken(strings.TrimPrefix(long, "Bearer "))
		}
		for _, tok := range []struct{ name, header, want string }{{"long-lived", long, tc.long}, {"short-lived", short, tc.short}} {
			if got := w.try(tok.header, "", ""); got.email != tok.want && got.reason != tok.want {
				t.Errorf("at %v, the %s token: %+v, want %s", tc.at, tok.name, got, tok.want)
			}
		}
		if n := w.fake.CallCount("oauth2.tokeninfo"); n != tc.calls {
			t.Errorf("at %v: %d tokeninfo calls, want %d", tc.at, n, tc.calls)
		}
	}
}

func TestSecurityCodes(t *testing.T) {
	w := newWorld(t)
	for _, tc := range []struct{ name, header, query, want string }{
		{"header", "securityCode " + aliceCode, "", "alice@example.com"},
		{"query", "", "?securityCode=" + url.QueryEscape(adminCode), "admin:example.com"},
		{"scheme case", "SecurityCode " + aliceCode, "", "alice@example.com"},
	} {
		if got := w.try(tc.header, tc.query, ""); got.email != tc.want {
			t.Errorf("%s: %+v, want %s", tc.name, got, tc.want)
		}
	}
}

// From the 21st failed code within a minute, every security-code request of
// that address is refused with 429, valid codes too; other addresses and
// Bearer tokens are not slowed.
func TestSecurityCodeThrottle(t *testing.T) {
	w := newWorld(t)
	const attacker, bystander = "198.51.100.7:4000", "198.51.100.8:4000"
	for i := range 20 {
		if got := w.try(fmt.Sprintf("securityCode guess-%d", i), "", attacker); got.code != fm.EFORBIDDEN {
			t.Fatalf("guess %d: %+v, want EFORBIDDEN", i+1, got)
		}
	}
	for _, h := range []string{"securityCode guess-21", "securityCode " + aliceCode} {
		got := w.try(h, "", attacker)
		if got.code != fm.ERATELIMITED || got.reason != auth.ReasonThrottled || got.retryAfter <= 0 || got.retryAfter > time.Minute {
			t.Errorf("%s after 20 failures: %+v, want ERATELIMITED with Retry-After up to a minute", h, got)
		}
	}
	if got := w.try("", "?securityCode="+aliceCode, attacker); got.code != fm.ERATELIMITED {
		t.Errorf("query code after 20 failures: %+v", got)
	}
	if got := w.try("securityCode "+aliceCode, "", bystander); got.email != "alice@example.com" {
		t.Errorf("another address: %+v", got)
	}
	if got := w.try("Bearer "+w.google(), "", attacker); got.email != "alice@example.com" {
		t.Errorf("a Bearer token from the throttled address: %+v", got)
	}
}

// Forged tokens with random key IDs (250; 10,000 with -tags long) make
// the key set be fetched again at most once (a minute), for Google's keys
// and Microsoft's.
func TestUnknownKeyIDsRefetchAtMostOncePerMinute(t *testing.T) {
	w := newWorld(t)
	for name, genuine := range map[string]string{"oauth2.certs": w.google(), "microsoft.keys": w.ms("2.0")} {
		if got := w.try("Bearer "+genuine, "", ""); got.email == "" {
			t.Fatalf("genuine token refused: %+v", got)
		}
		before := w.fake.CallCount(name)
		for range forgedKeyIDs {
			tok := withHeader(genuine, map[string]any{"alg": "RS256", "kid": fmt.Sprintf("%x", rand.Text())})
			if got := w.try("Bearer "+tok, "", ""); got.code != fm.EUNAUTHENTICATED {
				t.Fatalf("forged token: %+v", got)
			}
		}
		fetches := w.fake.CallCount(name) - before
		t.Logf("%s: %d forged key IDs caused %d key set fetches", name, forgedKeyIDs, fetches)
		if most := map[string]int{"oauth2.certs": 1, "microsoft.keys": 2}[name]; fetches > most {
			t.Errorf("%s: %d forged key IDs caused %d key set fetches, want at most %d (one per key URL)", name, forgedKeyIDs, fetches, most)
		}
	}
}

// A rotated key is picked up: the first token signed with the new key
// refetches the set (the minute's one refetch).
func TestKeyRotation(t *testing.T) {
	w := newWorld(t)
	if got := w.try("Bearer "+w.google(), "", ""); got.email == "" {
		t.Fatalf("genuine token refused: %+v", got)
	}
	w.fake.RotateSigningKey()
	if got := w.try("Bearer "+w.google(), "", ""); got.email != "alice@example.com" {
		t.Errorf("token signed with the rotated key: %+v", got)
	}
	w.fake.RotateMicrosoftSigningKey()
	if got := w.try("Bearer "+w.ms("2.0"), "", ""); got.email != "bob@example.com" {
		t.Errorf("microsoft token signed with the rotated key: %+v", got)
	}
	if !strings.Contains(fmt.Sprint(w.fake.Calls()), "microsoft.keys") {
		t.Error("the Microsoft key set was never fetched")
	}
}

// A user the configuration lists whom the directory marks suspended is not
// a known user, whatever the way in: suspension wins.
func TestSuspensionWinsOverTheConfiguration(t *testing.T) {
	w := newWorld(t)
	w.dir.Replace(&fm.DirectorySnapshot{Domain: "example.com", Users: map[string]fm.DirectoryUser{
		"alice@example.com": {ID: googlefake.UserID("alice@example.com"), Suspended: true},
		"bob@example.com":   {ID: googlefake.UserID("bob@example.com")},
	}})
	for _, tc := range []struct{ way, header string }{
		{"Google ID token", "Bearer " + w.google()},
		{"Google access token", "Bearer " + w.fake.GoogleAccessToken(googleClient, "alice@example.com", time.Hour, emailScope)},
		{"Microsoft ID token", "Bearer " + w.fake.MicrosoftIDToken("2.0", tenant, appID, "alice@example.com")},
		{"security code acting as the user", "securityCode " + aliceCode},
	} {
		if got := w.try(tc.header, "", ""); got.code != fm.EUNAUTHENTICATED || got.reason != auth.ReasonUnknownUser {
			t.Errorf("%s of a suspended user the configuration lists: %+v, want 401 %s", tc.way, got, auth.ReasonUnknownUser)
		}
	}
	if got := w.try("Bearer "+w.fake.GoogleIDToken(googleClient, "bob@example.com"), "", ""); got.email != "bob@example.com" {
		t.Errorf("a user the directory does not mark suspended: %+v", got)
	}
}
