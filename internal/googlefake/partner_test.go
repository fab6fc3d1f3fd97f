package googlefake_test

import (
	"testing"
	"time"

	"github.com/foldermirror/foldermirror/internal/googlefake"
)

// The accounts of a partner's address (a domain no test configures): its
// organisation's Workspace account, whose ID tokens carry hd, and a consumer
// account someone made with the address, whose tokens carry none and have
// their own sub. tokeninfo tells them apart by sub only: neither answer has
// hd.
func TestPartnerAccounts(t *testing.T) {
	const pat = "pat@partner.org"
	s := newFake(t)
	jwks := fetchJWKS(t, s)
	for _, tc := range []struct {
		kind, idToken, accessToken string
		hd                         any // nil: no hd claim
		sub                        string
	}{
		{"Workspace account", s.GoogleIDToken(webClient, "Pat@Partner.org"), s.GoogleAccessToken(webClient, pat, time.Hour, emailScope),
			"partner.org", googlefake.UserID(pat)},
		{"consumer account", s.ConsumerIDToken(webClient, "Pat@Partner.org"), s.ConsumerAccessToken(webClient, pat, time.Hour, emailScope),
			nil, googlefake.ConsumerID(pat)},
	} {
		c, err := verify(tc.idToken, jwks)
		if err != nil {
			t.Fatalf("%s: ID token: %v", tc.kind, err)
		}
		if c["email"] != pat || c["email_verified"] != true || c["hd"] != tc.hd || c["sub"] != tc.sub {
			t.Errorf("%s: ID token claims %v, want email %s, hd %v, sub %s", tc.kind, c, pat, tc.hd, tc.sub)
		}
		status, info := tokeninfo(t, s, tc.accessToken)
		_, hd := info["hd"]
		if status != 200 || info["email"] != pat || info["email_verified"] != "true" || info["sub"] != tc.sub || hd {
			t.Errorf("%s: tokeninfo %d %v, want email %s, sub %s and no hd", tc.kind, status, info, pat, tc.sub)
		}
	}
	if googlefake.ConsumerID(pat) == googlefake.UserID(pat) {
		t.Error("the consumer account and the Workspace account of one address have the same sub")
	}
}
