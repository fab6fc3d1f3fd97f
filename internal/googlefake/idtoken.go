package googlefake

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"maps"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"time"
)

// signingKey is a key the fake signs ID tokens with.
type signingKey struct {
	kid  string
	key  *rsa.PrivateKey
	cert []byte // DER of a self-signed certificate of the key (Microsoft's keys)
}

// keyring is a signing authority's keys: the current one and, after a
// rotation, the previous one.
type keyring struct {
	keys []*signingKey // the last is current
	// mint makes the first key, from a key of the pool. Called with s.mu
	// held.
	mint func() *signingKey
}

// current returns the current key, making the first one on demand.
// Call with s.mu held.
func (k *keyring) current() *signingKey {
	if len(k.keys) == 0 {
		k.keys = append(k.keys, k.mint())
	}
	return k.keys[len(k.keys)-1]
}

// rotate makes next current, keeping the previous key. Call with s.mu held.
func (k *keyring) rotate(next *signingKey) {
	k.current()
	k.keys = append(k.keys, next)
	if len(k.keys) > 2 {
		k.keys = k.keys[len(k.keys)-2:]
	}
}

// published returns the keys, current first. Call with s.mu held.
func (k *keyring) published() []*signingKey {
	k.current()
	out := slices.Clone(k.keys)
	slices.Reverse(out)
	return out
}

// publicKeyPEM encodes the current key's public half as a PKIX "PUBLIC KEY"
// PEM block. Call with s.mu held.
func (k *keyring) publicKeyPEM() []byte {
	der, err := x509.MarshalPKIXPublicKey(&k.current().key.PublicKey)
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
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

// WithHostedDomain sets the hd claim, the Google Workspace domain of the
// account; "" deletes it, as for a consumer Google account.
func WithHostedDomain(domain string) TokenOption {
	if domain == "" {
		return WithClaim("hd", nil)
	}
	return WithClaim("hd", domain)
}

// ConsumerAccount makes the token a consumer Google account's: an account
// someone made with the e-mail's address outside the organisation of the
// address's domain, whether or not a Workspace user of that organisation
// has the address too (a consumer account at a partner's address is one).
// Google signs it all the same, with email_verified true if the address was
// verified, but its sub is that account's own subject (ConsumerID), not the
// Workspace user's, and it has no hd. Apply it after any option that
// changes the email claim.
func ConsumerAccount() TokenOption {
	return func(_, claims map[string]any) {
		email, _ := claims["email"].(string)
		claims["sub"] = ConsumerID(email)
		delete(claims, "hd")
	}
}

// GoogleIDToken returns an ID token as Google Sign-In issues them: an RS256
// JWT signed by the current signing key, with kid set, and claims iss
// "https://accounts.google.com", aud clientID, sub (the user's Google ID,
// stable per e-mail, the id the Directory API reports), email,
// email_verified (true unless SetEmailVerified says otherwise), iat now and
// exp now+1h, and hd, the domain of the e-mail, as for an account of that
// domain's Google Workspace, whatever the domain (a partner's address gives
// a Workspace account of the partner's organisation; ConsumerIDToken, or
// the option ConsumerAccount, the token of a consumer Google account of the
// same address, with its own sub and no hd). opts may change any of it.
func (s *Server) GoogleIDToken(clientID, email string, opts ...TokenOption) string {
	now := time.Now().Unix()
	email = strings.ToLower(email)
	s.mu.Lock()
	defer s.mu.Unlock()
	key := s.googleKeys.current()
	header := map[string]any{"alg": "RS256", "kid": key.kid, "typ": "JWT"}
	claims := map[string]any{
		"iss": "https://accounts.google.com", "aud": clientID, "sub": googleID(email),
		"email": email, "email_verified": !s.unverified[email], "iat": now, "exp": now + int64(time.Hour/time.Second),
		"hd": domainOf(email),
	}
	for _, opt := range opts {
		opt(header, claims)
	}
	return sign(key.key, header, claims)
}

// ConsumerIDToken is GoogleIDToken for the consumer Google account of an
// address (ConsumerAccount): no hd, and that account's own sub
// (ConsumerID). opts apply before ConsumerAccount does.
func (s *Server) ConsumerIDToken(clientID, email string, opts ...TokenOption) string {
	return s.GoogleIDToken(clientID, email, append(slices.Clone(opts), ConsumerAccount())...)
}

// SignJWT signs any header and claims with the current key, filling the
// header's alg (RS256) and kid when absent. The signature is RS256 whatever
// alg says.
func (s *Server) SignJWT(header, claims map[string]any) string {
	return s.signWith(&s.googleKeys, header, claims)
}

// signWith signs header and claims with the current key of a keyring,
// filling the header's alg and kid when absent.
func (s *Server) signWith(k *keyring, header, claims map[string]any) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := k.current()
	h := map[string]any{"alg": "RS256", "kid": key.kid}
	maps.Copy(h, header)
	return sign(key.key, h, claims)
}

// RotateSigningKey makes a new key current, one the fake has not used
// before; the JWKS serves the new key and the previous one.
func (s *Server) RotateSigningKey() {
	key := newGoogleKey(s.takeKeyUnlocked())
	s.mu.Lock()
	defer s.mu.Unlock()
	s.googleKeys.rotate(key)
}

// GooglePublicKeyPEM returns the current Google ID-token signing key's
// public key as a PEM "PUBLIC KEY" (PKIX) block, for attack tests that forge
// HS256 tokens "signed" with it.
func (s *Server) GooglePublicKeyPEM() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.googleKeys.publicKeyPEM()
}

// newGoogleKey returns key with a Google-style key ID (40 hex digits).
func newGoogleKey(key *rsa.PrivateKey) *signingKey {
	b := make([]byte, 20)
	_, _ = rand.Read(b)
	return &signingKey{kid: hex.EncodeToString(b), key: key}
}

// googleID is the stable numeric Google account ID of an e-mail: the sub of
// its ID tokens and tokeninfo answers, and its id in the Directory API.
func googleID(email string) string { return "1" + numericID("sub:"+email, 20) }

// UserID returns the Google account ID of the Workspace user of an e-mail:
// its id in the Directory API, and the sub of its ID tokens and of
// tokeninfo's answers for its access tokens. It is stable per e-mail.
func UserID(email string) string { return googleID(strings.ToLower(email)) }

// ConsumerID returns the Google account ID of the consumer account of an
// e-mail address (ConsumerAccount, ConsumerIDToken, ConsumerAccessToken),
// one sharing the address with a Workspace user or not: stable per e-mail,
// never equal to UserID's.
func ConsumerID(email string) string { return "1" + numericID("consumer:"+strings.ToLower(email), 20) }

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

// SetSigningKeysDown makes Google's and Microsoft's JWKS endpoints answer
// 503 with Google's UNAVAILABLE error while down is true (the requests are
// counted all the same).
func (s *Server) SetSigningKeysDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keysDown = down
}

// serveKeysDown answers a JWKS request with 503 if the keys are down, and
// reports whether it did.
func (s *Server) serveKeysDown(w http.ResponseWriter) bool {
	s.mu.Lock()
	down := s.keysDown
	s.mu.Unlock()
	if down {
		writeAPIError(w, errUnavailable)
	}
	return down
}

// serveJWKS serves the public signing keys, current first.
func (s *Server) serveJWKS(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeAPIError(w, newAPIError(http.StatusMethodNotAllowed, "methodNotAllowed", "Method not allowed", ""))
		return
	}
	if s.serveKeysDown(w) {
		return
	}
	s.mu.Lock()
	var keys []jwk
	for _, k := range s.googleKeys.published() {
		n, e := publicNumbers(k.key)
		keys = append(keys, jwk{Kty: "RSA", Alg: "RS256", Use: "sig", Kid: k.kid, N: n, E: e})
	}
	s.mu.Unlock()
	w.Header().Set("Cache-Control", "public, max-age=19800, must-revalidate, no-transform")
	writeJSON(w, http.StatusOK, map[string]any{"keys": keys})
}

// publicNumbers returns the modulus and exponent of an RSA key as a JWK
// writes them (base64url, no padding).
func publicNumbers(key *rsa.PrivateKey) (n, e string) {
	return base64.RawURLEncoding.EncodeToString(key.N.Bytes()),
		base64.RawURLEncoding.EncodeToString(big.NewInt(int64(key.E)).Bytes())
}
