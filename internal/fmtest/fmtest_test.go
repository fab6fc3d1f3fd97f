package fmtest_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/internal/fmtest"
)

// A configuration of Config, with a domain and a library added, loads as
// set: the fake's endpoints, the key written next to it, the index beside.
func TestConfigLoads(t *testing.T) {
	fake := fmtest.StartGoogle(t)
	dir := t.TempDir()
	c := fmtest.Config(t, fake, dir)
	c.Domains = []config.Domain{{Name: "example.com"}}
	c.Libraries = []config.Library{{ID: "eng", Domain: "example.com", StorageAccount: "s@example.com", SharedDriveID: "0D"}}
	got := fmtest.LoadConfig(t, c)
	if got.Path != filepath.Join(dir, "config.yaml") || got.DataDir != filepath.Join(dir, "data") ||
		got.Storage.Endpoint != fake.DriveEndpoint() || got.Auth.Google.JWKSURL != fake.GoogleJWKSURL() ||
		!slices.Equal(got.Auth.Google.ClientIDs, []string{fmtest.ClientID}) {
		t.Errorf("loaded %+v", got)
	}
	if l := got.Library("eng"); l == nil || !l.IsSharedDrive() || l.Name != "eng" {
		t.Errorf("library eng: %+v", l)
	}
	var key struct {
		ClientEmail string `json:"client_email"`
	}
	if data, err := os.ReadFile(got.Storage.CredentialsFile); err != nil || json.Unmarshal(data, &key) != nil || key.ClientEmail != fmtest.ServiceAccount {
		t.Errorf("key file %s: %v, %+v", got.Storage.CredentialsFile, err, key)
	}

	fmtest.EditConfig(t, got.Path, func(c *config.Config) { c.AdminListen = "127.0.0.1:9999" })
	again, err := config.Parse(mustRead(t, got.Path), got.Path, nil)
	if err != nil || again.AdminListen != "127.0.0.1:9999" || again.Library("eng") == nil {
		t.Errorf("after EditConfig: %+v, %v", again, err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestFileIDs(t *testing.T) {
	var v any
	if err := json.Unmarshal([]byte(`{"items": [{"fileId": "a", "children": [{"fileId": "b"}]}], "fileId": 3}`), &v); err != nil {
		t.Fatal(err)
	}
	got := fmtest.FileIDs(v)
	slices.Sort(got)
	if !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("FileIDs = %v", got)
	}
}

func TestCodeDigest(t *testing.T) {
	if got := fmtest.CodeDigest("hello"); got != "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824" {
		t.Errorf("CodeDigest(hello) = %s", got)
	}
}
