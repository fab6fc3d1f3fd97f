package auth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	fm "github.com/foldermirror/foldermirror"
	"github.com/golang-jwt/jwt/v5"
)

// isJWT reports whether token has the shape of a JWS compact serialization:
// three dot-separated base64url parts, the first two non-empty.
func isJWT(token string) bool {
	dots, partLen := 0, 0
	for i := 0; i < len(token); i++ {
		switch c := token[i]; {
		case c == '.':
			if partLen == 0 && dots < 2 {
				return false
			}
			dots++
			partLen = 0
		case isBase64URL[c]:
			partLen++
		default:
			return false
		}
	}
	return dots == 2
}

// isBase64URL tells the bytes of the base64url alphabet.
var isBase64URL = func() (t [256]bool) {
	for _, c := range base64url {
		t[c] = true
	}
	return t
}()

const base64url = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// unverifiedIssuer reads the iss claim of a JWT without checking anything,
// only to pick the authority whose keys must then verify it.
func unverifiedIssuer(token string) (string, error) {
	_, payload, _ := strings.Cut(token, ".")
	payload, _, _ = strings.Cut(payload, ".")
	data, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return "", refuse(ReasonMalformed, "the token is malformed")
	}
	var claims struct {
		Iss any `json:"iss"`
	}
	if err := json.Unmarshal(data, &claims); err != nil {
		return "", refuse(ReasonMalformed, "the token is malformed")
	}
	iss, ok := claims.Iss.(string)
	if !ok {
		return "", refuse(ReasonIssuer, "the token's issuer is not accepted")
	}
	return iss, nil
}

// newKeySet returns a keyfunc for the signing keys that authority publishes
// at urls (see remoteKeys), fetched until ctx ends.
func newKeySet(ctx context.Context, authority string, urls []string, opts Options) keyfunc.Keyfunc {
	kf, err := keyfunc.New(keyfunc.Options{Ctx: ctx, Storage: newRemoteKeys(ctx, authority, urls, jwkset.NewMemoryStorage(), opts)})
	if err != nil {
		panic(err) // only for a nil storage
	}
	return kf
}

// newParser returns a JWT parser for RS256 tokens that must carry exp, and
// whose exp, nbf and iat are checked with the configured leeway.
func newParser(leeway time.Duration, now func() time.Time) *jwt.Parser {
	return jwt.NewParser(
		jwt.WithValidMethods([]string{"RS256"}),
		jwt.WithLeeway(leeway),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithTimeFunc(now),
	)
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

// tokenError maps a JWT parsing or validation error to a refusal, or to
// EUNAVAILABLE when the token's key could not be looked up.
func tokenError(err error) error {
	var noKeys *keysUnavailableError
	switch {
	case errors.As(err, &noKeys):
		return &fm.Error{Code: fm.EUNAVAILABLE, RetryAfter: keysRetryIn,
			Message: noKeys.authority + "'s signing keys cannot be fetched at the moment; try again shortly.",
			Err:     errors.Join(&failure{ReasonKeysUnavailable}, err)}
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
