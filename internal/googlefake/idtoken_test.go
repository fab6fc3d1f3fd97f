package googlefake_test

import (
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"testing"
	"time"

	"github.com/foldermirror/foldermirror/internal/googlefake"
	"github.com/golang-jwt/jwt/v5"
)

const webClient = "123-web.apps.googleusercontent.com"

// fetchJWKS reads the fake's JWKS into public keys by kid.
func fetchJWKS(t *testing.T, s *googlefake.Server) map[string]*rsa.PublicKey {
	t.Helper()
	resp, err := http.Get(s.GoogleJWKSURL())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var set struct {
		Keys []struct{ Kty, Alg, Use, Kid, N, E string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
		t.Fatal(err)
	}
	keys := map[string]*rsa.PublicKey{}
	for _, k := range set.Keys {
		n, err1 := base64.RawURLEncoding.DecodeString(k.N)
		e, err2 := base64.RawURLEncoding.DecodeString(k.E)
		if err1 != nil || err2 != nil || k.Kty != "RSA" || k.Alg != "RS256" || k.Use != "sig" || k.Kid == "" {
			t.Fatalf("bad JWK %+v", k)
		}
		keys[k.Kid] = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
	}
	return keys
}

// verify checks an ID token as a relying party does.
func verify(token string, keys map[string]*rsa.PublicKey) (jwt.MapClaims, error) {
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(token, claims, func(tok *jwt.Token) (any, error) {
		kid, _ := tok.Header["kid"].(string)
		if k := keys[kid]; k != nil {
			return k, nil
		}
		return nil, errors.New("unknown kid")
	}, jwt.WithValidMethods([]string{"RS256"}), jwt.WithIssuer("https://accounts.google.com"),
		jwt.WithAudience(webClient), jwt.WithIssuedAt(), jwt.WithExpirationRequired())
	return claims, err
}

func TestGoogleIDTokens(t *testing.T) {
	s := newFake(t)
	keys := fetchJWKS(t, s)
	claims, err := verify(s.GoogleIDToken(webClient, "Alice@Example.com"), keys)
	if err != nil {
		t.Fatal(err)
	}
	iat, _ := claims.GetIssuedAt()
	exp, _ := claims.GetExpirationTime()
	if claims["email"] != alice || claims["email_verified"] != true || exp.Sub(iat.Time) != time.Hour {
		t.Errorf("claims %v", claims)
	}
	again, _ := verify(s.GoogleIDToken(webClient, alice), keys)
	other, _ := verify(s.GoogleIDToken(webClient, bob), keys)
	if again["sub"] != claims["sub"] || other["sub"] == claims["sub"] || claims["sub"] != googlefake.UserID(alice) {
		t.Errorf("subs %v %v %v, want alice's %s", claims["sub"], again["sub"], other["sub"], googlefake.UserID(alice))
	}

	tests := []struct {
		name    string
		token   string
		wantErr error
		check   func(jwt.MapClaims) bool
	}{
		{"extra claim", s.GoogleIDToken(webClient, alice, googlefake.WithClaim("locale", "fr")), nil,
			func(c jwt.MapClaims) bool { return c["locale"] == "fr" }},
		{"Workspace account", s.GoogleIDToken(webClient, "Someone@Example.COM"), nil,
			func(c jwt.MapClaims) bool { return c["hd"] == "example.com" }},
		{"consumer account", s.GoogleIDToken(webClient, alice, googlefake.WithHostedDomain("")), nil,
			func(c jwt.MapClaims) bool { _, ok := c["hd"]; return !ok }},
		{"consumer account sharing a Workspace user's address", s.GoogleIDToken(webClient, alice, googlefake.ConsumerAccount()), nil,
			func(c jwt.MapClaims) bool {
				_, hd := c["hd"]
				return !hd && c["email"] == alice && c["email_verified"] == true &&
					c["sub"] == googlefake.ConsumerID(alice) && c["sub"] != googlefake.UserID(alice)
			}},
		{"hosted domain", s.GoogleIDToken(webClient, alice, googlefake.WithHostedDomain("other.example")), nil,
			func(c jwt.MapClaims) bool { return c["hd"] == "other.example" }},
		{"deleted claim", s.GoogleIDToken(webClient, alice, googlefake.WithClaim("email_verified", nil)), nil,
			func(c jwt.MapClaims) bool { _, ok := c["email_verified"]; return !ok }},
		{"expired", s.GoogleIDToken(webClient, alice, googlefake.WithTTL(-time.Minute)), jwt.ErrTokenExpired, nil},
		{"other audience", s.GoogleIDToken("someone-else", alice), jwt.ErrTokenInvalidAudience, nil},
		{"other issuer", s.GoogleIDToken(webClient, alice, googlefake.WithClaim("iss", "https://evil.example")), jwt.ErrTokenInvalidIssuer, nil},
		{"custom header", s.GoogleIDToken(webClient, alice, func(h, _ map[string]any) { h["kid"] = "nope" }), jwt.ErrTokenUnverifiable, nil},
		{"signed by hand", s.SignJWT(map[string]any{"typ": "JWT"}, map[string]any{
			"iss": "https://accounts.google.com", "aud": webClient, "iat": time.Now().Unix(), "exp": time.Now().Add(time.Minute).Unix(), "email": "x@y.z",
		}), nil, func(c jwt.MapClaims) bool { return c["email"] == "x@y.z" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := verify(tt.token, keys)
			if !errors.Is(err, tt.wantErr) && (tt.wantErr != nil || err != nil) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if tt.check != nil && !tt.check(c) {
				t.Errorf("claims %v", c)
			}
		})
	}
	if got := s.CallCount("oauth2.certs"); got != 1 {
		t.Errorf("JWKS requests = %d", got)
	}
}

func TestRotateSigningKey(t *testing.T) {
	s := newFake(t)
	first := s.GoogleIDToken(webClient, alice)
	s.RotateSigningKey()
	second := s.GoogleIDToken(webClient, alice)
	keys := fetchJWKS(t, s)
	if len(keys) != 2 {
		t.Fatalf("%d keys after one rotation", len(keys))
	}
	for _, tok := range []string{first, second} {
		if _, err := verify(tok, keys); err != nil {
			t.Errorf("after one rotation: %v", err)
		}
	}
	h1, h2 := header(t, first), header(t, second)
	if h1["kid"] == h2["kid"] || h2["alg"] != "RS256" {
		t.Errorf("headers %v %v", h1, h2)
	}

	s.RotateSigningKey()
	keys = fetchJWKS(t, s)
	if _, err := verify(first, keys); err == nil || len(keys) != 2 {
		t.Errorf("the key before the previous one still verifies (%d keys)", len(keys))
	}
	if _, err := verify(second, keys); err != nil {
		t.Errorf("previous key: %v", err)
	}
}

func header(t *testing.T, token string) map[string]any {
	t.Helper()
	tok, _, err := jwt.NewParser().ParseUnverified(token, jwt.MapClaims{})
	if err != nil {
		t.Fatal(err)
	}
	return tok.Header
}

// While the signing keys are down, both JWKS endpoints answer 503 in
// Google's error shape, and are counted; then they serve the keys again.
func TestSigningKeysDown(t *testing.T) {
	s := newFake(t)
	s.SetSigningKeysDown(true)
	for _, u := range []string{s.GoogleJWKSURL(), s.MicrosoftJWKSURL(), s.MicrosoftJWKSURLv2()} {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		if code, body := doJSON(t, req); code != http.StatusServiceUnavailable || body["error"] == nil {
			t.Errorf("%s while down: %d %v", u, code, body)
		}
	}
	if calls := s.Calls(); calls["oauth2.certs"] != 1 || calls["microsoft.keys"] != 2 {
		t.Errorf("calls while down: %v", calls)
	}
	s.SetSigningKeysDown(false)
	if keys := fetchJWKS(t, s); len(keys) != 1 {
		t.Errorf("%d keys once up again", len(keys))
	}
}
