package auth

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	fm "github.com/foldermirror/foldermirror"
	"github.com/golang-jwt/jwt/v5"
)

// Google ID token issuers: full URL form and bare host form.
var googleIssuers = []string{"https://accounts.google.com", "accounts.google.com"}

func isGoogleIssuer(iss string) bool { return slices.Contains(googleIssuers, iss) }

// googleVerifier checks Google ID tokens against Google's signing keys.
type googleVerifier struct {
	domains   []Domain
	keys      keyfunc.Keyfunc
	clientIDs []string
	parser    *jwt.Parser
}

// newGoogleVerifier starts fetching Google's signing keys; it does not wait
// for them.
func newGoogleVerifier(ctx context.Context, domains []Domain, opts Options) *googleVerifier {
	return &googleVerifier{domains: domains, keys: newKeySet(ctx, "Google", []string{opts.Google.JWKSURL}, opts),
		clientIDs: opts.Google.ClientIDs, parser: newParser(opts.ClockSkew, opts.Now)}
}

type googleClaims struct {
	jwt.RegisteredClaims
	Email string `json:"email"`
	// EmailVerified is a boolean, or in older tokens the string "true".
	EmailVerified any `json:"email_verified"`
	// HostedDomain is the Google Workspace domain of the account; absent
	// for consumer Google accounts.
	HostedDomain string `json:"hd"`
}

// verify checks a Google ID token and returns what it says (its e-mail, its
// subject, the Google account's ID, and its hd) and its expiry.
func (v *googleVerifier) verify(ctx context.Context, token string) (checked, time.Time, error) {
	var claims googleClaims
	if _, err := v.parser.ParseWithClaims(token, &claims, v.keys.KeyfuncCtx(ctx)); err != nil {
		return checked{}, time.Time{}, tokenError(err)
	}
	if err := v.check(&claims); err != nil {
		return checked{}, time.Time{}, err
	}
	got := checked{email: claims.Email, subject: claims.Subject, hostedDomain: claims.HostedDomain, method: MethodGoogleIDToken}
	return got, claims.ExpiresAt.Time, nil // the parser requires exp
}

// check applies the rules to a verified token's claims.
func (v *googleVerifier) check(claims *googleClaims) error {
	switch {
	case !isGoogleIssuer(claims.Issuer):
		return refuse(ReasonIssuer, "the token's issuer is not accepted")
	case !audienceAllowed(claims.Audience, v.clientIDs):
		return refuse(ReasonAudience, "the token's audience is not allowed")
	case claims.Email == "":
		return refuse(ReasonClaims, "the token has no email claim")
	case claims.EmailVerified != true && claims.EmailVerified != "true":
		return refuse(ReasonClaims, "the token's e-mail is not verified")
	}
	return v.checkHostedDomain(claims)
}

// checkHostedDomain: a caller whose e-mail domain is a configured domain
// must be an account of that domain's Workspace (hd equal to the domain),
// not a consumer Google account that shares a Workspace user's address.
func (v *googleVerifier) checkHostedDomain(claims *googleClaims) error {
	domain := fm.EmailDomain(claims.Email)
	switch {
	case !configured(v.domains, domain), strings.EqualFold(claims.HostedDomain, domain):
		return nil
	case claims.HostedDomain == "":
		return refuse(ReasonHostedDomain, "the token has no hd claim: it is not a Google Workspace account of "+domain)
	}
	return refuse(ReasonHostedDomain, "the token's hd claim does not name "+domain+", the domain of its e-mail")
}
