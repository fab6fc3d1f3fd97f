package googlefake_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/foldermirror/foldermirror/internal/googlefake"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	"google.golang.org/api/drive/v3"
)

func TestTokenExchangeIsReused(t *testing.T) {
	s := newFake(t)
	svc := driveAs(t, s, alice)
	for range 3 {
		if _, err := svc.Files.List().Do(); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.CallCount("oauth2.token"); got != 1 {
		t.Errorf("token requests = %d, want 1", got)
	}
	if got := s.CallCount("drive.files.list"); got != 3 {
		t.Errorf("files.list requests = %d, want 3", got)
	}
}

func TestSubjectDecidesVisibility(t *testing.T) {
	s := newFake(t)
	s.CreateFolder(alice, "", "alice private")
	shared := s.CreateFolder(alice, "", "alice shared")
	s.CreateFolder(bob, "", "bob private")
	s.Share(shared, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: bob})
	tests := []struct {
		subject string
		want    []string
	}{
		{alice, []string{"alice private", "alice shared"}},
		{bob, []string{"alice shared", "bob private"}},
		{carol, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.subject, func(t *testing.T) {
			got := names(listAll(t, driveAs(t, s, tt.subject).Files.List().Fields("nextPageToken,files(name)")))
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("names = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestServiceAccountActsAsItselfWithoutSubject(t *testing.T) {
	s := newFake(t)
	id := s.CreateFolder(alice, "", "for the robot")
	s.CreateFolder(alice, "", "not for the robot")
	s.Share(id, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: syncer})
	got := names(listAll(t, driveAs(t, s, "").Files.List().Fields("files(name)")))
	if strings.Join(got, "|") != "for the robot" {
		t.Errorf("names = %q", got)
	}
}

// tokenError returns the OAuth error code and HTTP status of a failed token request.
func tokenError(t *testing.T, err error) (string, int) {
	t.Helper()
	var rerr *oauth2.RetrieveError
	if !errors.As(err, &rerr) {
		t.Fatalf("error %v (%T), want an *oauth2.RetrieveError", err, err)
	}
	var body struct{ Error, ErrorDescription string }
	if json.Unmarshal(rerr.Body, &body) != nil || body.Error == "" {
		t.Fatalf("token error body %q", rerr.Body)
	}
	return body.Error, rerr.Response.StatusCode
}

func TestTokenEndpointRefusals(t *testing.T) {
	s := newFake(t)
	s.RefuseDelegation(strings.ToUpper(syncer), "Bob@Example.com")
	goodKey := s.ServiceAccountKey(syncer)
	otherKey := s.ServiceAccountKey("other@mirror-project.iam.gserviceaccount.com")
	tests := []struct {
		name       string
		key        []byte
		subject    string
		scopes     []string
		wantCode   string
		wantStatus int
	}{
		{"refused delegation", goodKey, bob, nil, "unauthorized_client", 401},
		{"unknown subject", goodKey, "nobody@example.com", nil, "invalid_grant", 400},
		{"no scope", goodKey, alice, []string{}, "invalid_scope", 400},
		{"wrong key", withJSONField(t, otherKey, "client_email", syncer), alice, nil, "invalid_grant", 400},
		{"unknown account", withJSONField(t, goodKey, "client_email", "ghost@x.iam.gserviceaccount.com"), alice, nil, "invalid_grant", 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scopes := []string{drive.DriveMetadataReadonlyScope}
			if tt.scopes != nil {
				scopes = tt.scopes
			}
			creds, err := google.CredentialsFromJSONWithTypeAndParams(context.Background(), tt.key,
				google.ServiceAccount, google.CredentialsParams{Scopes: scopes, Subject: tt.subject})
			if err != nil {
				t.Fatal(err)
			}
			_, err = creds.TokenSource.Token()
			if code, status := tokenError(t, err); code != tt.wantCode || status != tt.wantStatus {
				t.Errorf("got %s %d, want %s %d", code, status, tt.wantCode, tt.wantStatus)
			}
			// The Drive client surfaces the refusal too.
			if _, err := service(t, s, creds).Files.List().Do(); err == nil {
				t.Error("files.list succeeded without a token")
			}
		})
	}
}

func withJSONField(t *testing.T, key []byte, field, value string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(key, &m); err != nil {
		t.Fatal(err)
	}
	m[field] = value
	out, _ := json.Marshal(m)
	return out
}

func TestTokenEndpointRawErrors(t *testing.T) {
	s := newFake(t)
	tests := []struct {
		form       url.Values
		wantStatus int
		wantCode   string
	}{
		{url.Values{"grant_type": {"password"}}, 400, "unsupported_grant_type"},
		{url.Values{}, 400, "invalid_request"},
		{url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {"not.a.jwt"}}, 400, "invalid_grant"},
		{url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"1//unknown"}}, 400, "invalid_grant"},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(http.MethodPost, s.TokenURL(), strings.NewReader(tt.form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		status, body := doJSON(t, req)
		if status != tt.wantStatus || body["error"] != tt.wantCode || body["error_description"] == "" {
			t.Errorf("%v: got %d %v, want %d %s", tt.form, status, body, tt.wantStatus, tt.wantCode)
		}
	}
}

func TestAuthorizedUserKey(t *testing.T) {
	s := newFake(t)
	s.CreateFolder(bob, "", "bob's")
	key := s.AuthorizedUserKey(bob)
	creds, err := google.CredentialsFromJSONWithTypeAndParams(context.Background(), key,
		google.AuthorizedUser, google.CredentialsParams{Scopes: []string{drive.DriveReadonlyScope}})
	if err != nil {
		t.Fatal(err)
	}
	got := names(listAll(t, service(t, s, creds).Files.List().Fields("files(name)")))
	if strings.Join(got, "|") != "bob's" {
		t.Errorf("names = %q", got)
	}

	bad, err := google.CredentialsFromJSONWithTypeAndParams(context.Background(),
		withJSONField(t, key, "client_secret", "wrong"), google.AuthorizedUser, google.CredentialsParams{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.TokenSource.Token()
	var rerr *oauth2.RetrieveError
	if !errors.As(err, &rerr) || rerr.ErrorCode != "invalid_client" || rerr.Response.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong secret: %v", err)
	}
}

func TestDriveRejectsBadAccessTokens(t *testing.T) {
	s := newFake(t)
	const wantMessage = "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential."
	for _, header := range []string{"", "Bearer ya29.unknown", "Basic abc"} {
		req, _ := http.NewRequest(http.MethodGet, s.DriveEndpoint()+"files", nil)
		if header != "" {
			req.Header.Set("Authorization", header)
		}
		status, body := doJSON(t, req)
		e, _ := body["error"].(map[string]any)
		items, _ := e["errors"].([]any)
		if status != 401 || e["message"] != wantMessage || e["status"] != "UNAUTHENTICATED" || len(items) != 1 {
			t.Fatalf("%q: %d %v", header, status, body)
		}
		item := items[0].(map[string]any)
		if item["reason"] != "authError" || item["location"] != "Authorization" || item["locationType"] != "header" {
			t.Errorf("%q: error item %v", header, item)
		}
	}

	svc := service(t, s, &google.Credentials{TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "ya29.bogus"})})
	_, err := svc.Files.Get("root").Do()
	wantAPIError(t, err, 401, "authError")
}

func TestDriveNeedsADriveScope(t *testing.T) {
	s := newFake(t)
	svc := service(t, s, credentials(t, s, alice, "https://www.googleapis.com/auth/userinfo.email"))
	_, err := svc.Files.List().Do()
	wantAPIError(t, err, 403, "insufficientPermissions")
}
