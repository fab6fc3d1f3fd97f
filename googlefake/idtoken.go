package googlefake

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"net/http"
	"strings"
	"time"
)

// signingKey is a key the fake signs ID tokens with.
type signingKey struct {
	kid string
	key *rsa.PrivateKey
}

// TokenOption changes the header or the claims of an ID token before it is
// signed; it may set or delete (delete(claims, k)) anything.
type TokenOption func(header, claims map[string]any)

// WithClaim sets a claim; a nil value deletes it.
func WithClaim(name string, value any) TokenOption {
	return func(_, claims map[string]any) {
		if value == nil {
			delete(claims, name)
		} else {
			claims[name] = value
		}
	}
}

// WithTTL sets the token's lifetime: exp = iat + d (negative: already expired).
func WithTTL(d time.Duration) TokenOption {
	return func(_, claims map[string]any) {
		iat := time.Now().Unix()
		switch v := claims["iat"].(type) {
		case int64:
			iat = v
		case int:
			iat = int64(v)
		case float64:
			iat = int64(v)
		}
		claims["exp"] = iat + int64(d/time.Second)
	}
}

// GoogleIDToken returns an ID token as Google Sign-In issues them: an RS256
// JWT signed by the current signing key, with kid set, and claims iss
// "https://accounts.google.com", aud clientID, sub (stable per e-mail),
// email, email_verified true, iat now and exp now+1h. opts may change any of it.
func (s *Server) GoogleIDToken(clientID, email string, opts ...TokenOption) string {
	now := time.Now().Unix()
	email = strings.ToLower(email)
	s.mu.Lock()
	defer s.mu.Unlock()
	key := s.currentKey()
	header := map[string]any{"alg": "RS256", "kid": key.kid, "typ": "JWT"}
	claims := map[string]any{
		"iss": "https://accounts.google.com", "aud": clientID, "sub": "1" + numericID("sub:"+email, 20),
		"email": email, "email_verified": true, "iat": now, "exp": now + int64(time.Hour/time.Second),
	}
	for _, opt := range opts {
		opt(header, claims)
	}
	return sign(key.key, header, claims)
}

// SignJWT signs any header and claims with the current key, filling the
// header's alg (RS256) and kid when absent. The signature is RS256 whatever
// alg says.
func (s *Server) SignJWT(header, claims map[string]any) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := s.currentKey()
	h := map[string]any{"alg": "RS256", "kid": key.kid}
	for k, v := range header {
		h[k] = v
	}
	return sign(key.key, h, claims)
}

// RotateSigningKey makes a new key current; the JWKS serves the new key and
// the previous one.
func (s *Server) RotateSigningKey() {
	key := newSigningKey()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.currentKey()
	s.signingKeys = append(s.signingKeys, key)
	if len(s.signingKeys) > 2 {
		s.signingKeys = s.signingKeys[len(s.signingKeys)-2:]
	}
}

// currentKey returns the current signing key, generating the first one on
// demand. Call with s.mu held.
func (s *Server) currentKey() *signingKey {
	if len(s.signingKeys) == 0 {
		s.signingKeys = append(s.signingKeys, newSigningKey())
	}
	return s.signingKeys[len(s.signingKeys)-1]
}

func newSigningKey() *signingKey {
	b := make([]byte, 20)
	_, _ = rand.Read(b)
	return &signingKey{kid: hex.EncodeToString(b), key: mustRSAKey()}
}

// sign encodes and signs a JWS with RS256.
func sign(key *rsa.PrivateKey, header, claims map[string]any) string {
	h, err1 := json.Marshal(header)
	c, err2 := json.Marshal(claims)
	if err1 != nil || err2 != nil {
		panic("googlefake: JWT header or claims do not marshal")
	}
	input := base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(c)
	digest := sha256.Sum256([]byte(input))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
	if err != nil {
		panic(err)
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// jwk is one public key of the JWKS.
type jwk struct {
	Kty string `json:"kty"`
	Alg string `json:"alg"`
	Use string `json:"use"`
	Kid string `json:"kid"`
	N   string `json:"n"`
	E   string `json:"e"`
}

// serveJWKS serves the public signing keys, current first.
func (s *Server) serveJWKS(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeAPIError(w, newAPIError(http.StatusMethodNotAllowed, "methodNotAllowed", "Method not allowed", ""))
		return
	}
	s.mu.Lock()
	s.currentKey()
	keys := make([]jwk, 0, len(s.signingKeys))
	for i := len(s.signingKeys) - 1; i >= 0; i-- {
		k := s.signingKeys[i]
		keys = append(keys, jwk{Kty: "RSA", Alg: "RS256", Use: "sig", Kid: k.kid,
			N: base64.RawURLEncoding.EncodeToString(k.key.N.Bytes()),
			E: base64.RawURLEncoding.EncodeToString(big.NewInt(int64(k.key.E)).Bytes())})
	}
	s.mu.Unlock()
	w.Header().Set("Cache-Control", "public, max-age=19800, must-revalidate, no-transform")
	writeJSON(w, http.StatusOK, map[string]any{"keys": keys})
}
