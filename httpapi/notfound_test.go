package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	fm "github.com/foldermirror/foldermirror"
)

// getWithKeys sends an authenticated GET carrying Drive's resource-key
// header (none if keys is "").
func (f *fixture) getWithKeys(path, token, keys string) (*http.Response, []byte) {
	f.t.Helper()
	return f.getWithHeaders(path, map[string]string{"Authorization": "Bearer " + token, "X-Goog-Drive-Resource-Keys": keys})
}

// withZeusKey writes lib-eng again with a resource key on zeus, the folder
// shared with anyone who has its link (carol reaches it by the link alone;
// alice is granted it).
func withZeusKey(t *testing.T, f *fixture) {
	t.Helper()
	tree := engineeringTree()
	for i := range tree {
		if tree[i].ID == "zeus" {
			tree[i].ResourceKey = "0-zeusKey"
		}
	}
	writeTree(t, f.db, "lib-eng", fm.LibraryState{RootID: "root", LastFullSync: syncedAt}, tree)
}

// A folder that has a resource key and that the caller reaches by its link
// alone is read only with its key in Drive's header; else it is 404, as if
// unknown.
func TestResourceKeyGoesWithTheLink(t *testing.T) {
	f := newFixture(t)
	withZeusKey(t, f)
	carol, alice := f.token("carol@example.com"), f.token("alice@example.com")
	paths := []string{
		"/folder/v1/files/zeus",
		"/folder/v1/folders/zeus/permissions",
		"/folder/v1/files/zeus/children",
		"/folder/v1/libraries/lib-eng/folders/children?folderServiceId=zeus",
	}
	cases := []struct {
		name, token, keys string
		want              int
	}{
		{"link alone, no key", carol, "", http.StatusNotFound},
		{"link alone, wrong key", carol, "zeus/0-guess", http.StatusNotFound},
		{"link alone, the key of another folder's ID", carol, "apollo/0-zeusKey", http.StatusNotFound},
		{"link alone, the key's prefix", carol, "zeus/0-zeus", http.StatusNotFound},
		{"link alone, the key", carol, "zeus/0-zeusKey", http.StatusOK},
		{"link alone, the key among others", carol, "apollo/rk-apollo, zeus/0-zeusKey", http.StatusOK},
		{"granted, no key", alice, "", http.StatusOK},
	}
	for _, tc := range cases {
		for _, path := range paths {
			resp, body := f.getWithKeys(path, tc.token, tc.keys)
			if resp.StatusCode != tc.want {
				t.Errorf("%s: %s: %d %s, want %d", tc.name, path, resp.StatusCode, body, tc.want)
			}
			if resp.StatusCode == http.StatusNotFound && strings.Contains(string(body), "0-zeusKey") {
				t.Errorf("%s: %s: a 404 shows the key: %s", tc.name, path, body)
			}
		}
	}
	// With its key, the folder is answered whole, its key included.
	if _, body := f.getWithKeys("/folder/v1/files/zeus", carol, "zeus/0-zeusKey"); !strings.Contains(string(body), `"resourceKey":"0-zeusKey"`) {
		t.Errorf("operation 5 with the key: %s", body)
	}
	// A folder without a key is read by its link alone, as before.
	if resp, body := f.getWithKeys("/folder/v1/files/zeus-sub", carol, ""); resp.StatusCode != http.StatusOK {
		t.Errorf("zeus-sub, which has no key, by its link: %d %s", resp.StatusCode, body)
	}
}

// Every 404 of a folder ID says the same, whatever the reason: an unknown
// ID, a folder not shared with the caller, the root of a library it may not
// see, a folder reached by a link without its key.
func TestNotFoundSaysNothing(t *testing.T) {
	f := newFixture(t)
	withZeusKey(t, f)
	olga, carol, bob := f.token("olga@other.org"), f.token("carol@example.com"), f.token("bob@example.com")
	for _, op := range []string{"/folder/v1/files/%s", "/folder/v1/files/%s/children", "/folder/v1/folders/%s/permissions"} {
		cases := []struct {
			reason, token, id string
		}{
			{"unknown", olga, "no-such-folder"},
			{"a library's root it may not see", olga, "drive1"},
			{"a folder not shared with it", bob, "secret"},
			{"by its link, without its key", carol, "zeus"},
		}
		var want string
		for _, tc := range cases {
			path := strings.ReplaceAll(op, "%s", tc.id)
			resp, body := f.getWithKeys(path, tc.token, "")
			got := strings.ReplaceAll(string(body), tc.id, "ID")
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("%s (%s): %d %s, want 404", path, tc.reason, resp.StatusCode, body)
				continue
			}
			if want == "" {
				want = got
			} else if got != want {
				t.Errorf("%s (%s) answers\n%s\nwhere an unknown ID answers\n%s", path, tc.reason, got, want)
			}
		}
	}
}
