package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/googlefake"
)

const deprecation = "@1735689600"

// The answers of every operation, on every index backend, are the golden
// files'.
func TestOperationsGolden(t *testing.T) {
	for _, backend := range fmtest.Backends(t) {
		t.Run(backend, func(t *testing.T) { testOperationsGolden(t, newFixtureWith(t, fixtureOptions{backend: backend})) })
	}
}

func testOperationsGolden(t *testing.T, f *fixture) {
	for _, tc := range []struct {
		name, user, path string
		status           int
		headers          map[string]string
	}{
		{"flags_all", "carol", "/domain/v1beta1/configurationFlags", 200, nil},
		{"flags_some", "carol", "/domain/v1beta1/configurationFlags?flags=theme&flags=beta&flags=unset&domain=example.com", 200, nil},
		{"children_nested_alice", "alice", "/folder/v1/libraries/lib-eng/folders/children", 200,
			map[string]string{"Deprecation": deprecation, "Link": `</folder/v1/files/root/children>; rel="successor-version"`}},
		{"children_direct_carol", "carol", "/folder/v1/libraries/lib-eng/folders/children?onlyDirectChildren=true", 200, nil},
		{"children_of_apollo_bob", "bob", "/folder/v1/libraries/lib-eng/folders/children?folderServiceId=apollo", 200,
			map[string]string{"Link": `</folder/v1/files/apollo/children>; rel="successor-version"`}},
		{"children_filtered_alice", "alice", "/folder/v1/libraries/lib-eng/folders/children?nameFilter=JEC&onlyDirectChildren=false", 200, nil},
		{"all_folders_pat", "pat@partner.org", "/folder/v1/libraries/lib-eng/folders", 200, map[string]string{"Deprecation": deprecation}},
		{"all_folders_alice", "alice", "/folder/v1/libraries/lib-eng/folders", 200, nil},
		{"permissions_partner", "alice", "/folder/v1/folders/partner/permissions", 200, map[string]string{"Deprecation": deprecation}},
		{"permissions_zeus_by_link", "carol", "/folder/v1/folders/zeus/permissions", 200, nil},
		{"folder_zeus_by_link", "carol", "/folder/v1/files/zeus", 200, nil},
		{"folder_locked_bob", "bob", "/folder/v1/files/locked", 200, nil},
		{"folder_drive_root_bob", "bob", "/folder/v1/files/drive1", 200, nil},
		{"folder_plans_carol", "carol", "/folder/v1/files/plans", 200, nil},
		{"files_children_zeus_carol", "carol", "/folder/v1/files/zeus/children", 200, nil},
		{"files_children_projects_bob", "bob", "/folder/v1/files/projects/children?onlyDirectChildren=true", 404, nil},
		{"error_bad_bool", "alice", "/folder/v1/libraries/lib-eng/folders/children?onlyDirectChildren=maybe", 400, nil},
		{"error_unknown_library", "alice", "/folder/v1/libraries/lib-nope/folders", 404, nil},
		{"error_unknown_folder", "alice", "/folder/v1/files/nope", 404, nil},
		{"error_never_synced", "alice", "/folder/v1/libraries/lib-never/folders/children", 503, map[string]string{"Retry-After": "30"}},
		{"error_never_synced_outsider", "pat@partner.org", "/folder/v1/libraries/lib-never/folders", 404, nil},
		{"error_other_domain_flags", "alice", "/domain/v1beta1/configurationFlags?domain=other.org", 403, nil},
		{"error_unconfigured_domain_flags", "pat@partner.org", "/domain/v1beta1/configurationFlags", 404, nil},
		{"error_required", "", "/folder/v1/libraries/lib-eng/folders", 401, map[string]string{"WWW-Authenticate": `Bearer realm="foldermirror"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			token := ""
			if tc.user != "" {
				token = f.token(email(tc.user))
			}
			resp, body := f.get(tc.path, token)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
			for k, v := range tc.headers {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			checkGolden(t, tc.name, body)
		})
	}
}

func email(user string) string {
	if strings.Contains(user, "@") {
		return user
	}
	return user + "@example.com"
}

// folderList is the part of a folder list response these tests look at.
type folderList struct {
	Items []folderItem `json:"items"`
	Kind  string       `json:"kind"`
}

type folderItem struct {
	FileID              string       `json:"fileId"`
	PermittedOperations []string     `json:"permittedOperations"`
	Subfolders          []folderItem `json:"subfolders"`
}

func ids(items []folderItem) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.FileID)
	}
	return out
}

// Each caller's listing of the whole library holds exactly what it may list.
func TestAllFoldersPerCaller(t *testing.T) {
	f := newFixture(t)
	for user, want := range map[string][]string{
		"alice":           {"root", "handbook", "policies", "projects", "apollo", "designs", "locked", "partner", "zeus", "zeus-sub", "secret"},
		"bob":             {"handbook", "policies", "apollo", "designs", "locked"},
		"carol":           {"handbook", "policies"},
		"pat@partner.org": {"partner"},
		// Zeus is shared with anyone with the link: the library exists for
		// everyone, but link grants list nothing.
		"olga@other.org": nil,
	} {
		_, body := f.get("/folder/v1/libraries/lib-eng/folders", f.token(email(user)))
		var got folderList
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatalf("%s: %v", user, err)
		}
		if !slices.Equal(ids(got.Items), want) {
			t.Errorf("%s sees %v, want %v", user, ids(got.Items), want)
		}
		for _, it := range got.Items {
			if it.Subfolders == nil || len(it.Subfolders) != 0 {
				t.Errorf("%s: %s has subfolders %v, want []", user, it.FileID, it.Subfolders)
			}
		}
	}
}

// A library nothing of which is shared with a caller of another domain does
// not exist for it.
func TestLibraryHiddenFromOutsiders(t *testing.T) {
	f := newFixture(t)
	for _, path := range []string{"/folder/v1/libraries/lib-drive/folders", "/folder/v1/libraries/lib-drive/folders/children", "/folder/v1/files/plans"} {
		if resp, body := f.get(path, f.token("olga@other.org")); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d %s", path, resp.StatusCode, body)
		}
	}
}

func TestBadCredentials(t *testing.T) {
	f := newFixture(t)
	for name, token := range map[string]string{
		"garbage":        "not-a-token",
		"expired":        f.token("alice@example.com", googlefake.WithTTL(-time.Hour)),
		"wrong audience": f.fake.GoogleIDToken("other.apps.googleusercontent.com", "alice@example.com"),
		"unknown user":   f.token("dave@example.com"),
		"unverified":     f.token("alice@example.com", googlefake.WithClaim("email_verified", false)),
		"no email":       f.token("alice@example.com", googlefake.WithClaim("email", nil)),
		"other issuer":   f.token("alice@example.com", googlefake.WithClaim("iss", "https://accounts.example.com")),
		"bare issuer ok": f.token("alice@example.com", googlefake.WithClaim("iss", "accounts.google.com")),
		// A consumer Google account sharing a directory user's address.
		"consumer ID token":     f.token("alice@example.com", googlefake.ConsumerAccount()),
		"consumer access token": f.fake.ConsumerAccessToken(clientID, "alice@example.com", time.Hour, "email"),
	} {
		t.Run(name, func(t *testing.T) {
			resp, body := f.get("/folder/v1/files/root", token)
			if name == "bare issuer ok" {
				if resp.StatusCode != http.StatusOK {
					t.Errorf("status %d: %s", resp.StatusCode, body)
				}
				return
			}
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401: %s", resp.StatusCode, body)
			}
			if got := resp.Header.Get("WWW-Authenticate"); got != `Bearer realm="foldermirror", error="invalid_token"` {
				t.Errorf("WWW-Authenticate %q", got)
			}
			var e struct {
				Error struct {
					Code   int `json:"code"`
					Errors []struct {
						Reason string `json:"reason"`
						Domain string `json:"domain"`
					} `json:"errors"`
				} `json:"error"`
			}
			if err := json.Unmarshal(body, &e); err != nil || e.Error.Code != 401 || e.Error.Errors[0].Reason != "authError" || e.Error.Errors[0].Domain != "global" {
				t.Errorf("body %s", body)
			}
		})
	}
}

func TestPermittedOperationsByRole(t *testing.T) {
	f := newFixture(t)
	all := []string{"VIEW_ACL", "OPEN_IN_DRIVE", "DOWNLOAD", "RENAME", "MOVE_TO_ANOTHER_FOLDER", "DELETE", "CREATE_SUBFOLDER", "CREATE_DOCUMENT_IN_THIS_FOLDER", "MODIFY_ACL"}
	for _, tc := range []struct {
		user, folder string
		want         []string
	}{
		{"alice", "root", []string{"VIEW_ACL", "OPEN_IN_DRIVE", "DOWNLOAD", "CREATE_SUBFOLDER", "CREATE_DOCUMENT_IN_THIS_FOLDER", "MODIFY_ACL"}},
		{"alice", "zeus", all},
		{"carol", "zeus", []string{"VIEW_ACL", "OPEN_IN_DRIVE"}},
		{"bob", "apollo", []string{"VIEW_ACL", "OPEN_IN_DRIVE", "DOWNLOAD"}},
		{"bob", "locked", all[:8]},
		{"pat@partner.org", "partner", []string{"VIEW_ACL", "OPEN_IN_DRIVE", "DOWNLOAD"}},
		{"carol", "plans", all[:8]},
		{"bob", "plans", all},
		{"bob", "drive1", []string{"VIEW_ACL", "OPEN_IN_DRIVE", "DOWNLOAD", "CREATE_SUBFOLDER", "CREATE_DOCUMENT_IN_THIS_FOLDER", "MODIFY_ACL"}},
	} {
		resp, body := f.get("/folder/v1/files/"+tc.folder, f.token(email(tc.user)))
		var got folderItem
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &got) != nil {
			t.Errorf("%s on %s: %d %s", tc.user, tc.folder, resp.StatusCode, body)
			continue
		}
		if !slices.Equal(got.PermittedOperations, tc.want) {
			t.Errorf("%s on %s: %v, want %v", tc.user, tc.folder, got.PermittedOperations, tc.want)
		}
	}
}

// Operation 6 on a library's root answers what operation 2 answers without
// a parent, for every caller (its successor link must lead somewhere that
// works), whether or not the caller may see the root itself.
func TestChildrenOfTheRootAsOperation2(t *testing.T) {
	f := newFixture(t)
	for _, lib := range []struct{ id, root string }{{"lib-eng", "root"}, {"lib-drive", "drive1"}} {
		for _, user := range []string{"alice", "bob", "carol", "pat@partner.org", "olga@other.org"} {
			for _, query := range []string{"", "?onlyDirectChildren=true", "?nameFilter=o"} {
				token := f.token(email(user))
				old, oldBody := f.get("/folder/v1/libraries/"+lib.id+"/folders/children"+query, token)
				succ, succBody := f.get("/folder/v1/files/"+lib.root+"/children"+query, token)
				if old.StatusCode == http.StatusNotFound && succ.StatusCode == http.StatusNotFound {
					// Operation 2 names the library it was asked for; 6
					// says of the root no more than of any folder.
					oldBody = []byte(fmt.Sprintf(`{"error":{"errors":[{"domain":"global","reason":"notFound","message":"Folder %[1]s not found."}],"code":404,"message":"Folder %[1]s not found."}}`, lib.root))
				}
				if old.StatusCode != succ.StatusCode || string(oldBody) != string(succBody) {
					t.Errorf("%s, %s%s: operation 2 %d %s\noperation 6 %d %s", user, lib.id, query, old.StatusCode, oldBody, succ.StatusCode, succBody)
				}
			}
		}
	}
	// Carol cannot see Engineering's root, but lists the Handbook under it.
	resp, body := f.get("/folder/v1/files/root/children?onlyDirectChildren=true", f.token(email("carol")))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"fileId":"handbook"`) {
		t.Errorf("carol, children of the root: %d %s", resp.StatusCode, body)
	}
	if resp, _ := f.get("/folder/v1/files/root", f.token(email("carol"))); resp.StatusCode != http.StatusNotFound {
		t.Errorf("carol, the root itself: %d, want 404", resp.StatusCode)
	}
}
