package auth_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/internal/googlefake"
)

// principals authenticates a request with that Authorization header and
// returns the caller's principals.
func (w *world) principals(header string) ([]string, error) {
	r := httptest.NewRequest(http.MethodGet, "/folder/v1/files/x", nil)
	r.Header.Set("Authorization", header)
	id, err := w.a.Authenticate(r)
	if err != nil {
		return nil, err
	}
	return id.Principals(), nil
}

// partnerDomain is a partner's domain, which the world does not configure.
const partnerDomain = "ally.org"

// domain:D reaches only callers whose organisation is D (DESIGN §4): a known
// user of configured domain D, a Microsoft caller whose upn is in D, a
// security code of D, or, for a domain not configured, a Google caller whose
// token carries hd = D. A consumer account at a partner's address (no hd),
// or any access token of a partner's address (tokeninfo carries no hd),
// keeps its user: principal and gets no domain: one.
func TestPrincipalsPerWayIn(t *testing.T) {
	w := newWorld(t)
	// A directory synced while its domain was configured, kept by the
	// index since: its users are known, of no configured organisation.
	w.dir.Replace(&fm.DirectorySnapshot{Domain: "former.example", Users: map[string]fm.DirectoryUser{
		"fred@former.example": {ID: googlefake.UserID("fred@former.example")}}})
	const pat = "pat@" + partnerDomain
	bearer := func(tok string) string { return "Bearer " + tok }
	access := func(email string) string {
		return bearer(w.fake.GoogleAccessToken(googleClient, email, time.Hour, emailScope))
	}
	alice := []string{"user:alice@example.com", "domain:example.com", "anyone"}
	for _, tc := range []struct {
		name, header string
		want         []string
	}{
		// Configured domains.
		{"Google ID token of a directory user", bearer(w.google()), alice},
		{"Google access token of a directory user", access("alice@example.com"), alice},
		{"Google ID token of a user only the configuration lists", bearer(w.fake.GoogleIDToken(googleClient, "cora@example.com")),
			[]string{"user:cora@example.com", "domain:example.com", "anyone"}},
		{"Google ID token of a configured domain without a directory", bearer(w.fake.GoogleIDToken(googleClient, "mallory@partner.org")),
			[]string{"user:mallory@partner.org", "domain:partner.org", "anyone"}},
		{"Microsoft ID token", bearer(w.ms("2.0")), []string{"user:bob@example.com", "domain:example.com", "anyone"}},
		{"Microsoft ID token of another configured domain", bearer(w.fake.MicrosoftIDToken("1.0", tenant, appID, "mallory@partner.org")),
			[]string{"user:mallory@partner.org", "domain:partner.org", "anyone"}},
		{"Microsoft ID token of a known user of a domain no longer configured", bearer(w.fake.MicrosoftIDToken("2.0", tenant, appID, "fred@former.example")),
			[]string{"user:fred@former.example", "anyone"}},
		{"security code acting as a user", "securityCode " + aliceCode, alice},
		{"security code acting as the admin (reads as an owner, through no principal)", "securityCode " + adminCode, nil},
		// A partner's domain: hd, or nothing.
		{"partner's Workspace account, ID token (hd)", bearer(w.fake.GoogleIDToken(googleClient, pat)),
			[]string{"user:" + pat, "domain:" + partnerDomain, "anyone"}},
		{"partner's Workspace account, hd in capitals", bearer(w.fake.GoogleIDToken(googleClient, pat, googlefake.WithHostedDomain("Ally.ORG"))),
			[]string{"user:" + pat, "domain:" + partnerDomain, "anyone"}},
		{"partner's Workspace account at another of its domains (hd names the organisation)",
			bearer(w.fake.GoogleIDToken(googleClient, "pat@ally-alias.net", googlefake.WithHostedDomain(partnerDomain))),
			[]string{"user:pat@ally-alias.net", "domain:" + partnerDomain, "anyone"}},
		{"consumer account at a partner's address, ID token (no hd)", bearer(w.fake.ConsumerIDToken(googleClient, pat)),
			[]string{"user:" + pat, "anyone"}},
		{"consumer account at a partner's address, access token", bearer(w.fake.ConsumerAccessToken(googleClient, pat, time.Hour, emailScope)),
			[]string{"user:" + pat, "anyone"}},
		{"partner's Workspace account, access token (tokeninfo carries no hd)", access(pat),
			[]string{"user:" + pat, "anyone"}},
		{"consumer account at a public address", bearer(w.fake.ConsumerIDToken(googleClient, "someone@gmail.com")),
			[]string{"user:someone@gmail.com", "anyone"}},
		{"address of another domain, hd of a configured one (not its known user)",
			bearer(w.fake.GoogleIDToken(googleClient, "someone@elsewhere.net", googlefake.WithHostedDomain("example.com"))),
			[]string{"user:someone@elsewhere.net", "anyone"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range 2 { // the second time from the token caches
				got, err := w.principals(tc.header)
				if err != nil || !slices.Equal(got, tc.want) {
					t.Errorf("time %d: principals %q, %v; want %q", i+1, got, err, tc.want)
				}
			}
		})
	}
}

// Google's tokeninfo answers access tokens without hd; should an answer
// carry one, it shows the organisation as an ID token's does (DESIGN §4:
// "whose ID token (or tokeninfo answer) carries hd = D").
func TestPrincipalsFromTokeninfoHostedDomain(t *testing.T) {
	answers := map[string]map[string]any{
		"ya29.partner": {"email": "pat@" + partnerDomain, "hd": partnerDomain},
		"ya29.foreign": {"email": "someone@elsewhere.net", "hd": "example.com"},
		"ya29.none":    {"email": "pat@" + partnerDomain},
	}
	stub := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		a, ok := answers[r.FormValue("access_token")]
		if !ok {
			http.Error(rw, `{"error":"invalid_token"}`, http.StatusBadRequest)
			return
		}
		answer := map[string]any{"aud": googleClient, "azp": googleClient, "sub": "1234", "scope": emailScope,
			"exp": strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10), "email_verified": "true"}
		for k, v := range a {
			answer[k] = v
		}
		json.NewEncoder(rw).Encode(answer)
	}))
	t.Cleanup(stub.Close)
	w := newWorldWith(t, func(w *world) { w.tokeninfoURL = stub.URL })
	for token, want := range map[string][]string{
		"ya29.partner": {"user:pat@" + partnerDomain, "domain:" + partnerDomain, "anyone"},
		"ya29.foreign": {"user:someone@elsewhere.net", "anyone"},
		"ya29.none":    {"user:pat@" + partnerDomain, "anyone"},
	} {
		if got, err := w.principals("Bearer " + token); err != nil || !slices.Equal(got, want) {
			t.Errorf("tokeninfo answer %v: principals %q, %v; want %q", answers[token], got, err, want)
		}
	}
}
