package googlefake_test

import (
	"context"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/foldermirror/foldermirror/internal/googlefake"
	"github.com/golang-jwt/jwt/v5"
)

const (
	tenant = "72f988bf-86f1-41af-91ab-2d7cd011db47"
	appID  = "6731de76-14a6-49ae-97bc-6eba6914391e"
	upn    = "Dana@Contoso.com"
)

var guid = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// msKey is one key of Microsoft's key set.
type msKey struct {
	Kty, Use, Kid, X5t, N, E, Issuer string
	X5c                              []string
}

// fetchMicrosoftJWKS reads a Microsoft key set, checking each key's
// certificate and thumbprint, into public keys by kid.
func fetchMicrosoftJWKS(t *testing.T, url string) (map[string]*rsa.PublicKey, []msKey) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var set struct{ Keys []msKey }
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
		t.Fatal(err)
	}
	out := map[string]*rsa.PublicKey{}
	for _, k := range set.Keys {
		n, err1 := base64.RawURLEncoding.DecodeString(k.N)
		e, err2 := base64.RawURLEncoding.DecodeString(k.E)
		der, err3 := base64.StdEncoding.DecodeString(k.X5c[0])
		cert, err4 := x509.ParseCertificate(der)
		if err := errors.Join(err1, err2, err3, err4); err != nil || k.Kty != "RSA" || k.Use != "sig" {
			t.Fatalf("bad JWK %+v: %v", k, err)
		}
		pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		thumb := sha1.Sum(der)
		if !pub.Equal(cert.PublicKey) || k.Kid != k.X5t || k.X5t != base64.RawURLEncoding.EncodeToString(thumb[:]) {
			t.Errorf("JWK %s does not match its certificate", k.Kid)
		}
		out[k.Kid] = pub
	}
	return out, set.Keys
}

// verifyWith checks a token's RS256 signature against keys by kid.
func verifyWith(token string, keys map[string]*rsa.PublicKey) (jwt.MapClaims, error) {
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(token, claims, func(tok *jwt.Token) (any, error) {
		kid, _ := tok.Header["kid"].(string)
		if k := keys[kid]; k != nil {
			return k, nil
		}
		return nil, errors.New("unknown kid")
	}, jwt.WithValidMethods([]string{"RS256"}), jwt.WithAudience(appID), jwt.WithIssuedAt(), jwt.WithExpirationRequired())
	return claims, err
}

func TestMicrosoftKeySets(t *testing.T) {
	s := newFake(t)
	v1, raw1 := fetchMicrosoftJWKS(t, s.MicrosoftJWKSURL())
	v2, raw2 := fetchMicrosoftJWKS(t, s.MicrosoftJWKSURLv2())
	if len(v1) != 1 || len(v2) != 1 || raw1[0].Kid != raw2[0].Kid {
		t.Errorf("v1 %v, v2 %v", raw1, raw2)
	}
	if raw1[0].Issuer != "" || raw2[0].Issuer != "https://login.microsoftonline.com/{tenantid}/v2.0" {
		t.Errorf("issuers %q %q", raw1[0].Issuer, raw2[0].Issuer)
	}
	google := fetchJWKS(t, s)
	for kid := range google {
		if v1[kid] != nil {
			t.Error("Google and Microsoft share a key")
		}
	}
	if calls := s.Calls(); calls["microsoft.keys"] != 2 || calls["oauth2.certs"] != 1 {
		t.Errorf("calls %v", calls)
	}
}

func TestMicrosoftIDTokens(t *testing.T) {
	s := newFake(t)
	msKeys, _ := fetchMicrosoftJWKS(t, s.MicrosoftJWKSURL())
	googleKeys := fetchJWKS(t, s)
	oid := ""
	tests := []struct {
		version, iss, extra string
		wantX5t             bool
	}{
		{"1.0", "https://sts.windows.net/" + tenant + "/", "unique_name", true},
		{"2.0", "https://login.microsoftonline.com/" + tenant + "/v2.0", "preferred_username", false},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			token := s.MicrosoftIDToken(tt.version, tenant, appID, upn)
			claims, err := verifyWith(token, msKeys)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := verifyWith(token, googleKeys); err == nil {
				t.Error("a Microsoft token verifies with Google's keys")
			}
			want := "aud,email,exp,iat,iss,name,nbf,oid," + tt.extra + ",sub,tid,upn,ver"
			if got := keys(map[string]any(claims)); got != sortedList(want) {
				t.Errorf("claims %s, want %s", got, sortedList(want))
			}
			iat, _ := claims.GetIssuedAt()
			nbf, _ := claims.GetNotBefore()
			exp, _ := claims.GetExpirationTime()
			sub, _ := claims["sub"].(string)
			if claims["iss"] != tt.iss || claims["aud"] != appID || claims["tid"] != tenant || claims["ver"] != tt.version ||
				claims["upn"] != upn || claims["email"] != upn || claims[tt.extra] != upn || claims["name"] != "Dana" ||
				!guid.MatchString(claims["oid"].(string)) || len(sub) != 43 ||
				!nbf.Equal(iat.Time) || exp.Sub(iat.Time) != time.Hour || time.Since(iat.Time) > time.Minute {
				t.Errorf("claims %v", claims)
			}
			if oid == "" {
				oid = claims["oid"].(string)
			} else if claims["oid"] != oid {
				t.Errorf("oid %v, then %v", oid, claims["oid"])
			}
			h := header(t, token)
			_, hasX5t := h["x5t"]
			if h["typ"] != "JWT" || h["alg"] != "RS256" || msKeys[h["kid"].(string)] == nil || hasX5t != tt.wantX5t ||
				hasX5t && h["x5t"] != h["kid"] {
				t.Errorf("header %v", h)
			}
		})
	}

	other, _ := verifyWith(s.MicrosoftIDToken("2.0", tenant, appID, "erin@contoso.com"), msKeys)
	again, _ := verifyWith(s.MicrosoftIDToken("2.0", tenant, appID, upn), msKeys)
	otherApp, _ := verifyWith(s.MicrosoftIDToken("2.0", tenant, appID, upn, googlefake.WithClaim("aud", appID)), msKeys)
	if other["oid"] == oid || again["oid"] != oid || otherApp["sub"] != again["sub"] || other["sub"] == again["sub"] {
		t.Errorf("oids %v %v %v, subs %v %v", oid, other["oid"], again["oid"], again["sub"], other["sub"])
	}
	if _, err := verifyWith(s.GoogleIDToken(appID, alice), msKeys); err == nil {
		t.Error("a Google token verifies with Microsoft's keys")
	}
	defer func() {
		if recover() == nil {
			t.Error("version 3.0 did not panic")
		}
	}()
	s.MicrosoftIDToken("3.0", tenant, appID, upn)
}

func sortedList(commaList string) string {
	l := strings.Split(commaList, ",")
	slices.Sort(l)
	return strings.Join(l, ",")
}

func TestMicrosoftTokenOptions(t *testing.T) {
	s := newFake(t)
	msKeys, _ := fetchMicrosoftJWKS(t, s.MicrosoftJWKSURLv2())
	tests := []struct {
		name    string
		token   string
		wantErr error
		check   func(jwt.MapClaims) bool
	}{
		{"expired", s.MicrosoftIDToken("2.0", tenant, appID, upn, googlefake.WithTTL(-time.Minute)), jwt.ErrTokenExpired, nil},
		{"access token", s.MicrosoftIDToken("2.0", tenant, appID, upn, googlefake.WithClaim("scp", "User.Read")), nil,
			func(c jwt.MapClaims) bool { return c["scp"] == "User.Read" }},
		{"no upn", s.MicrosoftIDToken("1.0", tenant, appID, upn, googlefake.WithClaim("upn", nil)), nil,
			func(c jwt.MapClaims) bool { _, ok := c["upn"]; return !ok }},
		{"other audience", s.MicrosoftIDToken("1.0", tenant, "someone-else", upn), jwt.ErrTokenInvalidAudience, nil},
		{"signed by hand", s.SignMicrosoftJWT(map[string]any{"typ": "JWT"}, map[string]any{
			"aud": appID, "iat": time.Now().Unix(), "exp": time.Now().Add(time.Minute).Unix(), "upn": "x@y.z",
		}), nil, func(c jwt.MapClaims) bool { return c["upn"] == "x@y.z" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := verifyWith(tt.token, msKeys)
			if !errors.Is(err, tt.wantErr) && (tt.wantErr != nil || err != nil) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if tt.check != nil && !tt.check(c) {
				t.Errorf("claims %v", c)
			}
		})
	}
	// SignJWT stays Google's.
	if _, err := verifyWith(s.SignJWT(nil, map[string]any{"aud": appID, "iat": time.Now().Unix(),
		"exp": time.Now().Add(time.Minute).Unix()}), msKeys); err == nil {
		t.Error("SignJWT signs with the Microsoft key")
	}
}

func TestRotateMicrosoftSigningKey(t *testing.T) {
	s := newFake(t)
	googleBefore := fetchJWKS(t, s)
	first := s.MicrosoftIDToken("2.0", tenant, appID, upn)
	s.RotateMicrosoftSigningKey()
	second := s.MicrosoftIDToken("1.0", tenant, appID, upn)
	keys, _ := fetchMicrosoftJWKS(t, s.MicrosoftJWKSURL())
	if len(keys) != 2 || header(t, first)["kid"] == header(t, second)["kid"] {
		t.Fatalf("%d keys after one rotation", len(keys))
	}
	for _, tok := range []string{first, second} {
		if _, err := verifyWith(tok, keys); err != nil {
			t.Errorf("after one rotation: %v", err)
		}
	}
	s.RotateMicrosoftSigningKey()
	keys, _ = fetchMicrosoftJWKS(t, s.MicrosoftJWKSURLv2())
	if _, err := verifyWith(first, keys); err == nil || len(keys) != 2 {
		t.Errorf("the key before the previous one still verifies (%d keys)", len(keys))
	}
	if _, err := verifyWith(second, keys); err != nil {
		t.Errorf("previous key: %v", err)
	}
	googleAfter := fetchJWKS(t, s)
	for kid := range googleBefore {
		if googleAfter[kid] == nil || len(googleAfter) != 1 {
			t.Error("rotating Microsoft's key changed Google's")
		}
	}
}

// keyfunc (through jwkset) checks each key's x5c and x5t, as relying
// parties' libraries do.
func TestMicrosoftKeysWithKeyfunc(t *testing.T) {
	s := newFake(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kf, err := keyfunc.NewDefaultCtx(ctx, []string{s.MicrosoftJWKSURL(), s.MicrosoftJWKSURLv2()})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"1.0", "2.0"} {
		if _, err := jwt.Parse(s.MicrosoftIDToken(v, tenant, appID, upn), kf.Keyfunc, jwt.WithValidMethods([]string{"RS256"})); err != nil {
			t.Errorf("version %s: %v", v, err)
		}
	}
	if _, err := jwt.Parse(s.GoogleIDToken(webClient, alice), kf.Keyfunc); err == nil {
		t.Error("a Google token verifies with Microsoft's key set")
	}
}

func TestPublicKeyPEMs(t *testing.T) {
	s := newFake(t)
	msKeys, _ := fetchMicrosoftJWKS(t, s.MicrosoftJWKSURL())
	tests := []struct {
		name  string
		pem   []byte
		keys  map[string]*rsa.PublicKey
		token string
	}{
		{"google", s.GooglePublicKeyPEM(), fetchJWKS(t, s), s.GoogleIDToken(webClient, alice)},
		{"microsoft", s.MicrosoftPublicKeyPEM(), msKeys, s.MicrosoftIDToken("2.0", tenant, appID, upn)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			block, rest := pem.Decode(tt.pem)
			if block == nil || block.Type != "PUBLIC KEY" || len(rest) != 0 {
				t.Fatalf("PEM %q", tt.pem)
			}
			pub, err := x509.ParsePKIXPublicKey(block.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			kid, _ := header(t, tt.token)["kid"].(string)
			if !tt.keys[kid].Equal(pub) {
				t.Error("the PEM is not the current signing key")
			}

			// The attack: an HS256 token keyed with the PEM. A verifier
			// pinning RS256 refuses it; one trusting alg would not.
			forged, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"aud": appID, "kid": kid}).SignedString(tt.pem)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := jwt.Parse(forged, func(*jwt.Token) (any, error) { return pub, nil },
				jwt.WithValidMethods([]string{"RS256"})); !errors.Is(err, jwt.ErrTokenSignatureInvalid) {
				t.Errorf("RS256-only verifier: %v", err)
			}
			if _, err := jwt.Parse(forged, func(*jwt.Token) (any, error) { return tt.pem, nil }); err != nil {
				t.Errorf("the forged token is not keyed with the PEM: %v", err)
			}
		})
	}
	s.RotateSigningKey()
	s.RotateMicrosoftSigningKey()
	if string(s.GooglePublicKeyPEM()) == string(tests[0].pem) || string(s.MicrosoftPublicKeyPEM()) == string(tests[1].pem) {
		t.Error("the PEMs do not follow rotation")
	}
}
