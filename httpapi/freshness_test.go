package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	fm "github.com/foldermirror/foldermirror"
)

func (f *fixture) conditional(path, token, etag string) *http.Response {
	f.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, f.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("If-None-Match", etag)
	resp, err := f.client.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func TestConditionalRequests(t *testing.T) {
	f := newFixture(t)
	alice, bob := f.token("alice@example.com"), f.token("bob@example.com")
	for _, path := range []string{
		"/folder/v1/files/apollo",
		"/folder/v1/files/apollo/children",
		"/folder/v1/libraries/lib-eng/folders",
		"/folder/v1/libraries/lib-eng/folders/children?onlyDirectChildren=true",
		"/folder/v1/folders/apollo/permissions",
	} {
		t.Run(path, func(t *testing.T) {
			resp, _ := f.get(path, alice)
			tag := resp.Header.Get("ETag")
			if tag == "" || resp.Header.Get("Last-Modified") != "Fri, 20 Nov 2026 09:30:00 GMT" {
				t.Fatalf("ETag %q, Last-Modified %q", tag, resp.Header.Get("Last-Modified"))
			}
			again := f.conditional(path, alice, tag)
			if again.StatusCode != http.StatusNotModified || again.ContentLength > 0 || again.Header.Get("ETag") != tag {
				t.Errorf("same caller, same tag: %d, length %d", again.StatusCode, again.ContentLength)
			}
			if other := f.conditional(path, alice, `W/`+tag+`, "other"`); other.StatusCode != http.StatusNotModified {
				t.Errorf("a list holding the tag (weak form): %d", other.StatusCode)
			}
			if r := f.conditional(path, bob, tag); r.StatusCode == http.StatusNotModified {
				t.Error("another caller's answer may differ, but its tag matched")
			}
		})
	}
	// A sync that changes the library changes every tag.
	resp, _ := f.get("/folder/v1/files/apollo", alice)
	tag := resp.Header.Get("ETag")
	err := f.db.UpdateLibrary(context.Background(), "lib-eng", fm.Fence{}, func(tx fm.LibraryTx) error {
		apollo, err := tx.Folder("apollo")
		if err != nil {
			return err
		}
		apollo.Name = "Apollo (renamed)"
		return tx.Replace(apollo)
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := f.conditional("/folder/v1/files/apollo", alice, tag); r.StatusCode != http.StatusOK {
		t.Errorf("after a sync changed the library: %d, want 200", r.StatusCode)
	}
}

// An ETag covers the configuration a library's answers show: after a
// restart with another allowlist, the answers are sent again, not 304.
func TestETagsFollowTheConfiguration(t *testing.T) {
	dir := t.TempDir()
	const perms, folder = "/folder/v1/folders/partner/permissions", "/folder/v1/files/partner"
	tags := map[string]string{}
	var before []byte
	t.Run("before", func(t *testing.T) {
		f := newFixtureWith(t, fixtureOptions{dir: dir})
		alice := f.token("alice@example.com")
		for _, path := range []string{perms, folder} {
			resp, body := f.get(path, alice)
			tags[path] = resp.Header.Get("ETag")
			if path == perms {
				before = body
			}
		}
	})
	f := newFixtureWith(t, fixtureOptions{dir: dir, allowlisted: "vendor.net"})
	alice := f.token("alice@example.com")
	resp := f.conditional(perms, alice, tags[perms])
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("permissions after the allowlist changed: %d, want 200", resp.StatusCode)
	}
	_, after := f.get(perms, alice)
	if string(after) == string(before) {
		t.Error("the permissions' allowlisted fields did not change with the allowlist")
	}
	// Pat's domain left the allowlist, the vendor group's came in.
	if !strings.Contains(string(after), `"allowlisted":false,"belongsToDomain":false,"email":"pat@partner.org"`) ||
		!strings.Contains(string(after), `"allowlisted":true,"belongsToDomain":false,"email":"ops@vendor.net"`) {
		t.Errorf("permissions after the change: %s", after)
	}
	if r := f.conditional(folder, alice, tags[folder]); r.StatusCode != http.StatusOK {
		t.Errorf("folder after the allowlist changed: %d; the tag covers the configuration, so 200", r.StatusCode)
	}
}
