package googlefake

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"time"
)

// msKeysIssuer is the issuer template the v2.0 key set gives each key.
const msKeysIssuer = "https://login.microsoftonline.com/{tenantid}/v2.0"

// MicrosoftIDToken returns an ID token as Microsoft Entra ID issues them: an
// RS256 JWT signed by the current Microsoft key (never Google's), header
// typ, alg and kid (and x5t, equal to kid, in version 1.0 tokens). version
// is "1.0" (iss "https://sts.windows.net/{tenant}/", plus unique_name) or
// "2.0" (iss "https://login.microsoftonline.com/{tenant}/v2.0", plus
// preferred_username). Both have aud appID, tid tenant, oid (a GUID stable
// per upn), sub (stable per upn and appID), upn, email (the upn), name
// (derived from the upn), ver, iat and nbf now, exp now+1h. opts may change
// any of it. It panics for another version.
func (s *Server) MicrosoftIDToken(version, tenant, appID, upn string, opts ...TokenOption) string {
	now := time.Now().Unix()
	claims := map[string]any{
		"aud": appID, "tid": tenant, "oid": objectID(upn), "sub": pairwiseSubject(appID, upn),
		"upn": upn, "email": upn, "name": displayName(upn), "ver": version,
		"iat": now, "nbf": now, "exp": now + int64(time.Hour/time.Second),
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := s.microsoftKeys.current()
	header := map[string]any{"typ": "JWT", "alg": "RS256", "kid": key.kid}
	switch version {
	case "1.0":
		claims["iss"] = "https://sts.windows.net/" + tenant + "/"
		claims["unique_name"] = upn
		header["x5t"] = key.kid
	case "2.0":
		claims["iss"] = "https://login.microsoftonline.com/" + tenant + "/v2.0"
		claims["preferred_username"] = upn
	default:
		panic(fmt.Sprintf("googlefake: unknown Microsoft token version %q", version))
	}
	for _, opt := range opts {
		opt(header, claims)
	}
	return sign(key.key, header, claims)
}

// SignMicrosoftJWT signs any header and claims with the current Microsoft
// key, filling the header's alg (RS256) and kid when absent. The signature is
// RS256 whatever alg says.
func (s *Server) SignMicrosoftJWT(header, claims map[string]any) string {
	return s.signWith(&s.microsoftKeys, header, claims)
}

// RotateMicrosoftSigningKey makes a new Microsoft key current, one the fake
// has not used before; the Microsoft key set serves the new key and the
// previous one.
func (s *Server) RotateMicrosoftSigningKey() {
	key := newMicrosoftKey(s.takeKeyUnlocked())
	s.mu.Lock()
	defer s.mu.Unlock()
	s.microsoftKeys.rotate(key)
}

// MicrosoftPublicKeyPEM returns the current Microsoft signing key's public
// key as a PEM "PUBLIC KEY" (PKIX) block, for attack tests that forge HS256
// tokens "signed" with it.
func (s *Server) MicrosoftPublicKeyPEM() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.microsoftKeys.publicKeyPEM()
}

// newMicrosoftKey returns key with a self-signed certificate, whose kid is
// the certificate's SHA-1 thumbprint (base64url), as Microsoft's keys have.
func newMicrosoftKey(key *rsa.PrivateKey) *signingKey {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		panic(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: "accounts.accesscontrol.windows.net"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(5, 0, 0), KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	thumb := sha1.Sum(der)
	return &signingKey{kid: base64.RawURLEncoding.EncodeToString(thumb[:]), key: key, cert: der}
}

// msJWK is one key of Microsoft's key set.
type msJWK struct {
	Kty    string   `json:"kty"`
	Use    string   `json:"use"`
	Kid    string   `json:"kid"`
	X5t    string   `json:"x5t"`
	N      string   `json:"n"`
	E      string   `json:"e"`
	X5c    []string `json:"x5c"`
	Issuer string   `json:"issuer,omitempty"`
}

// serveMicrosoftJWKS serves Microsoft's public signing keys, current first;
// the v2.0 path adds each key's issuer template, as Microsoft's does.
func (s *Server) serveMicrosoftJWKS(w http.ResponseWriter, r *http.Request, v2 bool) {
	if r.Method != http.MethodGet {
		writeAPIError(w, newAPIError(http.StatusMethodNotAllowed, "methodNotAllowed", "Method not allowed", ""))
		return
	}
	if s.serveKeysDown(w) {
		return
	}
	s.mu.Lock()
	var keys []msJWK
	for _, k := range s.microsoftKeys.published() {
		n, e := publicNumbers(k.key)
		j := msJWK{Kty: "RSA", Use: "sig", Kid: k.kid, X5t: k.kid, N: n, E: e,
			X5c: []string{base64.StdEncoding.EncodeToString(k.cert)}}
		if v2 {
			j.Issuer = msKeysIssuer
		}
		keys = append(keys, j)
	}
	s.mu.Unlock()
	w.Header().Set("Cache-Control", "max-age=86400, private")
	writeJSON(w, http.StatusOK, map[string]any{"keys": keys})
}

// objectID is the stable object ID (a version 4 GUID) of a upn.
func objectID(upn string) string {
	b := sha256.Sum256([]byte("oid:" + strings.ToLower(upn)))
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// pairwiseSubject is the sub Entra ID gives a user for one application: 43
// base64url characters, stable per upn and appID.
func pairwiseSubject(appID, upn string) string {
	b := sha256.Sum256([]byte("sub:" + appID + "|" + strings.ToLower(upn)))
	return base64.RawURLEncoding.EncodeToString(b[:])
}
