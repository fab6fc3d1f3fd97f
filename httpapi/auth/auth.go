// Package auth tells who an API caller is: from a Google ID token, a Google
// OAuth 2.0 access token, a Microsoft Entra ID token or a domain's security
// code; and checks that a caller of a configured domain is a known user of
// it.
package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	fm "github.com/foldermirror/foldermirror"
)

// Identity is an authenticated caller.
type Identity struct {
	// Email is the caller's lower-cased e-mail address; "" for a domain's
	// admin security code, which acts as no particular user.
	Email string
	// Domain is the caller's e-mail domain, or the security code's: the
	// domain whose flags it reads and whose libraries it is of. At a domain
	// that is not configured, it shows no organisation (OrgDomain does).
	Domain string
	// OrgDomain is the domain of the organisation the caller is shown to
	// belong to, whose domain: grants reach it (DESIGN §4): a configured
	// domain whose known user it is, a security code's domain, or the hd of
	// a Google token of another domain's address; "" if none is shown (a
	// consumer Google account, or an access token, at a domain that is not
	// configured).
	OrgDomain string
	// Groups are the groups the caller belongs to, transitively.
	Groups []string
	// Method names the way in, for logs and metrics.
	Method string
	// CodeDomain is the domain whose security code authenticated the
	// caller, "" for tokens.
	CodeDomain string
	// Admin: a security code acting as the domain's admin, which reads
	// everything of that domain as an owner.
	Admin bool
}

// Principals returns the principals a grant may name to reach the caller:
// its user, its groups, its organisation's domain if it has one, anyone.
func (id *Identity) Principals() []string {
	if id.Email == "" {
		return nil
	}
	ps := make([]string, 0, len(id.Groups)+3)
	ps = append(ps, fm.UserPrincipal(id.Email))
	for _, g := range id.Groups {
		ps = append(ps, fm.GroupPrincipal(g))
	}
	if id.OrgDomain != "" {
		ps = append(ps, fm.DomainPrincipal(id.OrgDomain))
	}
	return append(ps, fm.PrincipalAnyone)
}

// Ways in, as Identity.Method names them.
const (
	MethodGoogleIDToken     = "google-id-token"
	MethodGoogleAccessToken = "google-access-token"
	MethodMicrosoftIDToken  = "microsoft-id-token"
	MethodSecurityCode      = "security-code"
)

// maxTokenBytes: longer credentials are refused before any parsing.
const maxTokenBytes = 16 << 10

// Options configure an Authenticator.
type Options struct {
	// ClockSkew is the leeway allowed when checking token times.
	ClockSkew time.Duration
	Google    Google
	Microsoft Microsoft
	// Domains are the configured Workspace domains: a caller of one of them
	// must be a known user of it.
	Domains []Domain
	// Directory is the synced directory of the domains' users and groups;
	// nil: the users Domains list are the only known ones.
	Directory fm.Directory
	// HTTPClient fetches signing keys and asks tokeninfo; a client with a
	// 10 s timeout by default.
	HTTPClient *http.Client
	// Now is the clock; time.Now by default.
	Now func() time.Time
	// Logger receives key-fetch failures; slog.Default() by default.
	Logger *slog.Logger
	// keyFetchRetry bounds the backoff between failed fetches of signing
	// keys: keyFetchRetryMin to keyFetchRetryMax when zero. Tests shorten
	// it (SetKeyFetchBackoff, in export_test.go).
	keyFetchRetry backoff
}

// Google says which Google tokens are accepted.
type Google struct {
	// ClientIDs are the accepted audiences of ID tokens and access tokens.
	ClientIDs []string
	// JWKSURL is where Google's signing keys are fetched.
	JWKSURL string
	// TokeninfoURL is Google's tokeninfo endpoint, which checks access
	// tokens.
	TokeninfoURL string
}

// Microsoft says which Microsoft identity platform tokens are accepted.
type Microsoft struct {
	// JWKSURLs are the key sets that may sign a token.
	JWKSURLs []string
	// Tenants are the tenants whose tokens are accepted; none: Microsoft
	// tokens are refused, and no keys fetched.
	Tenants []Tenant
}

// Tenant is a Microsoft tenant whose ID tokens are accepted.
type Tenant struct {
	// ID is the tenant's GUID.
	ID string
	// ApplicationIDs are the accepted audiences.
	ApplicationIDs []string
}

// Authenticator authenticates API requests. It is safe for concurrent use.
type Authenticator struct {
	domains   []Domain
	dir       fm.Directory
	google    *googleVerifier
	microsoft *microsoftVerifier
	tokeninfo *tokeninfoChecker
	codes     *codeChecker
	// verified remembers verified ID tokens until they expire, so that a
	// caller's next request costs a hash instead of a signature check.
	verified *tokenCache
	leeway   time.Duration
	cancel   context.CancelFunc
}

// New returns an Authenticator of the tokens and domains of opts, whose
// known users and groups are those of Directory{opts.Domains,
// opts.Directory}. It starts fetching the signing keys without waiting for
// them: until they arrive, ID tokens are answered EUNAVAILABLE. Close stops
// its key fetches.
func New(opts Options) *Authenticator {
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	domains := slices.Clone(opts.Domains)
	return &Authenticator{
		domains:   domains,
		dir:       Directory{Domains: domains, Synced: opts.Directory},
		google:    newGoogleVerifier(ctx, domains, opts),
		microsoft: newMicrosoftVerifier(ctx, opts),
		tokeninfo: newTokeninfoChecker(opts),
		codes:     newCodeChecker(domains, opts.Now),
		verified:  newTokenCache(opts.Now),
		leeway:    opts.ClockSkew,
		cancel:    cancel,
	}
}

// Close stops background key refreshes.
func (a *Authenticator) Close() { a.cancel() }

// Authenticate returns the caller of r. Errors are coded ENOCREDENTIALS
// (nothing presented), EUNAUTHENTICATED (a token refused), EFORBIDDEN (a
// security code refused), ERATELIMITED (too many bad codes from the client's
// address) or EUNAVAILABLE (tokeninfo cannot be reached or is asked too
// much at once, or the signing keys a token needs cannot be fetched).
func (a *Authenticator) Authenticate(r *http.Request) (*Identity, error) {
	header := r.Header.Get("Authorization")
	if header == "" {
		if code := r.URL.Query().Get("securityCode"); code != "" {
			return a.securityCode(r, code)
		}
		return nil, &fm.Error{Code: fm.ENOCREDENTIALS, Message: "Login Required.", Err: &failure{ReasonMissing}}
	}
	if len(header) > maxTokenBytes {
		return nil, refuse(ReasonMalformed, "the credentials are too large")
	}
	scheme, credential, _ := strings.Cut(header, " ")
	credential = strings.TrimSpace(credential)
	switch {
	case credential == "":
		return nil, refuse(ReasonMalformed, `the Authorization header must be "Bearer" and a token`)
	case strings.EqualFold(scheme, "Bearer"):
		return a.bearer(r, credential)
	case strings.EqualFold(scheme, "securityCode"):
		return a.securityCode(r, credential)
	}
	return nil, refuse(ReasonMalformed, `the Authorization scheme must be "Bearer" or "securityCode"`)
}

// bearer authenticates a Bearer token: a JWT by its issuer, anything else
// as a Google access token.
func (a *Authenticator) bearer(r *http.Request, token string) (*Identity, error) {
	ctx := r.Context()
	if !isJWT(token) {
		got, err := a.tokeninfo.check(ctx, token, clientAddress(r))
		if err != nil {
			return nil, err
		}
		return a.identifyGoogle(ctx, got)
	}
	// Only tokens that passed every check that depends on the token alone
	// (signature, claims, hd) are cached; the directory is asked each time,
	// the subject checked against it each time.
	key := keyOf(token)
	got, ok := a.verified.get(key)
	if !ok {
		var err error
		if got, err = a.verifyJWT(ctx, token); err != nil {
			return nil, err
		}
		a.verified.put(key, got)
	}
	if got.method == MethodMicrosoftIDToken {
		return a.identifyKnown(ctx, got.email, got.method)
	}
	return a.identifyGoogle(ctx, got)
}

// verifyJWT verifies an ID token with the keys of the authority its issuer
// names. The answer holds until the token expires (leeway included).
func (a *Authenticator) verifyJWT(ctx context.Context, token string) (checked, error) {
	iss, err := unverifiedIssuer(token)
	if err != nil {
		return checked{}, err
	}
	var got checked
	var exp time.Time
	switch {
	case isGoogleIssuer(iss):
		got, exp, err = a.google.verify(ctx, token)
	case isMicrosoftIssuer(iss):
		got.method = MethodMicrosoftIDToken
		got.email, exp, err = a.microsoft.verify(ctx, token)
	default:
		err = refuse(ReasonIssuer, "the token's issuer is not accepted")
	}
	got.until = exp.Add(a.leeway)
	return got, err
}

// securityCode authenticates a domain's security code.
func (a *Authenticator) securityCode(r *http.Request, code string) (*Identity, error) {
	c, err := a.codes.check(code, clientAddress(r))
	if err != nil {
		return nil, err
	}
	if c.ActAsAdmin {
		return &Identity{Domain: c.domain, OrgDomain: c.domain, Method: MethodSecurityCode, CodeDomain: c.domain, Admin: true}, nil
	}
	id, err := a.identify(r.Context(), c.ActAsUser, MethodSecurityCode)
	if err != nil {
		return nil, err
	}
	id.CodeDomain, id.OrgDomain = c.domain, c.domain
	return id, nil
}

// clientAddress names the client of r for its throttles: the address
// httpapi found (WithClientAddress), else the TCP peer's; an IPv6 address
// by its /64, which one host may pick addresses from.
func clientAddress(r *http.Request) string {
	if addr, ok := r.Context().Value(clientAddressKey{}).(netip.Addr); ok && addr.IsValid() {
		return throttleKey(addr)
	}
	host, _, _ := net.SplitHostPort(r.RemoteAddr) // "" if not host:port
	addr, err := netip.ParseAddr(host)
	switch {
	case err != nil:
		return r.RemoteAddr
	case addr.Is4():
		return host // as throttleKey would write it, without making it again
	}
	return throttleKey(addr)
}

// identify completes an identity from a verified e-mail: a caller of a
// configured domain must be one of its known users.
func (a *Authenticator) identify(ctx context.Context, email, method string) (*Identity, error) {
	id, entry, err := a.lookup(ctx, email, method)
	if err == nil && !entry.Known && configured(a.domains, id.Domain) {
		err = refuse(ReasonUnknownUser, "the user is not a known user of "+id.Domain)
	}
	return id, err
}

// identifyGoogle is identify for a verified Google token. A caller of a
// configured domain whom the directory lists must also be that user's
// Google account: the token's subject is the user's directory ID, so that
// a consumer Google account sharing the address is refused. A user only
// the configuration lists is taken on an ID token alone, whose hd (checked
// with the token) shows the Workspace account: tokeninfo carries no hd, so
// its access tokens are refused. A caller of another domain belongs to the
// organisation its token's hd names, if any (hostedOrganisation).
func (a *Authenticator) identifyGoogle(ctx context.Context, got checked) (*Identity, error) {
	id, entry, err := a.lookup(ctx, got.email, got.method)
	switch {
	case err != nil:
		return nil, err
	case !configured(a.domains, id.Domain):
		id.OrgDomain = a.hostedOrganisation(got.hostedDomain)
		return id, nil
	case !entry.Known:
		return nil, refuse(ReasonUnknownUser, "the user is not a known user of "+id.Domain)
	case !entry.InDirectory && got.method == MethodGoogleAccessToken:
		return nil, refuse(ReasonHostedDomain, "an access token cannot show a Google Workspace account of "+id.Domain+
			" (tokeninfo carries no hd), and the user is not in the domain's directory: sign in with an ID token")
	case !entry.InDirectory:
		// an ID token, whose hd was checked with it
	case entry.ID == "":
		return nil, refuse(ReasonSubject, "the directory of "+id.Domain+
			" was stored without user IDs; Google tokens of its users are accepted again after its next directory sync")
	case got.subject != entry.ID:
		return nil, refuse(ReasonSubject, "the token is of another Google account than the directory's user of that address")
	}
	id.OrgDomain = id.Domain
	return id, nil
}

// hostedOrganisation returns the organisation a Google token's hd shows
// for a caller at a domain that is not configured: hd itself, lower-cased;
// "" without hd (a consumer account: its address shows no organisation),
// and for hd naming a configured domain, whose domain: grants reach only
// its known users, which an address of another domain is not.
func (a *Authenticator) hostedOrganisation(hd string) string {
	if hd == "" || configured(a.domains, hd) {
		return ""
	}
	return strings.ToLower(hd)
}

// identifyKnown is identify for callers who must be known users whatever
// their domain (Microsoft callers), who belong to the organisation of their
// domain when it is configured (a directory of a domain no longer
// configured shows none).
func (a *Authenticator) identifyKnown(ctx context.Context, email, method string) (*Identity, error) {
	id, entry, err := a.lookup(ctx, email, method)
	switch {
	case err != nil:
		return nil, err
	case !entry.Known:
		return nil, refuse(ReasonUnknownUser, "the user is not a known user")
	case configured(a.domains, id.Domain):
		id.OrgDomain = id.Domain
	}
	return id, nil
}

func (a *Authenticator) lookup(ctx context.Context, email, method string) (*Identity, fm.DirectoryEntry, error) {
	email = strings.ToLower(email)
	entry, err := a.dir.Lookup(ctx, email)
	if err != nil {
		return nil, fm.DirectoryEntry{}, fmt.Errorf("look up %s in the directory: %w", email, err)
	}
	return &Identity{Email: email, Domain: fm.EmailDomain(email), Groups: entry.Groups, Method: method}, entry, nil
}

// Reasons a credential is refused, as FailureReason reports them.
const (
	ReasonMalformed   = "malformed"
	ReasonSignature   = "signature"
	ReasonInvalid     = "invalid"
	ReasonExpired     = "expired"
	ReasonMissing     = "missing"
	ReasonNotYetValid = "not_yet_valid"
	ReasonIssuer      = "issuer"
	ReasonAudience    = "audience"
	ReasonTenant      = "tenant"
	ReasonVersion     = "version"
	ReasonClaims      = "claims"
	ReasonScope       = "scope"
	ReasonUnknownUser = "unknown_user"
	ReasonBadCode     = "security_code"
	ReasonThrottled   = "throttled"
	ReasonUnavailable = "checker_unavailable"
	// ReasonCheckerBusy: too many tokeninfo calls in flight, overall or
	// from the client's address.
	ReasonCheckerBusy = "checker_busy"
	// ReasonHostedDomain: a Google ID token of a configured domain's
	// address whose hd is not that domain, or an access token (which has
	// no hd) of a user the domain's directory does not list.
	ReasonHostedDomain = "hosted_domain"
	// ReasonSubject: a Google token of a configured domain's user whose
	// subject is not the user's directory ID: another Google account
	// sharing the address (or a directory stored without IDs).
	ReasonSubject = "subject"
	// ReasonKeysUnavailable: the signing keys a token needs were never
	// fetched, or their last fetch failed.
	ReasonKeysUnavailable = "keys_unavailable"
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
