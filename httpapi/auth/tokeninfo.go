package auth

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"golang.org/x/sync/singleflight"
)

// emailScopes: an access token needs one of them to say who its user is.
var emailScopes = []string{"https://www.googleapis.com/auth/userinfo.email", "email"}

// Refusals are remembered briefly, so that a bad token repeated does not
// reach tokeninfo each time. A good token is remembered until it expires,
// but at most acceptanceCacheFor, so that a token revoked (the user signed
// out, removed the app's access, or was compromised) is refused within that
// time rather than an hour later.
const (
	refusalCacheFor    = time.Minute
	acceptanceCacheFor = 5 * time.Minute
	tokeninfoRetryIn   = 5 * time.Second
	maxTokeninfoBytes  = 64 << 10
	// tokeninfoTimeout bounds a question to tokeninfo, whatever the HTTP
	// client's timeout.
	tokeninfoTimeout = 10 * time.Second
)

// Bounds on the tokeninfo calls in flight, so that a flood of made-up
// access tokens cannot make foldermirror ask tokeninfo without bound, nor
// one client (an IP address) take every call. A request that would exceed
// one is refused at once (EUNAVAILABLE, Retry-After tokeninfoBusyRetryIn),
// never queued. At tokeninfo's usual 50 to 100 ms a call, they let through
// hundreds of new tokens a second, tens from one address.
const (
	MaxTokeninfoCalls          = 64
	MaxTokeninfoCallsPerClient = 8
	tokeninfoBusyRetryIn       = time.Second
)

// tokeninfoChecker checks Google OAuth 2.0 access tokens with Google's
// tokeninfo endpoint, caching each answer under a hash of the token.
type tokeninfoChecker struct {
	url       string
	client    *http.Client
	clientIDs []string
	now       func() time.Time
	flight    singleflight.Group
	cache     *tokenCache
	calls     callSlots
}

func newTokeninfoChecker(opts Options) *tokeninfoChecker {
	return &tokeninfoChecker{
		url: opts.Google.TokeninfoURL, client: opts.HTTPClient, clientIDs: opts.Google.ClientIDs,
		now: opts.Now, cache: newTokenCache(opts.Now), calls: callSlots{byClient: map[string]int{}},
	}
}

// check returns what tokeninfo says of an access token presented by client
// (its address): its verified e-mail and its subject. Requests with the
// same token share one tokeninfo call, which counts against the client that
// started it.
func (c *tokeninfoChecker) check(ctx context.Context, token, client string) (checked, error) {
	if !isB64Token(token) {
		return checked{}, refuse(ReasonMalformed, "the token is malformed")
	}
	key := keyOf(token)
	if got, ok := c.cache.get(key); ok {
		return got, got.refusal
	}
	v, err, _ := c.flight.Do(string(key[:]), func() (any, error) {
		if !c.calls.take(client) {
			return nil, busy()
		}
		defer c.calls.give(client)
		// Shared by every request with this token: it does not end when the
		// request that started it does, only after tokeninfoTimeout (or the
		// HTTP client's own timeout).
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tokeninfoTimeout)
		defer cancel()
		got, err := c.ask(ctx, token)
		if err != nil {
			return nil, err // unreachable: not cached
		}
		c.cache.put(key, got)
		return got, nil
	})
	if err != nil {
		return checked{}, err
	}
	got := v.(checked)
	return got, got.refusal
}

// isB64Token: the syntax of a Bearer token (RFC 6750), which a Google access
// token follows.
func isB64Token(t string) bool {
	body := strings.TrimRight(t, "=")
	return body != "" && strings.Trim(body, base64url+".~+/") == ""
}

// tokeninfoAnswer is tokeninfo's JSON; numbers and booleans come as strings.
// Google's carries no hd: nothing in it tells a Workspace account from a
// consumer account of the same address but sub, the account's ID. An
// answer with hd shows the account's organisation as an ID token's hd does.
type tokeninfoAnswer struct {
	Aud           string `json:"aud"`
	Azp           string `json:"azp"`
	Sub           string `json:"sub"`
	Scope         string `json:"scope"`
	Exp           string `json:"exp"`
	Email         string `json:"email"`
	EmailVerified any    `json:"email_verified"`
	HostedDomain  string `json:"hd"`
}

// ask asks tokeninfo about a token. The error is for an unreachable or
// misbehaving tokeninfo; a refused token is an answer.
func (c *tokeninfoChecker) ask(ctx context.Context, token string) (checked, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, strings.NewReader(url.Values{"access_token": {token}}.Encode()))
	if err != nil {
		return checked{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.client.Do(req)
	if err != nil {
		return checked{}, unreachable(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokeninfoBytes))
	switch {
	case err != nil:
		return checked{}, unreachable(err)
	case resp.StatusCode == http.StatusBadRequest:
		return c.refused(refuse(ReasonInvalid, "the access token is invalid or has expired")), nil
	case resp.StatusCode != http.StatusOK:
		return checked{}, unreachable(errors.New(resp.Status))
	}
	var a tokeninfoAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return checked{}, unreachable(err)
	}
	return c.judge(&a), nil
}

func (c *tokeninfoChecker) refused(err error) checked {
	return checked{refusal: err, until: c.now().Add(refusalCacheFor)}
}

// judge applies the rules to tokeninfo's answer.
func (c *tokeninfoChecker) judge(a *tokeninfoAnswer) checked {
	exp, err := strconv.ParseInt(a.Exp, 10, 64)
	expires := time.Unix(exp, 0)
	switch {
	case err != nil || !c.now().Before(expires):
		return c.refused(refuse(ReasonExpired, "the access token has expired"))
	case (a.Aud == "" && a.Azp == "") || (a.Aud != "" && !slices.Contains(c.clientIDs, a.Aud)) ||
		(a.Azp != "" && !slices.Contains(c.clientIDs, a.Azp)):
		return c.refused(refuse(ReasonAudience, "the access token was issued to a client that is not allowed"))
	case !slices.ContainsFunc(strings.Fields(a.Scope), func(s string) bool { return slices.Contains(emailScopes, s) }):
		return c.refused(refuse(ReasonScope, "the access token lacks the e-mail scope"))
	case a.Email == "":
		return c.refused(refuse(ReasonClaims, "the access token names no e-mail"))
	case a.EmailVerified != "true" && a.EmailVerified != true:
		return c.refused(refuse(ReasonClaims, "the access token's e-mail is not verified"))
	}
	until := c.now().Add(acceptanceCacheFor)
	if expires.Before(until) {
		until = expires
	}
	return checked{email: a.Email, subject: a.Sub, hostedDomain: a.HostedDomain, method: MethodGoogleAccessToken, until: until}
}

// callSlots counts the tokeninfo calls in flight, overall and by client.
type callSlots struct {
	mu       sync.Mutex
	total    int
	byClient map[string]int
}

// take counts a call of client's in, unless that would exceed a bound.
func (s *callSlots) take(client string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.total >= MaxTokeninfoCalls || s.byClient[client] >= MaxTokeninfoCallsPerClient {
		return false
	}
	s.total++
	s.byClient[client]++
	return true
}

// give counts a call of client's out.
func (s *callSlots) give(client string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total--
	s.byClient[client]--
	if s.byClient[client] == 0 {
		delete(s.byClient, client)
	}
}

// busy is the refusal of a call beyond the bounds.
func busy() error {
	return &fm.Error{Code: fm.EUNAVAILABLE, RetryAfter: tokeninfoBusyRetryIn,
		Message: "Too many access tokens are being checked at the moment; try again shortly.",
		Err:     &failure{ReasonCheckerBusy}}
}

func unreachable(err error) error {
	return &fm.Error{Code: fm.EUNAVAILABLE, Message: "The token checker cannot be reached; try again shortly.",
		RetryAfter: tokeninfoRetryIn, Err: errors.Join(&failure{ReasonUnavailable}, err)}
}
