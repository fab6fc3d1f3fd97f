package auth

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/foldermirror/foldermirror/config"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"
)

// Google ID token issuers: full URL form and bare host form.
var googleIssuers = []string{"https://accounts.google.com", "accounts.google.com"}

// unknownKeyRefetchEvery bounds how often a token signed with a key the set
// does not hold makes the set be fetched again.
const unknownKeyRefetchEvery = time.Minute

// keySetRefreshEvery is how often signing keys are fetched in the background,
// so that rotations are picked up.
const keySetRefreshEvery = 15 * time.Minute

// newKeySet returns the signing keys published at urls, fetched once, cached,
// refreshed in the background and at most once a minute on an unknown key
// ID. Token headers (jku, x5u, jwk) are never followed: keys come from urls
// only.
func newKeySet(ctx context.Context, urls []string, opts Options) (keyfunc.Keyfunc, error) {
	kf, err := keyfunc.NewDefaultOverrideCtx(ctx, urls, keyfunc.Override{
		Client:            opts.HTTPClient,
		HTTPTimeout:       10 * time.Second,
		RefreshInterval:   keySetRefreshEvery,
		RefreshUnknownKID: rate.NewLimiter(rate.Every(unknownKeyRefetchEvery), 1),
		// Do not wait for the limiter: a token with an unknown key ID is
		// refused at once when the set was fetched less than a minute ago.
		RateLimitWaitMax: time.Millisecond,
	})
	if err != nil {
		return nil, fmt.Errorf("signing keys at %v: %w", urls, err)
	}
	return kf, nil
}

type googleVerifier struct {
	keys      keyfunc.Keyfunc
	clientIDs []string
	parser    *jwt.Parser
}

func newGoogleVerifier(ctx context.Context, cfg *config.Config, opts Options) (*googleVerifier, error) {
	keys, err := newKeySet(ctx, []string{cfg.Auth.Google.JWKSURL}, opts)
	if err != nil {
		return nil, fmt.Errorf("auth.google.jwksUrl: %w", err)
	}
	return &googleVerifier{
		keys:      keys,
		clientIDs: cfg.Auth.Google.ClientIDs,
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{"RS256"}),
			jwt.WithLeeway(cfg.Auth.ClockSkew),
			jwt.WithExpirationRequired(),
			jwt.WithIssuedAt(),
			jwt.WithTimeFunc(opts.Now),
		),
	}, nil
}

type googleClaims struct {
	jwt.RegisteredClaims
	Email string `json:"email"`
	// EmailVerified is a boolean, or in older tokens the string "true".
	EmailVerified any `json:"email_verified"`
}

// verify checks a Google ID token and returns its e-mail.
func (v *googleVerifier) verify(token string) (string, error) {
	var claims googleClaims
	if _, err := v.parser.ParseWithClaims(token, &claims, v.keys.Keyfunc); err != nil {
		return "", tokenError(err)
	}
	if !slices.Contains(googleIssuers, claims.Issuer) {
		return "", refuse(ReasonIssuer, "the token's issuer is not accepted")
	}
	if !audienceAllowed(claims.Audience, v.clientIDs) {
		return "", refuse(ReasonAudience, "the token's audience is not allowed")
	}
	if claims.Email == "" {
		return "", refuse(ReasonClaims, "the token has no email claim")
	}
	if claims.EmailVerified != true && claims.EmailVerified != "true" {
		return "", refuse(ReasonClaims, "the token's e-mail is not verified")
	}
	return claims.Email, nil
}

// audienceAllowed: at least one audience, and every one allow-listed.
func audienceAllowed(aud jwt.ClaimStrings, allowed []string) bool {
	if len(aud) == 0 {
		return false
	}
	for _, a := range aud {
		if !slices.Contains(allowed, a) {
			return false
		}
	}
	return true
}

// tokenError maps a JWT parsing or validation error to a refusal.
func tokenError(err error) error {
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return refuse(ReasonExpired, "the token has expired")
	case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return refuse(ReasonNotYetValid, "the token is not valid yet")
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return refuse(ReasonClaims, "the token lacks a required claim")
	case errors.Is(err, jwt.ErrTokenMalformed):
		return refuse(ReasonMalformed, "the token is malformed")
	default:
		return refuse(ReasonSignature, "the token's signature cannot be verified")
	}
}
