package auth

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
)

// Microsoft Entra ID issuers: version 1.0 and 2.0 forms, {tid} a GUID.
var (
	microsoftV1Issuer = regexp.MustCompile(`^https://sts\.windows\.net/([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})/$`)
	microsoftV2Issuer = regexp.MustCompile(`^https://login\.microsoftonline\.com/([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})/v2\.0$`)
)

// microsoftIssuer returns the tenant and token version an issuer names.
func microsoftIssuer(iss string) (tenant, version string, ok bool) {
	if m := microsoftV1Issuer.FindStringSubmatch(iss); m != nil {
		return strings.ToLower(m[1]), "1.0", true
	}
	if m := microsoftV2Issuer.FindStringSubmatch(iss); m != nil {
		return strings.ToLower(m[1]), "2.0", true
	}
	return "", "", false
}

func isMicrosoftIssuer(iss string) bool {
	_, _, ok := microsoftIssuer(iss)
	return ok
}

// microsoftVerifier checks Microsoft Entra ID tokens (ID tokens only).
type microsoftVerifier struct {
	keys    keyfunc.Keyfunc
	tenants map[string][]string // tenant ID → application IDs
	parser  *jwt.Parser
}

// newMicrosoftVerifier starts fetching Microsoft's signing keys if a tenant
// is configured; it does not wait for them.
func newMicrosoftVerifier(ctx context.Context, opts Options) *microsoftVerifier {
	v := &microsoftVerifier{tenants: map[string][]string{}, parser: newParser(opts.ClockSkew, opts.Now)}
	for _, t := range opts.Microsoft.Tenants {
		v.tenants[strings.ToLower(t.ID)] = t.ApplicationIDs
	}
	if len(v.tenants) > 0 { // else every Microsoft token is refused, no keys needed
		v.keys = newKeySet(ctx, "Microsoft", opts.Microsoft.JWKSURLs, opts)
	}
	return v
}

type microsoftClaims struct {
	jwt.RegisteredClaims
	TenantID string `json:"tid"`
	Version  string `json:"ver"`
	ObjectID string `json:"oid"`
	UPN      string `json:"upn"`
	// Scope is present in access tokens only.
	Scope json.RawMessage `json:"scp"`
}

// verify checks a Microsoft ID token and returns its upn and expiry.
func (v *microsoftVerifier) verify(ctx context.Context, token string) (string, time.Time, error) {
	if v.keys == nil {
		return "", time.Time{}, refuse(ReasonTenant, "no Microsoft tenant is configured")
	}
	var claims microsoftClaims
	if _, err := v.parser.ParseWithClaims(token, &claims, v.keys.KeyfuncCtx(ctx)); err != nil {
		return "", time.Time{}, tokenError(err)
	}
	if err := v.check(&claims); err != nil {
		return "", time.Time{}, err
	}
	return claims.UPN, claims.ExpiresAt.Time, nil // the parser requires exp
}

// check applies the rules to a verified token's claims.
func (v *microsoftVerifier) check(claims *microsoftClaims) error {
	tenant, version, ok := microsoftIssuer(claims.Issuer)
	switch {
	case !ok:
		return refuse(ReasonIssuer, "the token's issuer is not accepted")
	case !strings.EqualFold(claims.TenantID, tenant):
		return refuse(ReasonTenant, "the token's tenant does not match its issuer")
	case v.tenants[tenant] == nil:
		return refuse(ReasonTenant, "the token's tenant is not allowed")
	case claims.Version != version:
		return refuse(ReasonVersion, "the token's version does not match its issuer")
	case !audienceAllowed(claims.Audience, v.tenants[tenant]):
		return refuse(ReasonAudience, "the token's audience is not allowed")
	case claims.Scope != nil:
		return refuse(ReasonClaims, "Microsoft access tokens are not accepted; send an ID token")
	case claims.ObjectID == "":
		return refuse(ReasonClaims, "the token has no oid claim")
	case claims.UPN == "":
		return refuse(ReasonClaims, "the token has no upn claim")
	}
	return nil
}
