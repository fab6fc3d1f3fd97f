// Package auth tells who an API caller is: from a Google ID token, and
// checks that a caller of a configured domain is a known user of it.
package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/config"
)

// Identity is an authenticated caller.
type Identity struct {
	// Email is the caller's lower-cased e-mail address.
	Email string
	// Domain is the caller's e-mail domain.
	Domain string
	// Groups are the groups the caller belongs to, transitively.
	Groups []string
	// Method names the way in, for logs and metrics.
	Method string
}

// Principals returns the principals a grant may name to reach the caller.
func (id *Identity) Principals() []string {
	ps := make([]string, 0, len(id.Groups)+3)
	ps = append(ps, fm.UserPrincipal(id.Email))
	for _, g := range id.Groups {
		ps = append(ps, fm.GroupPrincipal(g))
	}
	if id.Domain != "" {
		ps = append(ps, fm.DomainPrincipal(id.Domain))
	}
	return append(ps, fm.PrincipalAnyone)
}

// Ways in, as Identity.Method names them.
const (
	MethodGoogleIDToken = "google-id-token"
)

// maxTokenBytes: longer tokens are refused before any parsing.
const maxTokenBytes = 16 << 10

// Options configure an Authenticator.
type Options struct {
	// HTTPClient fetches signing keys; a client with a 10 s timeout by default.
	HTTPClient *http.Client
	// Now is the clock; time.Now by default.
	Now func() time.Time
}

// Authenticator authenticates API requests. It is safe for concurrent use.
type Authenticator struct {
	cfg    *config.Config
	dir    fm.Directory
	google *googleVerifier
	now    func() time.Time
	cancel context.CancelFunc
}

// New returns an Authenticator for cfg's auth section, with dir as the
// source of known users and groups. Close stops its key refreshes.
func New(cfg *config.Config, dir fm.Directory, opts Options) (*Authenticator, error) {
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := &Authenticator{cfg: cfg, dir: dir, now: opts.Now, cancel: cancel}
	var err error
	if a.google, err = newGoogleVerifier(ctx, cfg, opts); err != nil {
		cancel()
		return nil, err
	}
	return a, nil
}

// Close stops background key refreshes.
func (a *Authenticator) Close() { a.cancel() }

// Authenticate returns the caller of r, or an error coded ENOCREDENTIALS
// (nothing presented) or EUNAUTHENTICATED (what was presented is refused).
func (a *Authenticator) Authenticate(r *http.Request) (*Identity, error) {
	header := r.Header.Get("Authorization")
	if header == "" {
		return nil, fm.Errorf(fm.ENOCREDENTIALS, "Login Required.")
	}
	scheme, token, _ := strings.Cut(header, " ")
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		return nil, refuse(ReasonMalformed, "the Authorization header must be \"Bearer\" and a token")
	}
	return a.bearer(r.Context(), strings.TrimSpace(token))
}

func (a *Authenticator) bearer(ctx context.Context, token string) (*Identity, error) {
	if len(token) > maxTokenBytes {
		return nil, refuse(ReasonMalformed, "the token is too large")
	}
	if !isJWT(token) {
		return nil, refuse(ReasonMalformed, "the token is not a JWT")
	}
	email, err := a.google.verify(token)
	if err != nil {
		return nil, err
	}
	return a.identify(ctx, email, MethodGoogleIDToken)
}

// identify completes an identity from a verified e-mail: a caller of a
// configured domain must be one of its known users.
func (a *Authenticator) identify(ctx context.Context, email, method string) (*Identity, error) {
	email = strings.ToLower(email)
	id := &Identity{Email: email, Domain: fm.EmailDomain(email), Method: method}
	known, groups, err := a.dir.Lookup(ctx, email)
	if err != nil {
		return nil, fmt.Errorf("look up %s in the directory: %w", email, err)
	}
	if a.cfg.Domain(id.Domain) != nil && !known {
		return nil, refuse(ReasonUnknownUser, "the user is not a known user of "+id.Domain)
	}
	id.Groups = groups
	return id, nil
}

// isJWT reports whether token has the shape of a JWS compact
// serialization: three dot-separated base64url parts, the first two non-empty.
func isJWT(token string) bool {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return false
	}
	for _, p := range parts {
		if strings.TrimLeft(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
			return false
		}
	}
	return true
}

// Reasons a credential is refused, as FailureReason reports them.
const (
	ReasonMalformed   = "malformed"
	ReasonSignature   = "signature"
	ReasonExpired     = "expired"
	ReasonNotYetValid = "not_yet_valid"
	ReasonIssuer      = "issuer"
	ReasonAudience    = "audience"
	ReasonClaims      = "claims"
	ReasonUnknownUser = "unknown_user"
)

// failure carries the reason of a refusal, for metrics and logs.
type failure struct{ reason string }

func (f *failure) Error() string { return "credentials refused: " + f.reason }

func refuse(reason, detail string) error {
	return &fm.Error{Code: fm.EUNAUTHENTICATED, Message: "Invalid Credentials: " + detail + ".", Err: &failure{reason}}
}

// FailureReason returns the reason err refused a credential, or "".
func FailureReason(err error) string {
	var f *failure
	if errors.As(err, &f) {
		return f.reason
	}
	return ""
}
