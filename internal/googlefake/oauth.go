package googlefake

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

const (
	jwtBearerGrant = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	tokenLifetime  = time.Hour
	// driveScopePrefix starts every Drive OAuth scope.
	driveScopePrefix = "https://www.googleapis.com/auth/drive"
	lowerAlnum       = "abcdefghijklmnopqrstuvwxyz0123456789"
)

// serviceAccount is a service account with its key.
type serviceAccount struct {
	email, clientID, keyID string
	key                    *rsa.PrivateKey
}

// refreshGrant is what a refresh token from AuthorizedUserKey stands for.
type refreshGrant struct {
	clientID, secret, user string
}

// accessToken is an issued access token.
type accessToken struct {
	user     string
	clientID string   // the OAuth client it was issued to
	scopes   []string // nil: every scope (refresh-token grants)
	expiry   time.Time
	// consumer: the token of the consumer Google account of user's
	// address (ConsumerAccessToken), not of a Workspace user.
	consumer bool
}

// subject is the Google account ID tokeninfo reports for the token.
func (t accessToken) subject() string {
	if t.consumer {
		return ConsumerID(t.user)
	}
	return googleID(t.user)
}

// oauthError is an error of the token endpoint, as Google writes them.
type oauthError struct {
	status      int
	Code        string `json:"error"`
	Description string `json:"error_description"`
}

func invalidGrant(description string) *oauthError {
	return &oauthError{http.StatusBadRequest, "invalid_grant", description}
}

// errUnauthorizedClient answers a delegation the domain does not allow.
var errUnauthorizedClient = &oauthError{http.StatusUnauthorized, "unauthorized_client",
	"Client is unauthorized to retrieve access tokens using this method, or client not authorized for any of the scopes requested."}

// ServiceAccountKey returns a JSON key file, as Google issues them, for the
// service account clientEmail (created on first use; later calls return the
// same key). Its token_uri is s.TokenURL(), so call it after Start. The key
// may act as any user added with AddUser (domain-wide delegation) unless
// RefuseDelegation says otherwise.
func (s *Server) ServiceAccountKey(clientEmail string) []byte {
	tokenURI := s.tokenURIForKeys()
	sa := s.serviceAccount(strings.ToLower(clientEmail))
	der, err := x509.MarshalPKCS8PrivateKey(sa.key)
	if err != nil {
		panic(err)
	}
	_, domain, _ := strings.Cut(sa.email, "@")
	project, _, _ := strings.Cut(domain, ".")
	return mustJSON(struct {
		Type                    string `json:"type"`
		ProjectID               string `json:"project_id"`
		PrivateKeyID            string `json:"private_key_id"`
		PrivateKey              string `json:"private_key"`
		ClientEmail             string `json:"client_email"`
		ClientID                string `json:"client_id"`
		AuthURI                 string `json:"auth_uri"`
		TokenURI                string `json:"token_uri"`
		AuthProviderX509CertURL string `json:"auth_provider_x509_cert_url"`
		ClientX509CertURL       string `json:"client_x509_cert_url"`
		UniverseDomain          string `json:"universe_domain"`
	}{
		"service_account", project, sa.keyID,
		string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		sa.email, sa.clientID, "https://accounts.google.com/o/oauth2/auth", tokenURI,
		"https://www.googleapis.com/oauth2/v1/certs",
		"https://www.googleapis.com/robot/v1/metadata/x509/" + url.PathEscape(sa.email), "googleapis.com",
	})
}

// AuthorizedUserKey returns a JSON credentials file of type
// "authorized_user" (client_id, client_secret, refresh_token, token_uri);
// its refresh token yields access tokens acting as email, with every scope.
// Call it after Start.
func (s *Server) AuthorizedUserKey(email string) []byte {
	tokenURI := s.tokenURIForKeys()
	s.mu.Lock()
	g := refreshGrant{
		clientID: numericID("client:"+email, 12) + "-" + s.randomString(lowerAlnum, 32) + ".apps.googleusercontent.com",
		secret:   "GOCSPX-" + s.randomString(idAlphabet, 28),
		user:     strings.ToLower(email),
	}
	token := "1//0" + s.randomString(idAlphabet, 100)
	s.refreshTokens[token] = g
	s.mu.Unlock()
	return mustJSON(map[string]string{
		"type": "authorized_user", "client_id": g.clientID, "client_secret": g.secret,
		"refresh_token": token, "token_uri": tokenURI, "universe_domain": "googleapis.com",
	})
}

// RefuseDelegation makes the token endpoint refuse the service account
// clientEmail acting as subject, with Google's unauthorized_client error.
func (s *Server) RefuseDelegation(clientEmail, subject string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refused[[2]string{strings.ToLower(clientEmail), strings.ToLower(subject)}] = true
}

func (s *Server) tokenURIForKeys() string {
	if s.URL() == "" {
		panic("googlefake: credentials need the token URL: call Start first")
	}
	return s.TokenURL()
}

// serviceAccount returns the account, taking its key from the pool on first
// use (outside the lock: the pool may have to generate it, which is slow).
func (s *Server) serviceAccount(email string) *serviceAccount {
	s.mu.Lock()
	sa := s.accounts[email]
	s.mu.Unlock()
	if sa != nil {
		return sa
	}
	key := s.takeKeyUnlocked()
	s.mu.Lock()
	defer s.mu.Unlock()
	if sa = s.accounts[email]; sa == nil {
		sa = &serviceAccount{email: email, key: key, clientID: "1" + numericID("sa:"+email, 20),
			keyID: s.randomString("0123456789abcdef", 40)}
		s.accounts[email] = sa
	}
	return sa
}

func mustJSON(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err)
	}
	return b
}

// serveToken is the OAuth 2.0 token endpoint.
func (s *Server) serveToken(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeJSON(w, http.StatusMethodNotAllowed, &oauthError{Code: "invalid_request", Description: "Method not allowed"})
		return
	}
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, &oauthError{Code: "invalid_request", Description: err.Error()})
		return
	}
	var tok accessToken
	var oerr *oauthError
	switch gt := r.PostForm.Get("grant_type"); gt {
	case jwtBearerGrant:
		tok, oerr = s.jwtGrant(r)
	case "refresh_token":
		tok, oerr = s.refreshTokenGrant(r)
	case "":
		oerr = &oauthError{http.StatusBadRequest, "invalid_request", "Missing required parameter: grant_type"}
	default:
		oerr = &oauthError{http.StatusBadRequest, "unsupported_grant_type", "Invalid grant_type: " + gt}
	}
	if oerr != nil {
		writeJSON(w, oerr.status, oerr)
		return
	}
	s.issue(w, tok)
}

// issue stores a new access token and writes the token response.
func (s *Server) issue(w http.ResponseWriter, tok accessToken) {
	tok.expiry = time.Now().Add(tokenLifetime)
	s.mu.Lock()
	value := "ya29.fake-" + s.randomString(idAlphabet, 64)
	s.accessTokens[value] = tok
	s.mu.Unlock()
	w.Header().Set("Cache-Control", "no-cache, no-store, max-age=0, must-revalidate")
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": value, "token_type": "Bearer", "expires_in": int(tokenLifetime.Seconds()),
	})
}

// jwtGrant checks a service account's signed assertion and returns the
// token to issue: for the subject (sub) if any, else for the account itself.
func (s *Server) jwtGrant(r *http.Request) (accessToken, *oauthError) {
	claims, sa, oerr := s.verifyAssertion(r.PostForm.Get("assertion"))
	if oerr != nil {
		return accessToken{}, oerr
	}
	if oerr := checkAssertionClaims(claims, s.TokenURL(), requestURL(r)); oerr != nil {
		return accessToken{}, oerr
	}
	scope, _ := claims["scope"].(string)
	if strings.TrimSpace(scope) == "" {
		return accessToken{}, &oauthError{http.StatusBadRequest, "invalid_scope", "Invalid OAuth scope or ID token audience provided."}
	}
	user := sa.email
	if sub, _ := claims["sub"].(string); sub != "" && !strings.EqualFold(sub, sa.email) {
		user = strings.ToLower(sub)
		s.mu.Lock()
		_, known := s.users[user]
		refused := s.refused[[2]string{sa.email, user}]
		s.mu.Unlock()
		switch {
		case refused:
			return accessToken{}, errUnauthorizedClient
		case !known:
			return accessToken{}, invalidGrant("Invalid email or User ID")
		}
	}
	return accessToken{user: user, clientID: sa.clientID, scopes: strings.Fields(scope)}, nil
}

// verifyAssertion checks the RS256 signature of a JWT assertion against the
// key of the service account named by its iss claim.
func (s *Server) verifyAssertion(assertion string) (map[string]any, *serviceAccount, *oauthError) {
	parts := strings.Split(assertion, ".")
	if len(parts) != 3 {
		return nil, nil, invalidGrant("Invalid JWT: malformed assertion")
	}
	var header struct{ Alg, Kid string }
	var claims map[string]any
	if decodeSegment(parts[0], &header) != nil || decodeSegment(parts[1], &claims) != nil {
		return nil, nil, invalidGrant("Invalid JWT: malformed assertion")
	}
	iss, _ := claims["iss"].(string)
	s.mu.Lock()
	sa := s.accounts[strings.ToLower(iss)]
	s.mu.Unlock()
	if sa == nil {
		return nil, nil, invalidGrant("Invalid grant: account not found")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err != nil || header.Alg != "RS256" || header.Kid != "" && header.Kid != sa.keyID ||
		rsa.VerifyPKCS1v15(&sa.key.PublicKey, crypto.SHA256, digest[:], sig) != nil {
		return nil, nil, invalidGrant("Invalid JWT Signature.")
	}
	return claims, sa, nil
}

// checkAssertionClaims checks the audience and the lifetime of an assertion.
func checkAssertionClaims(claims map[string]any, audiences ...string) *oauthError {
	if aud, _ := claims["aud"].(string); aud == "" || !slices.Contains(audiences, aud) {
		return invalidGrant("Invalid JWT: Failed audience check.")
	}
	iat, ok1 := claims["iat"].(json.Number)
	exp, ok2 := claims["exp"].(json.Number)
	i, err1 := iat.Int64()
	e, err2 := exp.Int64()
	now := time.Now().Unix()
	const skew = 300
	if !ok1 || !ok2 || err1 != nil || err2 != nil || i > now+skew || e <= now-skew || e-i > 3600 || e <= i {
		return invalidGrant("Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.")
	}
	return nil
}

// refreshTokenGrant exchanges a refresh token from AuthorizedUserKey.
func (s *Server) refreshTokenGrant(r *http.Request) (accessToken, *oauthError) {
	clientID, secret, ok := r.BasicAuth()
	if !ok {
		clientID, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	s.mu.Lock()
	g, known := s.refreshTokens[r.PostForm.Get("refresh_token")]
	s.mu.Unlock()
	switch {
	case !known:
		return accessToken{}, invalidGrant("Token has been expired or revoked.")
	case clientID != g.clientID || secret != g.secret:
		return accessToken{}, &oauthError{http.StatusUnauthorized, "invalid_client", "Unauthorized"}
	}
	return accessToken{user: g.user, clientID: g.clientID}, nil
}

// authenticate returns the access token an API request carries, which must
// have a scope scopeOK accepts. Call with s.mu held.
func (s *Server) authenticate(r *http.Request, scopeOK func(string) bool) (accessToken, *apiError) {
	scheme, value, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	tok, ok := s.accessTokens[strings.TrimSpace(value)]
	if !strings.EqualFold(scheme, "Bearer") || !ok || tok.consumer || time.Now().After(tok.expiry) {
		return accessToken{}, errUnauthenticated
	}
	if tok.scopes != nil && !slices.ContainsFunc(tok.scopes, scopeOK) {
		return accessToken{}, errInsufficientScopes
	}
	return tok, nil
}

// requestURL is the URL of the endpoint a request reached, as its client named it.
func requestURL(r *http.Request) string {
	return "http://" + r.Host + r.URL.Path
}

func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("trailing data")
	}
	return nil
}
