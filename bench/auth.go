package main

import (
	"crypto/sha256"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/httpapi/auth"
	"github.com/foldermirror/foldermirror/internal/googlefake"
)

// authLimit is the limit of authentication per request, warm.
const authLimit = 5 * time.Microsecond

// emailScope is the scope a Google access token needs.
const emailScope = "https://www.googleapis.com/auth/userinfo.email"

// wayIn is one way to authenticate: a name and an Authorization header.
type wayIn struct {
	name, authorization string
}

// authFigures measures authentication in-process: an auth.Authenticator
// that takes the credentials of a world of its own, as the world's
// configuration does (baseConfig), authenticates the same request over and
// over (its credential seen before: the warm case), each way in.
func (e *env) authFigures(t *table) error {
	fake := googlefake.New()
	fake.Start()
	defer fake.Close()
	if _, err := newWorld(fake, e.dir); err != nil {
		return err
	}
	// The user's domain's directory, as a directory sync reads it: a Google
	// access token is taken only from a user the directory lists.
	user := apiUsers[0]
	var synced fm.Directories
	synced.Replace(&fm.DirectorySnapshot{Domain: fm.EmailDomain(user),
		Users: map[string]fm.DirectoryUser{user: {ID: googlefake.UserID(user)}}})
	a := auth.New(auth.Options{
		ClockSkew: config.Default().Auth.ClockSkew,
		Google:    auth.Google{ClientIDs: []string{clientID}, JWKSURL: fake.GoogleJWKSURL(), TokeninfoURL: fake.TokeninfoURL()},
		Microsoft: auth.Microsoft{JWKSURLs: []string{fake.MicrosoftJWKSURL(), fake.MicrosoftJWKSURLv2()},
			Tenants: []auth.Tenant{{ID: msTenant, ApplicationIDs: []string{msAppID}}}},
		Domains: []auth.Domain{{Name: domain, Users: apiUsers,
			SecurityCodes: []auth.SecurityCode{{SHA256: sha256.Sum256([]byte(securityCode)), ActAsUser: apiUsers[0]}}}},
		Directory: &synced,
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	defer a.Close()
	ways := []wayIn{
		{"Google ID token", "Bearer " + fake.GoogleIDToken(clientID, user, googlefake.WithTTL(time.Hour))},
		{"Microsoft ID token", "Bearer " + fake.MicrosoftIDToken("2.0", msTenant, msAppID, user)},
		{"Google access token", "Bearer " + fake.GoogleAccessToken(clientID, user, time.Hour, emailScope)},
		{"security code", "securityCode " + securityCode},
	}
	for _, way := range ways {
		log.Printf("authentication with a %s", way.name)
		perOp, err := benchmarkAuth(a, way)
		if err != nil {
			return fmt.Errorf("%s: %w", way.name, err)
		}
		t.add(row{section: sectionAuth, figure: "warm, " + way.name, value: perOp, unit: unitMicros, cmp: under,
			limit: float64(authLimit) / float64(time.Microsecond)})
	}
	return nil
}

// benchmarkAuth returns the time, in microseconds, one authentication of a
// request takes once its credential has been seen.
func benchmarkAuth(a *auth.Authenticator, w wayIn) (float64, error) {
	r := httptest.NewRequest(http.MethodGet, "/folder/v1/files/x", nil)
	r.Header.Set("Authorization", w.authorization)
	id, err := a.Authenticate(r)
	if err != nil {
		return 0, err
	}
	if id.Email != apiUsers[0] {
		return 0, fmt.Errorf("authenticated as %q, not %q", id.Email, apiUsers[0])
	}
	var failed error
	res := testing.Benchmark(func(b *testing.B) {
		for range b.N {
			if _, err := a.Authenticate(r); err != nil {
				failed = err
				b.FailNow()
			}
		}
	})
	if failed != nil {
		return 0, failed
	}
	return float64(res.T) / float64(res.N) / float64(time.Microsecond), nil
}
