package googlefake_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/foldermirror/foldermirror/internal/googlefake"
	"github.com/foldermirror/foldermirror/internal/wait"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	"google.golang.org/api/drive/v3"
)

const emailScope = "https://www.googleapis.com/auth/userinfo.email"

// tokeninfo asks the fake's tokeninfo endpoint about an access token.
func tokeninfo(t *testing.T, s *googlefake.Server, token string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.TokeninfoURL()+"?"+url.Values{"access_token": {token}}.Encode(), nil)
	return doJSON(t, req)
}

func TestGoogleAccessTokenShape(t *testing.T) {
	s := newFake(t)
	tok := s.GoogleAccessToken(webClient, alice, time.Hour, emailScope)
	if !strings.HasPrefix(tok, "ya29.") || strings.Count(tok, ".") != 1 || len(tok) < 100 {
		t.Errorf("token %q", tok)
	}
	if again := s.GoogleAccessToken(webClient, alice, time.Hour, emailScope); again == tok {
		t.Error("two tokens are equal")
	}
}

func TestTokeninfo(t *testing.T) {
	s := newFake(t)
	s.SetEmailVerified(bob, false)
	sub, err := verify(s.GoogleIDToken(webClient, alice), fetchJWKS(t, s))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		token     string
		ttl       time.Duration
		wantScope string
		wantEmail string
		verified  string
	}{
		{"email scope", s.GoogleAccessToken(webClient, "Alice@Example.com", time.Hour, emailScope, "openid"), time.Hour,
			emailScope + " openid", alice, "true"},
		{"short email scope", s.GoogleAccessToken(webClient, alice, 10*time.Minute, "email"), 10 * time.Minute,
			"email", alice, "true"},
		{"unverified", s.GoogleAccessToken(webClient, bob, time.Hour, emailScope), time.Hour, emailScope, bob, "false"},
		{"no email scope", s.GoogleAccessToken(webClient, alice, time.Hour, drive.DriveReadonlyScope), time.Hour,
			drive.DriveReadonlyScope, "", ""},
		{"no scope", s.GoogleAccessToken(webClient, alice, time.Hour), time.Hour, "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := tokeninfo(t, s, tt.token)
			wantKeys := "access_type,aud,azp,exp,expires_in,scope,sub"
			if tt.wantEmail != "" {
				wantKeys = "access_type,aud,azp,email,email_verified,exp,expires_in,scope,sub"
			}
			if status != 200 || keys(body) != wantKeys {
				t.Fatalf("%d %v", status, body)
			}
			for k, v := range body {
				if _, ok := v.(string); !ok {
					t.Errorf("%s is %T, want a string", k, v)
				}
			}
			if body["azp"] != webClient || body["aud"] != webClient || body["scope"] != tt.wantScope ||
				body["access_type"] != "online" || body["email"] != nil && body["email"] != tt.wantEmail ||
				body["email_verified"] != nil && body["email_verified"] != tt.verified {
				t.Errorf("body %v", body)
			}
			if tt.wantEmail == alice && body["sub"] != sub["sub"] {
				t.Errorf("sub %v, ID token's %v", body["sub"], sub["sub"])
			}
			exp, err1 := strconv.ParseInt(body["exp"].(string), 10, 64)
			left, err2 := strconv.Atoi(body["expires_in"].(string))
			wantExp := time.Now().Add(tt.ttl).Unix()
			if err1 != nil || err2 != nil || exp < wantExp-2 || exp > wantExp || left > int(tt.ttl.Seconds()) || left < int(tt.ttl.Seconds())-2 {
				t.Errorf("exp %v, expires_in %v for a ttl of %v", body["exp"], body["expires_in"], tt.ttl)
			}
		})
	}
	s.SetEmailVerified(bob, true)
	if _, body := tokeninfo(t, s, s.GoogleAccessToken(webClient, bob, time.Hour, "email")); body["email_verified"] != "true" {
		t.Errorf("after SetEmailVerified(true): %v", body)
	}
}

// A consumer Google account sharing a Workspace user's address: tokeninfo
// names the same e-mail as for the Workspace user's tokens, but the
// consumer account's own sub; the Drive API does not take its token for
// the Workspace user's.
func TestConsumerAccessToken(t *testing.T) {
	s := newFake(t)
	s.CreateFolder(alice, "", "mine")
	consumer := s.ConsumerAccessToken(webClient, alice, time.Hour, emailScope, drive.DriveMetadataReadonlyScope)
	workspace := s.GoogleAccessToken(webClient, alice, time.Hour, emailScope, drive.DriveMetadataReadonlyScope)
	_, c := tokeninfo(t, s, consumer)
	_, w := tokeninfo(t, s, workspace)
	if c["email"] != alice || c["email_verified"] != "true" || c["sub"] != googlefake.ConsumerID(alice) || c["aud"] != webClient {
		t.Errorf("consumer token: %v, want alice's e-mail and sub %s", c, googlefake.ConsumerID(alice))
	}
	if w["sub"] != googlefake.UserID(alice) || w["sub"] == c["sub"] || keys(c) != keys(w) {
		t.Errorf("Workspace token %v, consumer token %v: want the same fields, subs %s and %s",
			w, c, googlefake.UserID(alice), googlefake.ConsumerID(alice))
	}
	svc := service(t, s, &google.Credentials{TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: consumer})})
	_, err := svc.Files.List().Do()
	wantAPIError(t, err, 401, "authError")
}

func TestTokeninfoRefusals(t *testing.T) {
	s := newFake(t)
	expired := s.GoogleAccessToken(webClient, alice, -time.Second, emailScope)
	idToken := s.GoogleIDToken(webClient, alice)
	revoked := s.GoogleAccessToken(webClient, alice, time.Hour, emailScope)
	if status, _ := tokeninfo(t, s, revoked); status != 200 {
		t.Fatalf("tokeninfo before the revocation: %d", status)
	}
	s.RevokeAccessToken(revoked)
	for name, token := range map[string]string{
		"expired": expired, "unknown": "ya29.unknown", "empty": "", "an ID token": idToken, "revoked": revoked,
	} {
		t.Run(name, func(t *testing.T) {
			status, body := tokeninfo(t, s, token)
			if status != 400 || keys(body) != "error,error_description" || body["error"] != "invalid_token" || body["error_description"] != "Invalid Value" {
				t.Errorf("%d %v", status, body)
			}
		})
	}
}

func TestTokeninfoPostAndDown(t *testing.T) {
	s := newFake(t)
	tok := s.GoogleAccessToken(webClient, alice, time.Hour, emailScope)
	post := func() (int, map[string]any) {
		req, _ := http.NewRequest(http.MethodPost, s.TokeninfoURL(), strings.NewReader(url.Values{"access_token": {tok}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return doJSON(t, req)
	}
	if status, body := post(); status != 200 || body["email"] != alice {
		t.Fatalf("POST: %d %v", status, body)
	}
	s.SetTokeninfoDown(true)
	for _, ask := range []func() (int, map[string]any){post, func() (int, map[string]any) { return tokeninfo(t, s, tok) }} {
		status, body := ask()
		e, _ := body["error"].(map[string]any)
		if status != 503 || e["code"] != float64(503) || e["status"] != "UNAVAILABLE" || e["message"] == "" {
			t.Errorf("down: %d %v", status, body)
		}
	}
	s.SetTokeninfoDown(false)
	if status, _ := tokeninfo(t, s, tok); status != 200 {
		t.Errorf("back up: %d", status)
	}
	if got := s.CallCount("oauth2.tokeninfo"); got != 4 {
		t.Errorf("tokeninfo calls = %d, want 4", got)
	}
}

// The token endpoint's tokens are access tokens like any other, and user
// access tokens call the APIs their scopes allow.
func TestTokeninfoKnowsEveryAccessToken(t *testing.T) {
	s := newFake(t)
	sa, err := credentials(t, s, alice, drive.DriveReadonlyScope, emailScope).TokenSource.Token()
	if err != nil {
		t.Fatal(err)
	}
	status, body := tokeninfo(t, s, sa.AccessToken)
	if status != 200 || body["email"] != alice || body["scope"] != drive.DriveReadonlyScope+" "+emailScope ||
		body["azp"] == "" || body["azp"] != body["aud"] {
		t.Errorf("service account token: %d %v", status, body)
	}

	s.CreateFolder(alice, "", "mine")
	user := s.GoogleAccessToken(webClient, alice, time.Hour, drive.DriveMetadataReadonlyScope)
	svc := service(t, s, &google.Credentials{TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: user})})
	if got := names(listAll(t, svc.Files.List().Fields("files(name)").Context(context.Background()))); strings.Join(got, "|") != "mine" {
		t.Errorf("files %v", got)
	}
	noDrive := s.GoogleAccessToken(webClient, alice, time.Hour, emailScope)
	svc = service(t, s, &google.Credentials{TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: noDrive})})
	_, err = svc.Files.List().Do()
	wantAPIError(t, err, 403, "insufficientPermissions")
}

// HoldTokeninfo holds tokeninfo's answers until released; TokeninfoInFlight
// counts the requests held, and the most at once.
func TestHoldTokeninfo(t *testing.T) {
	s := newFake(t)
	tok := s.GoogleAccessToken(webClient, alice, time.Hour, emailScope)
	release := s.HoldTokeninfo()
	codes := make(chan int, 3)
	for range 3 {
		go func() {
			resp, err := http.Get(s.TokeninfoURL() + "?access_token=" + tok)
			if err != nil {
				codes <- 0
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	awaitInFlight(t, s, 3)
	select {
	case code := <-codes:
		t.Fatalf("an answer (%d) while held", code)
	case <-time.After(50 * time.Millisecond):
	}
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.TokeninfoURL()+"?access_token="+tok, nil)
	cancelled := make(chan error, 1)
	go func() {
		_, err := http.DefaultClient.Do(req)
		cancelled <- err
	}()
	awaitInFlight(t, s, 4)
	cancel()
	if err := wait.Receive(t, cancelled, "the cancelled request's end"); err == nil {
		t.Error("a request answered while held")
	}
	awaitInFlight(t, s, 3) // the cancelled one is let go
	release()
	release() // twice is fine
	for range 3 {
		if code := wait.Receive(t, codes, "an answer after the release"); code != http.StatusOK {
			t.Errorf("after the release: %d", code)
		}
	}
	if code, _ := tokeninfo(t, s, tok); code != http.StatusOK {
		t.Errorf("once released: %d", code)
	}
	if _, peak := s.TokeninfoInFlight(); peak != 4 {
		t.Errorf("peak %d, want 4 (three held, one cancelled)", peak)
	}
}

// awaitInFlight waits until tokeninfo answers n requests at once.
func awaitInFlight(t *testing.T, s *googlefake.Server, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if now, _ := s.TokeninfoInFlight(); now == n {
			return
		}
		if time.Now().After(deadline) {
			now, _ := s.TokeninfoInFlight()
			t.Fatalf("tokeninfo answers %d requests, want %d", now, n)
		}
	}
}
