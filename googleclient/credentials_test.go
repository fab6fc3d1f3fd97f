package googleclient_test

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/foldermirror/foldermirror/googleclient"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/googlefake"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/api/googleapi"
)

const (
	storage = "storage@example.com"
	carol   = "carol@example.com"
	admin   = "admin@example.com"
)

// clientsOf returns the clients of fake, acting with the key at keyFile.
func clientsOf(t *testing.T, fake *googlefake.Server, keyFile string, metrics *googleclient.Metrics) *googleclient.Clients {
	t.Helper()
	c, err := googleclient.New(googleclient.Options{CredentialsFile: keyFile, DriveEndpoint: fake.DriveEndpoint(),
		DirectoryEndpoint: fake.DirectoryEndpoint(), RequestsPerSecond: 1000, Metrics: metrics})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A service account's key acts as each user asked for, through domain-wide
// delegation: Drive's client as the storage account, the Directory's as
// the admin; each request is counted in the metrics, the token's too.
func TestServiceAccountActsAsEachUser(t *testing.T) {
	fake := fmtest.StartGoogle(t)
	fake.AddUser(storage)
	fake.AddUser(admin)
	fake.MakeAdmin(admin)
	root := fake.CreateFolder(storage, "", "Eng")
	metrics := googleclient.NewMetrics(prometheus.NewRegistry())
	c := clientsOf(t, fake, fmtest.WriteKey(t, fake, filepath.Join(t.TempDir(), "sa.json")), metrics)
	if c.AuthorizedUser() {
		t.Error("a service account's key taken for an authorized_user one")
	}
	svc, err := c.Drive(storage)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := c.Drive(storage); again != svc {
		t.Error("a second Drive client made for the same user")
	}
	if f, err := svc.Files.Get(root).Fields("id,name").Do(); err != nil || f.Name != "Eng" {
		t.Errorf("the storage account's root: %+v, %v", f, err)
	}
	dir, err := c.Directory(admin)
	if err != nil {
		t.Fatal(err)
	}
	if users, err := dir.Users.List().Domain("example.com").Do(); err != nil || len(users.Users) == 0 {
		t.Errorf("the admin's users: %+v, %v", users, err)
	}
	for method, want := range map[string]float64{"drive.files.get": 1, "directory.users.list": 1, "oauth2.token": 2} {
		if got := testutil.ToFloat64(metrics.Requests().WithLabelValues(method, "200")); got != want {
			t.Errorf("%s: %v requests counted, want %v", method, got, want)
		}
	}
}

// An authorized_user key acts as its own user, whatever user is asked for:
// a folder is read with that user's access.
func TestAuthorizedUserKeyActsAsItsUser(t *testing.T) {
	fake := fmtest.StartGoogle(t)
	fake.AddUser(storage)
	fake.AddUser(carol)
	root := fake.CreateFolder(storage, "", "Eng")
	key := filepath.Join(t.TempDir(), "carol.json")
	if err := os.WriteFile(key, fake.AuthorizedUserKey(carol), 0o600); err != nil {
		t.Fatal(err)
	}
	c := clientsOf(t, fake, key, nil)
	if !c.AuthorizedUser() || c.CredentialsFile() != key {
		t.Errorf("authorized_user %v, key file %q", c.AuthorizedUser(), c.CredentialsFile())
	}
	svc, err := c.Drive(storage)
	if err != nil {
		t.Fatal(err)
	}
	var ge *googleapi.Error
	if _, err := svc.Files.Get(root).Do(); !errors.As(err, &ge) || ge.Code != http.StatusNotFound {
		t.Fatalf("a folder the key's user cannot see: %v, want 404", err)
	}
	fake.Share(root, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: carol})
	if _, err := svc.Files.Get(root).Do(); err != nil {
		t.Errorf("a folder shared with the key's user: %v", err)
	}
}

// A key file that is not one is refused at once, saying why; without one,
// no client can be made.
func TestBadCredentials(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tc := range []struct {
		name, file, want string
	}{
		{"missing", filepath.Join(dir, "none.json"), "read storage.credentialsFile"},
		{"not JSON", write("text.json", "not json"), "not valid JSON"},
		{"another type", write("other.json", `{"type": "external_account"}`), `type "external_account", want "service_account" or "authorized_user"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := googleclient.New(googleclient.Options{CredentialsFile: tc.file})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to say %q", err, tc.want)
			}
		})
	}
	c, err := googleclient.New(googleclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Drive(storage); err == nil || !strings.Contains(err.Error(), "storage.credentialsFile is not set") {
		t.Errorf("a client without a key: %v", err)
	}
}
