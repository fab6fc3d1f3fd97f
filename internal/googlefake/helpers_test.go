package googlefake_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/googlefake"
	"golang.org/x/oauth2/google"
	"google.golang.org/api/drive/v3"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
)

const (
	syncer = "syncer@mirror-project.iam.gserviceaccount.com"
	alice  = "alice@example.com"
	bob    = "bob@example.com"
	carol  = "carol@other.org"
	folder = "application/vnd.google-apps.folder"
)

// newFake starts a fake with alice, bob and carol.
func newFake(t testing.TB) *googlefake.Server {
	t.Helper()
	s := fmtest.StartGoogle(t)
	for _, u := range []string{alice, bob, carol} {
		s.AddUser(u)
	}
	return s
}

// credentials returns the syncer's delegated credentials acting as subject.
func credentials(t testing.TB, s *googlefake.Server, subject string, scopes ...string) *google.Credentials {
	t.Helper()
	if len(scopes) == 0 {
		scopes = []string{drive.DriveReadonlyScope}
	}
	creds, err := google.CredentialsFromJSONWithTypeAndParams(context.Background(), s.ServiceAccountKey(syncer),
		google.ServiceAccount, google.CredentialsParams{Scopes: scopes, Subject: subject})
	if err != nil {
		t.Fatal(err)
	}
	return creds
}

// service returns a real Drive client on creds.
func service(t testing.TB, s *googlefake.Server, creds *google.Credentials) *drive.Service {
	t.Helper()
	svc, err := drive.NewService(context.Background(), option.WithEndpoint(s.DriveEndpoint()),
		option.WithTokenSource(creds.TokenSource))
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// driveAs returns a real Drive client of the syncer acting as subject.
func driveAs(t testing.TB, s *googlefake.Server, subject string) *drive.Service {
	t.Helper()
	return service(t, s, credentials(t, s, subject))
}

// wantAPIError checks that err is a *googleapi.Error with that code and reason.
func wantAPIError(t *testing.T, err error, code int, reason string) *googleapi.Error {
	t.Helper()
	var gerr *googleapi.Error
	if !errors.As(err, &gerr) {
		t.Fatalf("error %v (%T), want a *googleapi.Error", err, err)
	}
	if gerr.Code != code || len(gerr.Errors) == 0 || gerr.Errors[0].Reason != reason {
		t.Fatalf("error %d %+v, want %d %s", gerr.Code, gerr.Errors, code, reason)
	}
	return gerr
}

// listAll lists every page of files.list as the client would.
func listAll(t *testing.T, call *drive.FilesListCall) []*drive.File {
	t.Helper()
	var out []*drive.File
	err := call.Pages(context.Background(), func(l *drive.FileList) error {
		out = append(out, l.Files...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// names returns the sorted names of files.
func names(files []*drive.File) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.Name
	}
	slices.Sort(out)
	return out
}

// rawGet sends a Drive request with creds' access token and decodes the
// JSON answer.
func rawGet(t *testing.T, s *googlefake.Server, creds *google.Credentials, path string, q url.Values) (int, map[string]any) {
	t.Helper()
	tok, err := creds.TokenSource.Token()
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, s.DriveEndpoint()+path+"?"+q.Encode(), nil)
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	return doJSON(t, req)
}

func doJSON(t *testing.T, req *http.Request) (int, map[string]any) {
	t.Helper()
	resp, body := fmtest.Do(t, req)
	var out map[string]any
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("body %q: %v", body, err)
	}
	return resp.StatusCode, out
}

// keys returns the sorted keys of a JSON object.
func keys(v any) string {
	m, _ := v.(map[string]any)
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}
