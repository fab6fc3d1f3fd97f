package auth_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/httpapi/auth"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/googlefake"
	"github.com/foldermirror/foldermirror/internal/wait"
	"github.com/golang-jwt/jwt/v5"
)

const (
	googleClient = "good.apps.googleusercontent.com"
	tenant       = "6e2c7c1a-5b7d-4f0e-9a43-0c1f1f4b2a10"
	otherTenant  = "0b9f8c2e-1d2a-4c3b-8e7f-6a5d4c3b2a19"
	appID        = "8c3d1b2a-9e8f-4a7b-b6c5-d4e3f2a1b0c9"
	adminCode    = "open-sesame-admin"
	aliceCode    = "open-sesame-alice"
	expiredCode  = "open-sesame-expired"
)

// world is a Google fake, an Authenticator configured against it, and an
// attacker's key server that must never be asked anything.
//
// example.com's directory (dir, as a directory sync reads it) lists alice
// and bob, with the fake's IDs; the Authenticator's domains list them too,
// and cora, whom the directory does not list. partner.org has no
// directory: its domain lists mallory.
type world struct {
	t        testing.TB
	fake     *googlefake.Server
	dir      *fm.Directories
	a        *auth.Authenticator
	attacker *httptest.Server
	hits     atomic.Int32
	evilKey  *rsa.PrivateKey
	// googleJWKSURL is the Authenticator's Google.JWKSURL: the fake's
	// unless changed before the Authenticator is made.
	googleJWKSURL string
	// tokeninfoURL is the Authenticator's Google.TokeninfoURL: the fake's
	// unless changed before the Authenticator is made.
	tokeninfoURL string
	// now is the Authenticator's clock: time.Now unless set before it is
	// made.
	now func() time.Time
	// keyRetryMin and keyRetryMax bound the backoff between failed fetches
	// of signing keys: the Authenticator's (a second to a minute) unless
	// set before it is made.
	keyRetryMin, keyRetryMax time.Duration
}

func newWorld(tb testing.TB) *world { return newWorldWith(tb, nil) }

// newWorldWith is newWorld, with before (if not nil) run on the world
// before its Authenticator is made.
func newWorldWith(tb testing.TB, before func(w *world)) *world {
	tb.Helper()
	w := &world{t: tb, fake: fmtest.StartGoogle(tb)}
	w.googleJWKSURL, w.tokeninfoURL = w.fake.GoogleJWKSURL(), w.fake.TokeninfoURL()
	w.attacker = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.hits.Add(1)
		io.WriteString(rw, `{"keys":[]}`)
	}))
	tb.Cleanup(w.attacker.Close)
	w.evilKey = googlefake.ForeignKey(0)
	for _, u := range []string{"alice@example.com", "bob@example.com"} {
		w.fake.AddUser(u)
	}
	if before != nil {
		before(w)
	}
	o := fmtest.AuthOptions(w.fake)
	o.Google.ClientIDs = []string{googleClient, "second.apps.googleusercontent.com"}
	o.Google.JWKSURL, o.Google.TokeninfoURL = w.googleJWKSURL, w.tokeninfoURL
	o.Microsoft = auth.Microsoft{
		JWKSURLs: []string{w.fake.MicrosoftJWKSURL(), w.fake.MicrosoftJWKSURLv2()},
		Tenants:  []auth.Tenant{{ID: tenant, ApplicationIDs: []string{appID}}},
	}
	o.Domains = []auth.Domain{{
		Name:  "example.com",
		Users: []string{"alice@example.com", "bob@example.com", "cora@example.com"},
		SecurityCodes: []auth.SecurityCode{
			{SHA256: sha256.Sum256([]byte(adminCode)), ActAsAdmin: true},
			{SHA256: sha256.Sum256([]byte(aliceCode)), ActAsUser: "alice@example.com", Expires: time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)},
			{SHA256: sha256.Sum256([]byte(expiredCode)), ActAsAdmin: true, Expires: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)},
		},
	}, {
		Name:  "partner.org",
		Users: []string{"mallory@partner.org"},
	}}
	w.dir = &fm.Directories{}
	w.dir.Replace(&fm.DirectorySnapshot{Domain: "example.com", Users: map[string]fm.DirectoryUser{
		"alice@example.com": {ID: googlefake.UserID("alice@example.com")},
		"bob@example.com":   {ID: googlefake.UserID("bob@example.com")},
	}})
	o.Directory, o.Now = w.dir, w.now
	if w.keyRetryMin > 0 {
		auth.SetKeyFetchBackoff(&o, w.keyRetryMin, w.keyRetryMax)
	}
	w.a = auth.New(o)
	tb.Cleanup(w.a.Close)
	return w
}

// outcome is what authenticating one request gave.
type outcome struct {
	email, code, reason string
	retryAfter          time.Duration
}

func (w *world) try(header, query, remote string) outcome {
	w.t.Helper()
	return w.tryWith(context.Background(), header, query, remote)
}

// tryWith is try with the request's context.
func (w *world) tryWith(ctx context.Context, header, query, remote string) outcome {
	w.t.Helper()
	r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/folder/v1/files/x"+query, nil)
	if header != "" {
		r.Header.Set("Authorization", header)
	}
	if remote != "" {
		r.RemoteAddr = remote
	}
	id, err := w.a.Authenticate(r)
	if err != nil {
		var e *fm.Error
		o := outcome{code: fm.ErrorCode(err), reason: auth.FailureReason(err)}
		if errors.As(err, &e) {
			o.retryAfter = e.RetryAfter
		}
		return o
	}
	who := id.Email
	if id.Admin {
		who = "admin:" + id.Domain
	}
	return outcome{email: who}
}

// google returns a Google ID token for alice with changes applied.
func (w *world) google(opts ...googlefake.TokenOption) string {
	return w.fake.GoogleIDToken(googleClient, "alice@example.com", opts...)
}

func (w *world) ms(version string, opts ...googlefake.TokenOption) string {
	return w.fake.MicrosoftIDToken(version, tenant, appID, "bob@example.com", opts...)
}

// forge signs claims with a key of the attacker's, with the given header.
func (w *world) forge(header map[string]any, claims jwt.MapClaims) string {
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	for k, v := range header {
		tok.Header[k] = v
	}
	s, err := tok.SignedString(w.evilKey)
	if err != nil {
		w.t.Fatal(err)
	}
	return s
}

func (w *world) googleClaims() jwt.MapClaims {
	now := time.Now().Unix()
	return jwt.MapClaims{"iss": "https://accounts.google.com", "aud": googleClient, "email": "alice@example.com",
		"email_verified": true, "iat": now, "exp": now + 3600, "sub": "1"}
}

// hs256WithPublicKey: the classic confusion attack, HMAC keyed with the PEM
// of the issuer's RSA public key.
func hs256WithPublicKey(t testing.TB, pem []byte, claims jwt.MapClaims) string {
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(pem)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// withAlg re-signs nothing: it swaps the header of a genuine token.
func withHeader(token string, header map[string]any) string {
	h, _ := json.Marshal(header)
	parts := strings.Split(token, ".")
	parts[0] = base64.RawURLEncoding.EncodeToString(h)
	return strings.Join(parts, ".")
}

// tamper changes a claim of a signed token without re-signing it.
func tamper(token, claim string, value any) string {
	parts := strings.Split(token, ".")
	data, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var claims map[string]any
	json.Unmarshal(data, &claims)
	claims[claim] = value
	data, _ = json.Marshal(claims)
	parts[1] = base64.RawURLEncoding.EncodeToString(data)
	return strings.Join(parts, ".")
}

func rel(d time.Duration) int64 { return time.Now().Add(d).Unix() }

func v1Issuer(tid string) string { return "https://sts.windows.net/" + tid + "/" }
func v2Issuer(tid string) string { return "https://login.microsoftonline.com/" + tid + "/v2.0" }

func TestAttacks(t *testing.T) {
	w := newWorld(t)
	claim := googlefake.WithClaim
	bearer := func(tok string) string { return "Bearer " + tok }
	noneToken := func(alg string) string {
		h, _ := json.Marshal(map[string]any{"alg": alg, "typ": "JWT"})
		c, _ := json.Marshal(w.googleClaims())
		return base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(c) + "."
	}
	fresh := w.google()
	kid := func(tok string) string {
		h, _ := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[0])
		var m map[string]any
		json.Unmarshal(h, &m)
		return m["kid"].(string)
	}(fresh)
	const (
		ok     = ""
		unauth = fm.EUNAUTHENTICATED
	)
	for _, tc := range []struct {
		name, header, code, reason, email string
	}{
		// The ways in that work.
		{"google ID token", bearer(fresh), ok, "", "alice@example.com"},
		{"google ID token, bare issuer", bearer(w.google(claim("iss", "accounts.google.com"))), ok, "", "alice@example.com"},
		{"google ID token, second client", bearer(w.fake.GoogleIDToken("second.apps.googleusercontent.com", "bob@example.com")), ok, "", "bob@example.com"},
		{"google, audience array all allowed", bearer(w.google(claim("aud", []string{googleClient, "second.apps.googleusercontent.com"}))), ok, "", "alice@example.com"},
		{"google, email_verified as string", bearer(w.google(claim("email_verified", "true"))), ok, "", "alice@example.com"},
		{"google, caller of another domain", bearer(w.fake.GoogleIDToken(googleClient, "someone@elsewhere.net")), ok, "", "someone@elsewhere.net"},
		{"microsoft v1.0", bearer(w.ms("1.0")), ok, "", "bob@example.com"},
		{"microsoft v2.0", bearer(w.ms("2.0")), ok, "", "bob@example.com"},
		{"microsoft, email ignored", bearer(w.ms("2.0", claim("email", "alice@example.com"))), ok, "", "bob@example.com"},
		{"microsoft, known user of another domain", bearer(w.fake.MicrosoftIDToken("2.0", tenant, appID, "mallory@partner.org")), ok, "", "mallory@partner.org"},
		{"security code header", "securityCode " + aliceCode, ok, "", "alice@example.com"},
		{"security code admin", "securityCode " + adminCode, ok, "", "admin:example.com"},

		// alg none, in any case.
		{"alg none", bearer(noneToken("none")), unauth, auth.ReasonSignature, ""},
		{"alg None", bearer(noneToken("None")), unauth, auth.ReasonSignature, ""},
		{"alg NONE", bearer(noneToken("NONE")), unauth, auth.ReasonSignature, ""},
		{"alg nOnE", bearer(noneToken("nOnE")), unauth, auth.ReasonSignature, ""},
		// Algorithm confusion and algorithms off the list.
		{"HS256 with google public key", bearer(hs256WithPublicKey(t, w.fake.GooglePublicKeyPEM(), w.googleClaims())), unauth, auth.ReasonSignature, ""},
		{"HS256 with microsoft public key", bearer(hs256WithPublicKey(t, w.fake.MicrosoftPublicKeyPEM(), jwt.MapClaims{"iss": v2Issuer(tenant), "tid": tenant, "aud": appID, "ver": "2.0", "oid": "x", "upn": "bob@example.com", "exp": rel(time.Hour)})), unauth, auth.ReasonSignature, ""},
		{"header says RS512", bearer(withHeader(fresh, map[string]any{"alg": "RS512", "kid": kid})), unauth, auth.ReasonSignature, ""},
		{"header says PS256", bearer(withHeader(fresh, map[string]any{"alg": "PS256", "kid": kid})), unauth, auth.ReasonSignature, ""},
		{"header says ES256", bearer(withHeader(fresh, map[string]any{"alg": "ES256", "kid": kid})), unauth, auth.ReasonSignature, ""},
		{"header says HS256", bearer(withHeader(fresh, map[string]any{"alg": "HS256", "kid": kid})), unauth, auth.ReasonSignature, ""},
		// Header URLs and embedded keys are never followed.
		{"jku to attacker", bearer(w.forge(map[string]any{"jku": w.attacker.URL, "kid": "evil"}, w.googleClaims())), unauth, auth.ReasonSignature, ""},
		{"x5u to attacker", bearer(w.forge(map[string]any{"x5u": w.attacker.URL, "kid": "evil"}, w.googleClaims())), unauth, auth.ReasonSignature, ""},
		{"embedded jwk", bearer(w.forge(map[string]any{"jwk": map[string]any{"kty": "RSA", "n": base64.RawURLEncoding.EncodeToString(w.evilKey.N.Bytes()), "e": "AQAB"}}, w.googleClaims())), unauth, auth.ReasonSignature, ""},
		{"kid of google's key, attacker's signature", bearer(w.forge(map[string]any{"kid": kid}, w.googleClaims())), unauth, auth.ReasonSignature, ""},
		{"kid path traversal", bearer(w.forge(map[string]any{"kid": "../../../../etc/passwd"}, w.googleClaims())), unauth, auth.ReasonSignature, ""},
		{"no kid, attacker's signature", bearer(w.forge(map[string]any{}, w.googleClaims())), unauth, auth.ReasonSignature, ""},
		{"kid not a string", bearer(withHeader(fresh, map[string]any{"alg": "RS256", "kid": 42})), unauth, auth.ReasonSignature, ""},
		// Tampering and crossed authorities.
		{"tampered email", bearer(tamper(fresh, "email", "bob@example.com")), unauth, auth.ReasonSignature, ""},
		{"tampered exp", bearer(tamper(w.google(googlefake.WithTTL(-time.Hour)), "exp", rel(time.Hour))), unauth, auth.ReasonSignature, ""},
		{"google-signed, microsoft issuer", bearer(w.google(claim("iss", v2Issuer(tenant)), claim("tid", tenant), claim("ver", "2.0"), claim("oid", "o"), claim("upn", "bob@example.com"), claim("aud", appID))), unauth, auth.ReasonSignature, ""},
		{"microsoft-signed, google issuer", bearer(w.ms("2.0", claim("iss", "https://accounts.google.com"), claim("aud", googleClient), claim("email", "alice@example.com"), claim("email_verified", true))), unauth, auth.ReasonSignature, ""},
		// Issuer variants.
		{"google issuer trailing slash", bearer(w.google(claim("iss", "https://accounts.google.com/"))), unauth, auth.ReasonIssuer, ""},
		{"google issuer http", bearer(w.google(claim("iss", "http://accounts.google.com"))), unauth, auth.ReasonIssuer, ""},
		{"google issuer other host", bearer(w.google(claim("iss", "https://accounts.google.com.evil.example"))), unauth, auth.ReasonIssuer, ""},
		{"issuer missing", bearer(w.google(claim("iss", nil))), unauth, auth.ReasonIssuer, ""},
		{"issuer not a string", bearer(w.google(claim("iss", 7))), unauth, auth.ReasonIssuer, ""},
		{"v1 issuer without trailing slash", bearer(w.ms("1.0", claim("iss", strings.TrimSuffix(v1Issuer(tenant), "/")))), unauth, auth.ReasonIssuer, ""},
		{"v1 issuer http", bearer(w.ms("1.0", claim("iss", strings.Replace(v1Issuer(tenant), "https", "http", 1)))), unauth, auth.ReasonIssuer, ""},
		{"v2 issuer trailing slash", bearer(w.ms("2.0", claim("iss", v2Issuer(tenant)+"/"))), unauth, auth.ReasonIssuer, ""},
		{"v2 issuer other host", bearer(w.ms("2.0", claim("iss", "https://login.microsoftonline.evil/"+tenant+"/v2.0"))), unauth, auth.ReasonIssuer, ""},
		{"tid in issuer not a GUID", bearer(w.ms("2.0", claim("iss", v2Issuer("contoso")), claim("tid", "contoso"))), unauth, auth.ReasonIssuer, ""},
		// Tenant and version.
		{"tid differs from issuer", bearer(w.ms("2.0", claim("tid", otherTenant))), unauth, auth.ReasonTenant, ""},
		{"tid missing", bearer(w.ms("2.0", claim("tid", nil))), unauth, auth.ReasonTenant, ""},
		{"tenant not configured", bearer(w.fake.MicrosoftIDToken("2.0", otherTenant, appID, "bob@example.com")), unauth, auth.ReasonTenant, ""},
		{"v1 issuer, ver 2.0", bearer(w.ms("1.0", claim("ver", "2.0"))), unauth, auth.ReasonVersion, ""},
		{"v2 issuer, ver 1.0", bearer(w.ms("2.0", claim("ver", "1.0"))), unauth, auth.ReasonVersion, ""},
		{"ver missing", bearer(w.ms("2.0", claim("ver", nil))), unauth, auth.ReasonVersion, ""},
		// Audiences.
		{"google aud missing", bearer(w.google(claim("aud", nil))), unauth, auth.ReasonAudience, ""},
		{"google aud foreign", bearer(w.fake.GoogleIDToken("evil.apps.googleusercontent.com", "alice@example.com")), unauth, auth.ReasonAudience, ""},
		{"google aud array with a foreign value", bearer(w.google(claim("aud", []string{googleClient, "evil"}))), unauth, auth.ReasonAudience, ""},
		{"google aud empty array", bearer(w.google(claim("aud", []string{}))), unauth, auth.ReasonAudience, ""},
		{"microsoft aud missing", bearer(w.ms("2.0", claim("aud", nil))), unauth, auth.ReasonAudience, ""},
		{"microsoft aud foreign", bearer(w.ms("2.0", claim("aud", "00000003-0000-0000-c000-000000000000"))), unauth, auth.ReasonAudience, ""},
		{"microsoft aud array with a foreign value", bearer(w.ms("1.0", claim("aud", []string{appID, "evil"}))), unauth, auth.ReasonAudience, ""},
		// Time, at the edges of the 30 s leeway.
		{"exp just inside the leeway", bearer(w.google(claim("exp", rel(-20*time.Second)))), ok, "", "alice@example.com"},
		{"exp just outside the leeway", bearer(w.google(claim("exp", rel(-40*time.Second)))), unauth, auth.ReasonExpired, ""},
		{"exp missing", bearer(w.google(claim("exp", nil))), unauth, auth.ReasonClaims, ""},
		{"nbf just inside the leeway", bearer(w.ms("2.0", claim("nbf", rel(20*time.Second)))), ok, "", "bob@example.com"},
		{"nbf just outside the leeway", bearer(w.ms("2.0", claim("nbf", rel(40*time.Second)))), unauth, auth.ReasonNotYetValid, ""},
		{"iat just inside the leeway", bearer(w.google(claim("iat", rel(20*time.Second)))), ok, "", "alice@example.com"},
		{"iat just outside the leeway", bearer(w.google(claim("iat", rel(40*time.Second)))), unauth, auth.ReasonNotYetValid, ""},
		{"microsoft expired", bearer(w.ms("1.0", claim("exp", rel(-time.Hour)))), unauth, auth.ReasonExpired, ""},
		// Claims.
		{"microsoft access token (scp)", bearer(w.ms("2.0", claim("scp", "User.Read"))), unauth, auth.ReasonClaims, ""},
		{"email_verified false", bearer(w.google(claim("email_verified", false))), unauth, auth.ReasonClaims, ""},
		{"email_verified \"false\"", bearer(w.google(claim("email_verified", "false"))), unauth, auth.ReasonClaims, ""},
		{"email_verified missing", bearer(w.google(claim("email_verified", nil))), unauth, auth.ReasonClaims, ""},
		{"email missing", bearer(w.google(claim("email", nil))), unauth, auth.ReasonClaims, ""},
		{"oid missing", bearer(w.ms("2.0", claim("oid", nil))), unauth, auth.ReasonClaims, ""},
		{"upn missing", bearer(w.ms("2.0", claim("upn", nil))), unauth, auth.ReasonClaims, ""},
		{"upn empty", bearer(w.ms("1.0", claim("upn", ""))), unauth, auth.ReasonClaims, ""},
		{"upn unknown", bearer(w.ms("2.0", claim("upn", "eve@example.com"))), unauth, auth.ReasonUnknownUser, ""},
		{"upn of an unconfigured domain", bearer(w.ms("2.0", claim("upn", "someone@elsewhere.net"))), unauth, auth.ReasonUnknownUser, ""},
		{"google caller unknown in its domain", bearer(w.fake.GoogleIDToken(googleClient, "eve@example.com")), unauth, auth.ReasonUnknownUser, ""},
		// hd: a consumer Google account that shares a Workspace user's
		// address is not that user.
		{"consumer account at a configured domain (no hd)", bearer(w.google(googlefake.WithHostedDomain(""))), unauth, auth.ReasonHostedDomain, ""},
		{"hd of another organisation at a configured domain", bearer(w.google(googlefake.WithHostedDomain("evil.example"))), unauth, auth.ReasonHostedDomain, ""},
		{"hd of another configured domain", bearer(w.google(googlefake.WithHostedDomain("partner.org"))), unauth, auth.ReasonHostedDomain, ""},
		{"hd of a parent domain", bearer(w.google(googlefake.WithHostedDomain("com"))), unauth, auth.ReasonHostedDomain, ""},
		{"hd empty string", bearer(w.google(claim("hd", ""))), unauth, auth.ReasonHostedDomain, ""},
		{"hd not a string", bearer(w.google(claim("hd", []string{"example.com"}))), unauth, auth.ReasonMalformed, ""},
		{"hd added to a consumer token", bearer(tamper(w.google(googlefake.WithHostedDomain("")), "hd", "example.com")), unauth, auth.ReasonSignature, ""},
		{"consumer account of a configured domain, unknown user", bearer(w.fake.GoogleIDToken(googleClient, "eve@example.com", googlefake.WithHostedDomain(""))), unauth, auth.ReasonHostedDomain, ""},
		{"consumer account of another domain", bearer(w.fake.GoogleIDToken(googleClient, "someone@gmail.com", googlefake.WithHostedDomain(""))), ok, "", "someone@gmail.com"},
		// A consumer account at a partner's address is let in, as itself
		// (TestPrincipalsPerWayIn: without the partner's domain); an hd
		// added to its token does not make it the partner's.
		{"consumer account at a partner's address", bearer(w.fake.ConsumerIDToken(googleClient, "pat@"+partnerDomain)), ok, "", "pat@" + partnerDomain},
		{"hd added to a consumer token at a partner's address", bearer(tamper(w.fake.ConsumerIDToken(googleClient, "pat@"+partnerDomain), "hd", partnerDomain)), unauth, auth.ReasonSignature, ""},
		{"address of another domain, hd of a configured one", bearer(w.fake.GoogleIDToken(googleClient, "someone@elsewhere.net", googlefake.WithHostedDomain("example.com"))), ok, "", "someone@elsewhere.net"},
		{"microsoft token needs no hd", bearer(w.ms("2.0", claim("hd", nil))), ok, "", "bob@example.com"},
		// sub: a directory user's Google tokens must be its account's.
		{"consumer account sharing a directory user's address", bearer(w.google(googlefake.ConsumerAccount())), unauth, auth.ReasonHostedDomain, ""},
		{"consumer account's access token, of a directory user's address", bearer(w.fake.ConsumerAccessToken(googleClient, "alice@example.com", time.Hour, emailScope)), unauth, auth.ReasonSubject, ""},
		{"directory user's access token", bearer(w.fake.GoogleAccessToken(googleClient, "alice@example.com", time.Hour, emailScope)), ok, "", "alice@example.com"},
		{"hd of the domain, another account's sub (a deleted user's address given to a new one)", bearer(w.google(claim("sub", "1999"))), unauth, auth.ReasonSubject, ""},
		{"hd of the domain, no sub", bearer(w.google(claim("sub", nil))), unauth, auth.ReasonSubject, ""},
		{"another directory user's sub", bearer(w.google(claim("sub", googlefake.UserID("bob@example.com")))), unauth, auth.ReasonSubject, ""},
		{"user only the configuration lists, ID token with hd", bearer(w.fake.GoogleIDToken(googleClient, "cora@example.com")), ok, "", "cora@example.com"},
		{"user only the configuration lists, ID token without hd", bearer(w.fake.GoogleIDToken(googleClient, "cora@example.com", googlefake.ConsumerAccount())), unauth, auth.ReasonHostedDomain, ""},
		{"user only the configuration lists, access token", bearer(w.fake.GoogleAccessToken(googleClient, "cora@example.com", time.Hour, emailScope)), unauth, auth.ReasonHostedDomain, ""},
		{"consumer access token of another domain", bearer(w.fake.ConsumerAccessToken(googleClient, "someone@gmail.com", time.Hour, emailScope)), ok, "", "someone@gmail.com"},
		// Shapes.
		{"oversized token", bearer(strings.Repeat("a", 16<<10) + "." + w.google()), unauth, auth.ReasonMalformed, ""},
		{"many dots", bearer("a.b.c.d.e.f"), unauth, auth.ReasonInvalid, ""},
		{"spaces in token", "Bearer abc def", unauth, auth.ReasonMalformed, ""},
		{"non-base64 JWT-ish", bearer("e30.e30.!!"), unauth, auth.ReasonMalformed, ""},
		{"payload not JSON", bearer("e30.bm90IGpzb24.c2ln"), unauth, auth.ReasonMalformed, ""},
		{"empty bearer", "Bearer ", unauth, auth.ReasonMalformed, ""},
		{"basic scheme", "Basic YWxpY2U6c2VjcmV0", unauth, auth.ReasonMalformed, ""},
		{"no credentials", "", fm.ENOCREDENTIALS, auth.ReasonMissing, ""},
		// Security codes that do not work.
		{"wrong security code", "securityCode nope", fm.EFORBIDDEN, auth.ReasonBadCode, ""},
		{"expired security code", "securityCode " + expiredCode, fm.EFORBIDDEN, auth.ReasonBadCode, ""},
		{"security code as a Bearer token", bearer(adminCode), unauth, auth.ReasonInvalid, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := w.try(tc.header, "", fmt.Sprintf("192.0.2.%d:1234", len(tc.name)))
			want := outcome{email: tc.email, code: tc.code, reason: tc.reason}
			if got.email != want.email || got.code != want.code || got.reason != want.reason {
				t.Errorf("got %+v, want %+v", got, want)
			}
		})
	}
	if n := w.hits.Load(); n != 0 {
		t.Errorf("the attacker's key server was asked %d times", n)
	}
}

// wantUnavailable checks that got is a 503 for want of keys: EUNAVAILABLE,
// reason keys_unavailable, with a Retry-After.
func wantUnavailable(t testing.TB, what string, got outcome) {
	t.Helper()
	if got.code != fm.EUNAVAILABLE || got.reason != auth.ReasonKeysUnavailable || got.retryAfter <= 0 || got.retryAfter > time.Minute {
		t.Errorf("%s: %+v, want EUNAVAILABLE %s with a Retry-After", what, got, auth.ReasonKeysUnavailable)
	}
}

// eventually tries header until done says yes or 10 s have passed, and
// returns the last outcome.
func (w *world) eventually(header string, done func(outcome) bool) outcome {
	w.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := w.try(header, "", "")
		if done(got) || time.Now().After(deadline) {
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// fastKeyRetries makes the Authenticator retry failed key fetches after
// 10 ms, doubling up to 100 ms, so that a test waits for the retries
// milliseconds rather than seconds; the retries follow the rule of the
// production backoff all the same (mostKeyFetches).
func fastKeyRetries(w *world) {
	w.keyRetryMin, w.keyRetryMax = 10*time.Millisecond, 100*time.Millisecond
}

// mostKeyFetches is how many fetches of one key URL can be made within
// elapsed while every fetch fails: the first, the minute's refetch for an
// unknown key ID, and retries each at least half its backoff after the
// last failure, the backoff doubling from minWait up to maxWait.
func mostKeyFetches(elapsed, minWait, maxWait time.Duration) int {
	n := 2
	for b, waited := minWait, time.Duration(0); ; b = min(2*b, maxWait) {
		if waited += b / 2; waited > elapsed {
			return n
		}
		n++
	}
}

// Key servers down when the daemon starts: the Authenticator is made all
// the same, ID tokens get 503 (not 401) until the keys arrive, the key
// servers are not asked once per request, and the keys are fetched again
// without any request asking.
func TestKeysDownAtStart(t *testing.T) {
	start := time.Now()
	w := newWorldWith(t, func(w *world) {
		w.fake.SetSigningKeysDown(true)
		fastKeyRetries(w)
	})
	google, microsoft := "Bearer "+w.google(), "Bearer "+w.ms("2.0")
	noKID := "Bearer " + w.forge(map[string]any{}, w.googleClaims())
	for range 50 {
		wantUnavailable(t, "google ID token", w.try(google, "", ""))
		wantUnavailable(t, "microsoft ID token", w.try(microsoft, "", ""))
		wantUnavailable(t, "token without a key ID", w.try(noKID, "", ""))
	}
	if got := w.try("Bearer "+w.google(googlefake.WithHostedDomain("")), "", ""); got.code != fm.EUNAVAILABLE {
		t.Errorf("consumer token before the keys: %+v (nothing about a token can be said before its signature)", got)
	}
	// Fetches per key URL: the first, the minute's refetch for an unknown
	// key ID, and retries after waits of at least 5 ms, 10 ms, 20 ms...,
	// 50 ms (as 0.5 s, 1 s, 2 s... 30 s in production).
	calls := w.fake.Calls()
	elapsed := time.Since(start)
	most := mostKeyFetches(elapsed, w.keyRetryMin, w.keyRetryMax)
	t.Logf("150 requests in %v while the keys were down: %d Google and %d Microsoft key fetches", elapsed, calls["oauth2.certs"], calls["microsoft.keys"])
	if calls["oauth2.certs"] > most || calls["microsoft.keys"] > 2*most {
		t.Errorf("150 requests in %v while the keys were down: %d Google and %d Microsoft (two URLs) key fetches, want at most %d a URL",
			elapsed, calls["oauth2.certs"], calls["microsoft.keys"], most)
	}
	if got := w.try("Bearer "+w.fake.GoogleAccessToken(googleClient, "alice@example.com", time.Hour, emailScope), "", ""); got.email != "alice@example.com" {
		t.Errorf("access token while the keys are down: %+v", got)
	}

	w.fake.SetSigningKeysDown(false)
	// The minute's refetch for unknown key IDs is spent: the keys come
	// from the background fetches, retried with backoff.
	for _, tc := range []struct{ name, header, email string }{
		{"google", google, "alice@example.com"}, {"microsoft", microsoft, "bob@example.com"},
	} {
		if got := w.eventually(tc.header, func(o outcome) bool { return o.code != fm.EUNAVAILABLE }); got.email != tc.email {
			t.Errorf("%s ID token once the keys are back: %+v", tc.name, got)
		}
	}
	if got := w.try(noKID, "", ""); got.code != fm.EUNAUTHENTICATED || got.reason != auth.ReasonSignature {
		t.Errorf("forged token without a key ID once the keys are back: %+v", got)
	}
}

// A key server that accepts connections and never answers does not hold up
// the start, and a request waits for it no longer than its own context.
func TestStartDoesNotWaitForKeys(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() }) // connections queue in the backlog, never answered
	start := time.Now()
	w := newWorldWith(t, func(w *world) { w.googleJWKSURL = "http://" + ln.Addr().String() + "/certs" })
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the Authenticator took %v to make with a key server that never answers", took)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start = time.Now()
	wantUnavailable(t, "google ID token", w.tryWith(ctx, "Bearer "+w.google(), "", ""))
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("a request waited %v for the keys, past its context's 50 ms", took)
	}
}

// kidOf returns the key ID in a token's header.
func kidOf(token string) string {
	h, _ := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[0])
	var m map[string]any
	json.Unmarshal(h, &m)
	kid, _ := m["kid"].(string)
	return kid
}

// A token signed with a key the set lacks: when the refetch fails, 503 (the
// key may be a new one); keys the set holds still work; once a refetch
// succeeds, the new key works and a key ID still unknown is 401. Each
// authority has a world of its own: in a shared one, the keys down for
// Google could leave Microsoft's retrying a fetch from before its rotation.
func TestKeysDownAtRefetch(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rotate func(w *world)
		token  func(w *world, o ...googlefake.TokenOption) string
		email  string
	}{
		{"google", func(w *world) { w.fake.RotateSigningKey() }, (*world).google, "alice@example.com"},
		{"microsoft", func(w *world) { w.fake.RotateMicrosoftSigningKey() },
			func(w *world, o ...googlefake.TokenOption) string { return w.ms("2.0", o...) }, "bob@example.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorldWith(t, fastKeyRetries)
			seen, unseen := tc.token(w), tc.token(w)
			if got := w.try("Bearer "+seen, "", ""); got.email != tc.email {
				t.Fatalf("genuine token: %+v", got)
			}
			tc.rotate(w)
			w.fake.SetSigningKeysDown(true)
			rotated := "Bearer " + tc.token(w)
			forged := "Bearer " + withHeader(tc.token(w), map[string]any{"alg": "RS256", "kid": "no-such-key"})
			wantUnavailable(t, "token of the new key, its refetch failing", w.try(rotated, "", ""))
			wantUnavailable(t, "another token of the new key", w.try("Bearer "+tc.token(w), "", ""))
			wantUnavailable(t, "unknown key ID while the last fetch failed", w.try(forged, "", ""))
			if got := w.try("Bearer "+unseen, "", ""); got.email != tc.email {
				t.Errorf("token of a key the set holds, while the keys are down: %+v", got)
			}
			underOldKID := tc.token(w, func(h, _ map[string]any) { h["kid"] = kidOf(seen) })
			if got := w.try("Bearer "+underOldKID, "", ""); got.code != fm.EUNAUTHENTICATED || got.reason != auth.ReasonSignature {
				t.Errorf("signed with the new key under the old key ID: %+v, want 401 %s", got, auth.ReasonSignature)
			}
			w.fake.SetSigningKeysDown(false)
			if got := w.eventually(rotated, func(o outcome) bool { return o.code != fm.EUNAVAILABLE }); got.email != tc.email {
				t.Errorf("token of the new key once the keys are back: %+v", got)
			}
			// A retry that fetched one of Microsoft's two URLs before the
			// keys came back and the other after brings the new key, but the
			// set is not fresh until a retry fetches both: wait for it.
			if got := w.eventually(forged, func(o outcome) bool { return o.code != fm.EUNAVAILABLE }); got.code != fm.EUNAUTHENTICATED || got.reason != auth.ReasonSignature {
				t.Errorf("unknown key ID in a freshly fetched set: %+v, want 401 %s", got, auth.ReasonSignature)
			}
		})
	}
}

// The hd and sub checks hold whatever the token caches hold: a refused
// token stays refused however often it comes, and a Workspace token of an
// address lets no consumer token of that address in, of either kind.
func TestHostedDomainAndTheCache(t *testing.T) {
	w := newWorld(t)
	for _, tc := range []struct {
		kind                string
		workspace, consumer string
		reason              string
	}{
		{"ID token", w.google(), w.google(googlefake.ConsumerAccount()), auth.ReasonHostedDomain},
		{"access token", w.fake.GoogleAccessToken(googleClient, "alice@example.com", time.Hour, emailScope),
			w.fake.ConsumerAccessToken(googleClient, "alice@example.com", time.Hour, emailScope), auth.ReasonSubject},
	} {
		for i := range 3 {
			if got := w.try("Bearer "+tc.workspace, "", ""); got.email != "alice@example.com" {
				t.Errorf("Workspace %s, time %d: %+v", tc.kind, i+1, got)
			}
			if got := w.try("Bearer "+tc.consumer, "", ""); got.code != fm.EUNAUTHENTICATED || got.reason != tc.reason {
				t.Errorf("consumer %s of the same address, time %d: %+v, want 401 %s", tc.kind, i+1, got, tc.reason)
			}
		}
	}
}

// A directory stored by a foldermirror that did not keep user IDs: the
// Google tokens of its users are refused (the subject cannot be checked)
// until the directory is synced again; a user only the configuration lists
// and security codes are unaffected.
func TestDirectoryWithoutIDs(t *testing.T) {
	w := newWorld(t)
	idToken, accessToken := "Bearer "+w.google(), "Bearer "+w.fake.GoogleAccessToken(googleClient, "alice@example.com", time.Hour, emailScope)
	w.dir.Replace(&fm.DirectorySnapshot{Domain: "example.com", Users: map[string]fm.DirectoryUser{
		"alice@example.com": {}, "bob@example.com": {}}})
	for _, h := range []string{idToken, accessToken} {
		if got := w.try(h, "", ""); got.code != fm.EUNAUTHENTICATED || got.reason != auth.ReasonSubject {
			t.Errorf("%.20s... with a directory without IDs: %+v, want 401 %s", h, got, auth.ReasonSubject)
		}
	}
	if got := w.try("securityCode "+aliceCode, "", ""); got.email != "alice@example.com" {
		t.Errorf("security code acting as alice: %+v", got)
	}
	if got := w.try("Bearer "+w.fake.GoogleIDToken(googleClient, "cora@example.com"), "", ""); got.email != "cora@example.com" {
		t.Errorf("ID token of a user only the configuration lists: %+v", got)
	}
	w.dir.Replace(&fm.DirectorySnapshot{Domain: "example.com", Users: map[string]fm.DirectoryUser{
		"alice@example.com": {ID: googlefake.UserID("alice@example.com")}}})
	for _, h := range []string{idToken, accessToken} {
		if got := w.try(h, "", ""); got.email != "alice@example.com" {
			t.Errorf("%.20s... once the directory has IDs again: %+v", h, got)
		}
	}
}

// floodResult is what one request of a flood got, and how long it took.
type floodResult struct {
	outcome
	took time.Duration
}

// receive returns the next n results, failing the test if they take more
// than 10 s to come.
func receive(t *testing.T, results <-chan floodResult, n int) []floodResult {
	t.Helper()
	timeout := time.After(10 * time.Second)
	got := make([]floodResult, 0, n)
	for len(got) < n {
		select {
		case r := <-results:
			got = append(got, r)
		case <-timeout:
			t.Fatalf("%d of %d answers after 10 s", len(got), n)
		}
	}
	return got
}

// awaitTokeninfoCalls waits until tokeninfo has n calls in flight.
func (w *world) awaitTokeninfoCalls(t *testing.T, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		now, _ := w.fake.TokeninfoInFlight()
		if now == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("tokeninfo has %d calls in flight, want %d", now, n)
		}
	}
}

// 1,000 made-up access tokens at once, from one client and from many, while
// tokeninfo does not answer: the calls in flight stay within the bound (per
// client, overall), every request beyond it is answered 503 at once rather
// than queued, and once tokeninfo answers again a legitimate client gets
// through. A flood from one client leaves room for the others.
func TestRandomTokenFlood(t *testing.T) {
	const n = 1000
	for _, tc := range []struct {
		name  string
		addr  func(i int) string
		bound int
	}{
		{"one client", func(int) string { return "203.0.113.9:5000" }, auth.MaxTokeninfoCallsPerClient},
		{"many clients", func(i int) string { return fmt.Sprintf("[2001:db8:0:%x::1]:5000", i+1) }, auth.MaxTokeninfoCalls}, // a /64 each
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			release := w.fake.HoldTokeninfo()
			defer release()
			results := make(chan floodResult, n)
			for i := range n {
				go func() {
					start := time.Now()
					got := w.try("Bearer ya29."+rand.Text()+rand.Text(), "", tc.addr(i))
					results <- floodResult{got, time.Since(start)}
				}()
			}
			var slowest time.Duration
			for _, r := range receive(t, results, n-tc.bound) {
				if r.code != fm.EUNAVAILABLE || r.reason != auth.ReasonCheckerBusy || r.retryAfter <= 0 || r.retryAfter > time.Minute {
					t.Fatalf("a request beyond the bound: %+v, want EUNAVAILABLE %s with a Retry-After", r.outcome, auth.ReasonCheckerBusy)
				}
				slowest = max(slowest, r.took)
			}
			w.awaitTokeninfoCalls(t, tc.bound)
			// Tokeninfo answers nothing until release: a request beyond the
			// bound that was queued rather than refused would not be among
			// these answers, so that they came shows that none was (a bound
			// on their time said the same, and failed on a loaded machine).
			t.Logf("%d requests beyond the bound of %d answered 503, the slowest in %v", n-tc.bound, tc.bound, slowest)

			legit := "Bearer " + w.fake.GoogleAccessToken(googleClient, "alice@example.com", time.Hour, emailScope)
			other := make(chan outcome, 1)
			if tc.name == "one client" {
				go func() { other <- w.try(legit, "", "198.51.100.1:1") }()
				w.awaitTokeninfoCalls(t, tc.bound+1) // another client's call is let through
			} else if got := w.try(legit, "", "198.51.100.1:1"); got.reason != auth.ReasonCheckerBusy {
				t.Errorf("another client with every call taken: %+v, want %s", got, auth.ReasonCheckerBusy)
			}
			wantPeak := tc.bound
			if tc.name == "one client" {
				wantPeak++ // the other client's
			}
			if _, peak := w.fake.TokeninfoInFlight(); peak != wantPeak {
				t.Errorf("tokeninfo had up to %d calls in flight at once, want %d", peak, wantPeak)
			}

			release()
			for _, r := range receive(t, results, tc.bound) {
				if r.code != fm.EUNAUTHENTICATED || r.reason != auth.ReasonInvalid {
					t.Errorf("a made-up token tokeninfo was asked about: %+v, want 401 %s", r.outcome, auth.ReasonInvalid)
				}
			}
			if tc.name == "one client" {
				if got := wait.Receive(t, other, "the other client's answer"); got.email != "alice@example.com" {
					t.Errorf("another client during the flood: %+v", got)
				}
			}
			after := "Bearer " + w.fake.GoogleAccessToken(googleClient, "bob@example.com", time.Hour, emailScope)
			if got := w.try(after, "", tc.addr(0)); got.email != "bob@example.com" {
				t.Errorf("a legitimate token from the flood's address after the flood: %+v", got)
			}
			if calls := w.fake.CallCount("oauth2.tokeninfo"); calls != wantPeak+1 {
				t.Errorf("%d tokeninfo calls for %d made-up tokens and the real ones, want %d", calls, n, wantPeak+1)
			}
		})
	}
}
