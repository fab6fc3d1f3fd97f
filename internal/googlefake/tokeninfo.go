package googlefake

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// emailScopes are the scopes that let tokeninfo report the user's e-mail.
var emailScopes = []string{"email", "https://www.googleapis.com/auth/userinfo.email"}

// tokeninfo is the tokeninfo endpoint's answer for an access token, fields in
// Google's order, every value a string. Like Google's, it has no hd: it
// does not tell a Workspace account from a consumer account of the same
// address (but by sub), nor a partner organisation's accounts from
// consumer accounts at its addresses.
type tokeninfo struct {
	Azp           string `json:"azp"`
	Aud           string `json:"aud"`
	Sub           string `json:"sub"`
	Scope         string `json:"scope"`
	Exp           string `json:"exp"`
	ExpiresIn     string `json:"expires_in"`
	Email         string `json:"email,omitempty"`
	EmailVerified string `json:"email_verified,omitempty"`
	AccessType    string `json:"access_type"`
}

// errInvalidToken is tokeninfo's answer to an unknown or expired token.
var errInvalidToken = &oauthError{http.StatusBadRequest, "invalid_token", "Invalid Value"}

// errUnavailable is Google's answer while a service is down.
var errUnavailable = &apiError{
	Code: http.StatusServiceUnavailable, Message: "The service is currently unavailable.",
	Errors: []errorItem{{Message: "The service is currently unavailable.", Domain: "global", Reason: "backendError"}},
	Status: "UNAVAILABLE",
}

// GoogleAccessToken returns an opaque user access token, as Google's OAuth
// 2.0 server issues them to a web client: "ya29." and random characters
// (never another dot: it does not look like a JWT). It is issued to clientID
// for email with the given scopes, valid for ttl (negative: already
// expired). tokeninfo describes it, and the Drive and Directory APIs accept
// it when its scopes allow, acting as email.
func (s *Server) GoogleAccessToken(clientID, email string, ttl time.Duration, scopes ...string) string {
	return s.issueAccessToken(accessToken{user: strings.ToLower(email), clientID: clientID,
		scopes: append([]string{}, scopes...), expiry: time.Now().Add(ttl)})
}

// ConsumerAccessToken is GoogleAccessToken for the consumer Google account
// of email's address (see ConsumerAccount), one sharing the address with a
// Workspace user or one at a partner's address: tokeninfo describes it as
// GoogleAccessToken's, e-mail included, but with that account's sub
// (ConsumerID). The fake models no consumer account's Drive nor Directory:
// those APIs refuse its tokens (401).
func (s *Server) ConsumerAccessToken(clientID, email string, ttl time.Duration, scopes ...string) string {
	return s.issueAccessToken(accessToken{user: strings.ToLower(email), clientID: clientID,
		scopes: append([]string{}, scopes...), expiry: time.Now().Add(ttl), consumer: true})
}

// RevokeAccessToken revokes an access token, as a user removing the app's
// access or Google's revoke endpoint does: from then on tokeninfo answers
// it 400 invalid_token and the APIs 401. Revoking an unknown token is
// harmless.
func (s *Server) RevokeAccessToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.accessTokens, token)
}

// issueAccessToken records tok under a new opaque value and returns it.
func (s *Server) issueAccessToken(tok accessToken) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	value := "ya29." + s.randomString(idAlphabet, 160)
	s.accessTokens[value] = tok
	return value
}

// SetTokeninfoDown makes the tokeninfo endpoint answer 503 with Google's
// UNAVAILABLE error while down is true.
func (s *Server) SetTokeninfoDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokeninfoDown = down
}

// HoldTokeninfo makes the tokeninfo endpoint hold every request, those in
// flight and those to come, until release is called (or the request is
// cancelled), as a tokeninfo that has stopped answering does. release may
// be called more than once.
func (s *Server) HoldTokeninfo() (release func()) {
	gate := make(chan struct{})
	s.mu.Lock()
	s.tokeninfoGate = gate
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			if s.tokeninfoGate == gate {
				s.tokeninfoGate = nil
			}
			s.mu.Unlock()
			close(gate)
		})
	}
}

// TokeninfoInFlight returns how many tokeninfo requests the fake is
// answering now, and the most it has answered at once since it started.
func (s *Server) TokeninfoInFlight() (now, peak int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokeninfoBusy, s.tokeninfoPeak
}

// holdTokeninfo counts a tokeninfo request in flight until done is called,
// and waits while HoldTokeninfo holds the endpoint. It reports false if the
// request was cancelled meanwhile.
func (s *Server) holdTokeninfo(r *http.Request) (done func(), ok bool) {
	s.mu.Lock()
	s.tokeninfoBusy++
	s.tokeninfoPeak = max(s.tokeninfoPeak, s.tokeninfoBusy)
	gate := s.tokeninfoGate
	s.mu.Unlock()
	done = func() {
		s.mu.Lock()
		s.tokeninfoBusy--
		s.mu.Unlock()
	}
	if gate == nil {
		return done, true
	}
	select {
	case <-gate:
		return done, true
	case <-r.Context().Done():
		return done, false
	}
}

// serveTokeninfo answers GET or POST tokeninfo?access_token=T as
// https://oauth2.googleapis.com/tokeninfo does. It knows every access token
// the fake issued, the token endpoint's included (those from
// AuthorizedUserKey hold every scope but report none).
func (s *Server) serveTokeninfo(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		writeJSON(w, http.StatusMethodNotAllowed, &oauthError{Code: "invalid_request", Description: "Method not allowed"})
		return
	}
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, &oauthError{Code: "invalid_request", Description: err.Error()})
		return
	}
	done, ok := s.holdTokeninfo(r)
	defer done()
	if !ok {
		return
	}
	s.mu.Lock()
	down := s.tokeninfoDown
	tok, known := s.accessTokens[r.Form.Get("access_token")]
	verified := !s.unverified[tok.user]
	s.mu.Unlock()
	now := time.Now()
	switch {
	case down:
		writeAPIError(w, errUnavailable)
		return
	case !known || !now.Before(tok.expiry):
		writeJSON(w, errInvalidToken.status, errInvalidToken)
		return
	}
	info := tokeninfo{Azp: tok.clientID, Aud: tok.clientID, Sub: tok.subject(),
		Scope: strings.Join(tok.scopes, " "), Exp: strconv.FormatInt(tok.expiry.Unix(), 10),
		ExpiresIn: strconv.FormatInt(int64(tok.expiry.Sub(now)/time.Second), 10), AccessType: "online"}
	if slices.ContainsFunc(tok.scopes, func(sc string) bool { return slices.Contains(emailScopes, sc) }) {
		info.Email, info.EmailVerified = tok.user, strconv.FormatBool(verified)
	}
	w.Header().Set("Cache-Control", "no-cache, no-store, max-age=0, must-revalidate")
	writeJSON(w, http.StatusOK, info)
}
