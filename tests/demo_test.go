package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/foldermirror/foldermirror/httpapi/admin"
	"github.com/foldermirror/foldermirror/internal/fmtest"
)

// runDemo runs the built binary's demo with args until the test ends and
// returns, once it serves, what it printed, the tokens it printed by name
// (ALICE, ...) and the API's base URL.
func runDemo(t *testing.T, args ...string) (text string, tokens map[string]string, base string) {
	t.Helper()
	p := startProcess(t, "Press Ctrl-C to stop.", append([]string{"demo"}, args...)...)
	text = p.stdout.String()
	tokens = map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^([A-Z]+)='([^']+)'$`).FindAllStringSubmatch(text, -1) {
		tokens[m[1]] = m[2]
	}
	if len(tokens) < 3 {
		t.Fatalf("the demo printed %d tokens:\n%s", len(tokens), text)
	}
	m := regexp.MustCompile(`(?m)^The API serves on (http://\S+) `).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("the demo did not say where the API serves:\n%s", text)
	}
	return text, tokens, m[1]
}

// TestDemo runs the demo as a newcomer would and follows every curl line it
// prints: each answers, and each user sees something different.
func TestDemo(t *testing.T) {
	t.Parallel()
	text, tokens, _ := runDemo(t, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--folders", "150")
	curls := regexp.MustCompile(`curl -s -H "Authorization: Bearer \$([A-Z]+)" +'([^']+)'`).FindAllStringSubmatch(text, -1)
	if len(curls) < 6 {
		t.Fatalf("the demo printed %d curl lines:\n%s", len(curls), text)
	}
	bodies := map[string]string{}
	for _, m := range curls {
		user, url := m[1], m[2]
		want := http.StatusOK
		if user == "PAT" && strings.Contains(url, "lib-sales") {
			want = http.StatusNotFound
		}
		bodies[user+" "+url] = string(getJSON(t, url, tokens[user], want, nil))
	}
	base := strings.Split(curls[0][2], "/folder/")[0]
	topOfEng := base + "/folder/v1/libraries/lib-eng/folders/children?onlyDirectChildren=true"
	if bodies["ALICE "+topOfEng] == bodies["CAROL "+topOfEng] || !strings.Contains(bodies["CAROL "+topOfEng], `"Handbook"`) {
		t.Errorf("alice and carol should see different parts of Engineering:\n%s\n%s", bodies["ALICE "+topOfEng], bodies["CAROL "+topOfEng])
	}
}

// The demo prints a foldermirror sync line that works while it runs: it
// asks the demo's daemon, whatever port its admin listener has. The line is
// run as its user would, with the built binary.
func TestDemoSyncLine(t *testing.T) {
	t.Parallel()
	text, _, _ := runDemo(t, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--folders", "100")
	m := regexp.MustCompile(`(?m)^  (\S+) (sync --config \S+.*)$`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("the demo printed no sync line:\n%s", text)
	}
	if bin := buildBinary(t); m[1] != "foldermirror" && m[1] != bin {
		t.Errorf("the sync line runs %q; want foldermirror or the program's path, %s", m[1], bin)
	}
	r := runBinary(t, strings.Fields(m[2])...)
	if r.code != 0 {
		t.Fatalf("%s: exit status %d\n%s%s", m[0], r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "a foldermirror daemon holds the index; asking it") {
		t.Errorf("the sync did not ask the demo's daemon:\n%s", r.stderr)
	}
	for _, want := range []string{"directory:example.com: ", "lib-eng: full sync (asked): ", "lib-sales: full sync (asked): ", "lib-partners: full sync (asked): "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the sync said\n%s\nwant a line %q", r.stdout, want)
		}
	}
}

// The demo prints a line that renames a folder in its Drive, and the API
// request that shows the new name a moment later: Drive pushes the change
// to the demo, which syncs it at once. Both lines are run as printed; the
// demo's incremental schedule (every minute) cannot explain the new name
// showing within the few seconds the test waits.
func TestDemoPush(t *testing.T) {
	t.Parallel()
	text, tokens, _ := runDemo(t, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--folders", "100")
	m := regexp.MustCompile(`(?m)^  curl -s -X POST -H '([^:']+): ([^']+)' '([^']+)'\n.*\n  curl -s -H "Authorization: Bearer \$([A-Z]+)" +'([^']+)'$`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("the demo printed no rename and API lines:\n%s", text)
	}
	header, value, rename, user, api := m[1], m[2], m[3], m[4], m[5]
	u, err := url.Parse(rename)
	if err != nil || u.Query().Get("name") == "" {
		t.Fatalf("the rename line %q names no new name (%v)", rename, err)
	}
	renamed := fmt.Sprintf(`"name":%q`, u.Query().Get("name"))
	if body := getJSON(t, api, tokens[user], http.StatusOK, nil); strings.Contains(string(body), renamed) {
		t.Fatalf("the folder has its new name before the rename: %s", body)
	}
	req, err := http.NewRequest(http.MethodPost, rename, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(header, value)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("POST %s: %d, want 204", rename, resp.StatusCode)
	}
	waitUntil(t, 10*time.Second, "the API serving the new name", func() bool {
		return strings.Contains(string(getJSON(t, api, tokens[user], http.StatusOK, nil)), renamed)
	})
}

// The demo prints a line that creates a shared drive in its Drive and adds
// the storage account to it, and the API request that lists the drive's
// folders a moment later: the domain discovers its drives, and Drive
// pushes the account's change to the demo. Both lines are run as printed,
// and the status line's discovery counts one drive more.
func TestDemoDiscovery(t *testing.T) {
	t.Parallel()
	text, tokens, _ := runDemo(t, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--folders", "100")
	m := regexp.MustCompile(`(?m)^  DRIVE=\$\(curl -s -X POST -H '([^:']+): ([^']+)' '([^']+)'\)\n.*\n` +
		`  curl -s -H "Authorization: Bearer \$([A-Z]+)" +"([^"]+)"\n.*\n  curl -s '([^']+)'`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("the demo printed no shared drive, API and status lines:\n%s", text)
	}
	header, value, create, user, api, statusURL := m[1], m[2], m[3], m[4], m[5], m[6]
	u, err := url.Parse(create)
	if err != nil || u.Query().Get("name") == "" {
		t.Fatalf("the shared drive line %q names no drive (%v)", create, err)
	}
	name := u.Query().Get("name")
	found := func() int {
		var st admin.Status
		getJSON(t, statusURL, "", http.StatusOK, &st)
		if len(st.Discovery) != 1 {
			t.Fatalf("%s has the discovery %+v; want the demo's domain's", statusURL, st.Discovery)
		}
		return st.Discovery[0].Found
	}
	before := found()

	req, err := http.NewRequest(http.MethodPost, create, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(header, value)
	resp, body := fmtest.Do(t, req)
	drive := strings.TrimSpace(string(body))
	if resp.StatusCode != http.StatusCreated || drive == "" {
		t.Fatalf("POST %s: %d %q, want 201 and the drive's ID", create, resp.StatusCode, body)
	}
	list, err := http.NewRequest(http.MethodGet, strings.ReplaceAll(api, "$DRIVE", drive), nil)
	if err != nil {
		t.Fatal(err)
	}
	list.Header.Set("Authorization", "Bearer "+tokens[user])
	var folders struct {
		Items []struct{ FileID, LibraryID, LibraryName string }
	}
	waitUntil(t, 30*time.Second, "the API serving the new drive's folders", func() bool {
		resp, body := fmtest.Do(t, list)
		return resp.StatusCode == http.StatusOK && json.Unmarshal(body, &folders) == nil
	})
	if len(folders.Items) < 2 || folders.Items[0].FileID != drive {
		t.Errorf("the new drive's folders: %+v; want its root, %s, then its folders", folders.Items, drive)
	}
	for _, f := range folders.Items {
		if f.LibraryID != drive || f.LibraryName != name {
			t.Errorf("folder %s is of library %s %q; want %s %q", f.FileID, f.LibraryID, f.LibraryName, drive, name)
		}
	}
	if after := found(); after != before+1 {
		t.Errorf("the discovery found %d drives, then %d once the demo's drive was added; want one more", before, after)
	}
}

// TestAPIExamplesAreTheDemos checks that every Drive-like ID (of a folder,
// a shared drive or a permission) in the API's examples, in docs/api.md and
// in the README's API section, is one the demo, at its default size, really
// serves.
func TestAPIExamplesAreTheDemos(t *testing.T) {
	t.Parallel()
	ids := driveLikeIDs(apiExamples(t))
	if len(ids) == 0 {
		t.Fatal("no Drive-like IDs found in docs/api.md")
	}

	_, tokens, base := runDemo(t, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0")
	// Alice may list every folder of the demo: writer on Engineering, reader
	// on Sales, file organizer of Partners.
	served := map[string]bool{}
	for _, lib := range []string{"lib-eng", "lib-sales", "lib-partners"} {
		var all struct {
			Items []struct{ FileID string }
		}
		getJSON(t, base+"/folder/v1/libraries/"+lib+"/folders", tokens["ALICE"], http.StatusOK, &all)
		for _, it := range all.Items {
			served[it.FileID] = true
		}
	}
	var folders []string
	for _, id := range ids {
		if served[id] {
			folders = append(folders, id)
		}
	}
	for _, id := range folders { // and the permissions of the examples' folders
		var perms struct {
			StoragePermissions []struct{ PermissionID string }
		}
		getJSON(t, base+"/folder/v1/folders/"+id+"/permissions", tokens["ALICE"], http.StatusOK, &perms)
		for _, p := range perms.StoragePermissions {
			served[p.PermissionID] = true
		}
	}
	for _, id := range ids {
		if !served[id] {
			t.Errorf("the API examples show %s, which the demo does not have (regenerate them with `go run ./cmd/foldermirror demo`)", id)
		}
	}
}

// apiExamples returns the text of docs/api.md and of the README's section
// "The API in brief", where the API's examples are.
func apiExamples(t *testing.T) string {
	t.Helper()
	api, err := os.ReadFile("../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, brief, ok := strings.Cut(string(readme), "\n## The API in brief\n")
	if !ok {
		t.Fatal("README.md has no section \"The API in brief\"")
	}
	brief, _, _ = strings.Cut(brief, "\n## ")
	return string(api) + brief
}

// driveLikeIDs returns the words of text that look like Drive IDs: 18
// characters or more of letters, digits, - and _, one a digit at least.
func driveLikeIDs(text string) []string {
	var ids []string
	words := strings.FieldsFunc(text, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' && r != '_' || r > unicode.MaxASCII
	})
	for _, w := range words {
		if len(w) >= 18 && strings.ContainsAny(w, "0123456789") && !slices.Contains(ids, w) {
			ids = append(ids, w)
		}
	}
	return ids
}
