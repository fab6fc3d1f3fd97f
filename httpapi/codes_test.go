package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestSecurityCodesThroughTheAPI(t *testing.T) {
	f := newFixture(t)
	code := func(c string) string { return "securityCode " + c }
	for _, tc := range []struct {
		name, auth, path string
		status           int
		want             string // a substring of the body
	}{
		{"admin reads its flags", code(exampleAdminCode), "/domain/v1beta1/configurationFlags", 200, `"beta":"true"`},
		{"admin of another domain reads its own", code(otherAdminCode), "/domain/v1beta1/configurationFlags", 200, `"theme":"dark"`},
		{"a code cannot name another domain", code(exampleAdminCode), "/domain/v1beta1/configurationFlags?domain=other.org", 403, `"reason":"forbidden"`},
		{"not even on folder operations", code(exampleAdminCode), "/folder/v1/files/root?domain=other.org", 403, `"reason":"forbidden"`},
		{"naming its own domain is fine", code(exampleAdminCode), "/folder/v1/files/secret?domain=EXAMPLE.COM", 200, `"editable":true`},
		{"admin owns everything of its domain", code(exampleAdminCode), "/folder/v1/files/secret", 200, `"MODIFY_ACL"`},
		{"admin of another domain does not see the library", code(otherAdminCode), "/folder/v1/libraries/lib-eng/folders", 404, `"reason":"notFound"`},
		{"nor a folder", code(otherAdminCode), "/folder/v1/files/secret", 404, `"reason":"notFound"`},
		{"user code acts as bob", code(bobCode), "/folder/v1/files/apollo", 200, `"fileId":"apollo"`},
		{"user code in the query", "", "/folder/v1/files/apollo?securityCode=" + bobCode, 200, `"fileId":"apollo"`},
		{"user code sees what bob sees", code(bobCode), "/folder/v1/files/secret", 404, `"reason":"notFound"`},
		{"bad code", code("guess"), "/folder/v1/files/apollo", 403, `"reason":"forbidden"`},
		{"access token", "Bearer " + f.fake.GoogleAccessToken(clientID, "carol@example.com", time.Hour, "email"), "/folder/v1/files/handbook", 200, `"fileId":"handbook"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := f.getWith(tc.path, tc.auth)
			if resp.StatusCode != tc.status || !contains(body, tc.want) {
				t.Errorf("%d %s; want %d with %s", resp.StatusCode, body, tc.status, tc.want)
			}
		})
	}
}

func contains(body []byte, s string) bool { return strings.Contains(string(body), s) }

// The admin code lists the whole library, the root included, as an owner.
func TestAdminCodeListsEverything(t *testing.T) {
	f := newFixture(t)
	_, body := f.getWith("/folder/v1/libraries/lib-eng/folders", "securityCode "+exampleAdminCode)
	var got folderList
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Items) != len(engineeringTree()) || got.Items[0].FileID != "root" {
		t.Errorf("admin sees %v", ids(got.Items))
	}
}

// After 20 bad codes from an address, its security-code requests get 429
// with Retry-After, valid ones too.
func TestSecurityCodeGuessingIsThrottled(t *testing.T) {
	f := newFixture(t)
	for i := range 20 {
		if resp, _ := f.getWith("/folder/v1/files/apollo", fmt.Sprintf("securityCode guess-%d", i)); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("guess %d: %d", i, resp.StatusCode)
		}
	}
	resp, body := f.getWith("/folder/v1/files/apollo", "securityCode "+bobCode)
	retry, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != http.StatusTooManyRequests || retry < 1 || retry > 60 || !contains(body, `"reason":"rateLimitExceeded"`) {
		t.Errorf("valid code after 20 bad ones: %d Retry-After %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if resp, _ := f.get("/folder/v1/files/apollo", f.token("bob@example.com")); resp.StatusCode != http.StatusOK {
		t.Errorf("bearer token from the same address: %d", resp.StatusCode)
	}
}
