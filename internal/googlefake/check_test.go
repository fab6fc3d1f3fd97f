package googlefake_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/foldermirror/foldermirror/internal/googlefake"
)

// checkWorld is a fake with a folder, a group and a changes page token, and
// alice's access tokens for Drive and the Directory (she administers
// example.com).
type checkWorld struct {
	s                   *googlefake.Server
	folder, changeToken string
	driveToken, dirTok  string
}

func newCheckWorld(t *testing.T) *checkWorld {
	t.Helper()
	s := newDirectory(t)
	s.AddGroup("team@example.com", bob)
	s.DropNotifications(true)
	w := &checkWorld{s: s, folder: s.CreateFolder(alice, "", "checked")}
	start, err := driveAs(t, s, alice).Changes.GetStartPageToken().Do()
	if err != nil {
		t.Fatal(err)
	}
	w.changeToken = start.StartPageToken
	for _, c := range []struct {
		into   *string
		scopes []string
	}{{&w.driveToken, nil}, {&w.dirTok, directoryScopes}} {
		tok, err := credentials(t, s, alice, c.scopes...).TokenSource.Token()
		if err != nil {
			t.Fatal(err)
		}
		*c.into = tok.AccessToken
	}
	s.ResetCalls()
	return w
}

// serve sends a request to the fake's handler, with token when it is set.
func (w *checkWorld) serve(method, target, body, token string) *httptest.ResponseRecorder {
	var req *http.Request
	if body == "" {
		req = httptest.NewRequest(method, target, nil)
	} else {
		req = httptest.NewRequest(method, target, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	w.s.ServeHTTP(rec, req)
	return rec
}

// query encodes name, value pairs as a query string.
func query(pairs ...string) string {
	q := url.Values{}
	for i := 0; i < len(pairs); i += 2 {
		q.Add(pairs[i], pairs[i+1])
	}
	return q.Encode()
}

// googleError is Google's JSON error body.
type googleError struct {
	Error struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Errors  []struct {
			Domain, Reason, Message, Location, LocationType string
		} `json:"errors"`
	} `json:"error"`
}

// wantRefused checks that an answer is the check's 400: Google's error
// body with one item of that reason and location (a parameter's name, ""
// for none) whose message contains message.
func wantRefused(t *testing.T, rec *httptest.ResponseRecorder, reason, location, message string) {
	t.Helper()
	var body googleError
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != http.StatusBadRequest {
		t.Fatalf("%d %s (%v), want 400", rec.Code, rec.Body, err)
	}
	e := body.Error
	if e.Code != http.StatusBadRequest || len(e.Errors) != 1 {
		t.Fatalf("error body %s, want code 400 and one item", rec.Body)
	}
	item := e.Errors[0]
	wantType := map[bool]string{true: "parameter", false: ""}[location != ""]
	if item.Domain != "global" || item.Reason != reason || item.Message != e.Message ||
		item.Location != location || item.LocationType != wantType || !strings.Contains(e.Message, message) {
		t.Errorf("error %+v %q\nwant reason %s, location %q, a message containing %q", item, e.Message, reason, location, message)
	}
}

// Requests that the discovery documents allow reach the fake, which
// answers them: those the product sends, parameters of every type, fields
// selections through $ref, arrays' items and additionalProperties,
// wildcards, each page size at its maximum, a Channel with its params.
func TestCheckAcceptsValidRequests(t *testing.T) {
	w := newCheckWorld(t)
	productFields := "nextPageToken,files(id,name,parents,appProperties/folderDefinitionId," +
		"permissions(id,role,permissionDetails(inherited)),owners/emailAddress)"
	tests := []struct {
		name, method, target, body string
		directory                  bool
		status                     int
	}{
		{"files.list as the syncer asks", "GET", "/drive/v3/files?" + query("alt", "json", "prettyPrint", "false",
			"corpora", "user", "pageSize", "1000", "supportsAllDrives", "true", "q", "trashed = false", "fields", productFields,
			"quotaUser", "x", "$.xgafv", "2"), "", false, 200},
		{"files.list, wildcard", "GET", "/drive/v3/files?" + query("fields", "*"), "", false, 200},
		{"files.list, wildcard below", "GET", "/drive/v3/files?" + query("fields", "files(*),nextPageToken"), "", false, 200},
		{"files.list, empty fields", "GET", "/drive/v3/files?fields=", "", false, 200},
		{"files.get, a boolean in capitals", "GET", "/drive/v3/files/" + w.folder + "?" +
			query("supportsAllDrives", "TRUE", "fields", "id,capabilities/canShare"), "", false, 200},
		{"files.list at its maximum page size", "GET", "/drive/v3/files?pageSize=1000", "", false, 200},
		{"permissions.list at its maximum page size", "GET", "/drive/v3/files/" + w.folder + "/permissions?" +
			query("pageSize", "100", "fields", "permissions(id,permissionDetails(role,inherited))"), "", false, 200},
		{"drives.list at its maximum page size", "GET", "/drive/v3/drives?pageSize=100", "", false, 200},
		{"changes.getStartPageToken", "GET", "/drive/v3/changes/startPageToken?supportsAllDrives=true", "", false, 200},
		{"changes.list", "GET", "/drive/v3/changes?" + query("pageToken", w.changeToken, "pageSize", "1000", "includeRemoved", "true",
			"fields", "changes(fileId,removed,file(id,parents)),newStartPageToken,nextPageToken"), "", false, 200},
		{"changes.watch, a Channel with params", "POST", "/drive/v3/changes/watch?pageToken=" + w.changeToken,
			`{"id":"c1","type":"web_hook","address":"https://hooks.example.com/n","token":"t","params":{"ttl":"60"}}`, false, 200},
		{"channels.stop of no channel: the check lets it through", "POST", "/drive/v3/channels/stop",
			`{"id":"nope","resourceId":"r"}`, false, 404},
		{"users.list at its maximum page size, fields through additionalProperties and any", "GET",
			"/admin/directory/v1/users?" + query("domain", "example.com", "maxResults", "500",
				"fields", "nextPageToken,users(primaryEmail,customSchemas/hr/badge)"), "", true, 200},
		{"groups.list at its maximum page size", "GET", "/admin/directory/v1/groups?customer=my_customer&maxResults=200", "", true, 200},
		{"members.list at its maximum page size", "GET", "/admin/directory/v1/groups/team@example.com/members?maxResults=200", "", true, 200},
		{"a Directory method the fake lacks: the check lets it through", "GET", "/admin/directory/v1/users/" + alice, "", true, 501},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			token := map[bool]string{false: w.driveToken, true: w.dirTok}[tt.directory]
			if rec := w.serve(tt.method, tt.target, tt.body, token); rec.Code != tt.status {
				t.Errorf("%d %s, want %d", rec.Code, rec.Body, tt.status)
			}
		})
	}
	for _, sh := range w.s.RequestShapes() {
		if sh.Refused != "" {
			t.Errorf("shape refused: %s", sh)
		}
	}
}

// Requests the documents do not allow get the check's 400, whoever sends
// them: they are sent without credentials, which the fake would answer
// with 401.
func TestCheckRefusesInvalidRequests(t *testing.T) {
	w := newCheckWorld(t)
	files := "/drive/v3/files?"
	channel := `{"id":"c2","type":"web_hook","address":"https://hooks.example.com/n"}`
	tests := []struct {
		name, method, target, body string
		reason, location, message  string
	}{
		{"unknown path", "GET", "/drive/v3/nope", "", "badRequest", "", "no method has this path"},
		{"unknown path below a known one", "GET", "/drive/v3/files/" + w.folder + "/nope", "", "badRequest", "", "no method has this path"},
		{"empty path segment", "GET", "/drive/v3/files//permissions", "", "badRequest", "", "no method has this path"},
		{"unknown Directory path", "GET", "/admin/directory/v1/nope", "", "badRequest", "", "admin:directory_v1"},
		{"unknown method on a known path", "PUT", "/drive/v3/files", "", "badRequest", "", "the path takes other HTTP methods"},
		{"unknown method on changes", "DELETE", "/drive/v3/changes", "", "badRequest", "", "DELETE /drive/v3/changes"},
		{"unknown parameter", "GET", files + "foo=1", "", "invalidParameter", "foo", `Unknown parameter "foo"`},
		{"another method's parameter", "GET", "/drive/v3/files/" + w.folder + "?pageSize=10", "", "invalidParameter", "pageSize", "drive.files.get"},
		{"a parameter given twice", "GET", files + "pageSize=1&pageSize=2", "", "invalidParameter", "pageSize", "more than once"},
		{"malformed query", "GET", files + "pageSize=%zz", "", "badRequest", "", "Malformed query"},
		{"integer of the wrong type", "GET", files + "pageSize=ten", "", "invalidParameter", "pageSize", "expected an integer (int32)"},
		{"integer beyond int32", "GET", files + "pageSize=4294967296", "", "invalidParameter", "pageSize", "[1, 1000]"},
		{"boolean of the wrong type", "GET", files + "supportsAllDrives=yes", "", "invalidParameter", "supportsAllDrives", "expected a boolean"},
		{"outside the enum", "GET", "/admin/directory/v1/users?domain=example.com&orderBy=name", "", "invalidParameter", "orderBy",
			"allowed values are email, familyName, givenName"},
		{"outside a global parameter's enum", "GET", files + "alt=xml", "", "invalidParameter", "alt", "allowed values are json, media, proto"},
		{"required parameter missing", "GET", "/drive/v3/changes?pageSize=10", "", "invalidParameter", "pageToken", "Required parameter: pageToken"},
		{"required parameter missing, with a body", "POST", "/drive/v3/changes/watch", channel, "invalidParameter", "pageToken", "Required parameter: pageToken"},
		{"unknown field", "GET", files + query("fields", "nope"), "", "invalidParameter", "fields", "Invalid field selection nope"},
		{"unknown field, nested", "GET", files + query("fields", "nextPageToken,files(id,nope)"), "", "invalidParameter", "fields",
			"Invalid field selection files/nope"},
		{"unknown field, nested twice in an array's inline items", "GET", files + query("fields", "files(permissions(permissionDetails(nope)))"), "",
			"invalidParameter", "fields", "Invalid field selection files/permissions/permissionDetails/nope"},
		{"unknown field through $ref and items", "GET", files + query("fields", "files(owners(nope))"), "", "invalidParameter", "fields",
			"Invalid field selection files/owners/nope"},
		{"unknown field through $ref and items, by slashes", "GET", files + query("fields", "files/owners/nope"), "", "invalidParameter", "fields",
			"Invalid field selection files/owners/nope"},
		{"a field below additionalProperties' strings", "GET", files + query("fields", "files(appProperties/key/sub)"), "",
			"invalidParameter", "fields", "Invalid field selection files/appProperties/key/sub"},
		{"a field below a string", "GET", files + query("fields", "files(name/first)"), "", "invalidParameter", "fields",
			"Invalid field selection files/name/first"},
		{"unknown field of the Directory through $ref", "GET", "/admin/directory/v1/users?" + query("domain", "example.com", "fields", "users(name/nope)"), "",
			"invalidParameter", "fields", "Invalid field selection users/name/nope"},
		{"fields unclosed", "GET", files + query("fields", "files(id"), "", "invalidParameter", "fields", "Invalid field selection"},
		{"fields closed twice", "GET", files + query("fields", "files(id))"), "", "invalidParameter", "fields", "Invalid field selection"},
		{"fields with an empty item", "GET", files + query("fields", "files(id),,kind"), "", "invalidParameter", "fields", "Invalid field selection"},
		{"fields ending in a slash", "GET", files + query("fields", "files/"), "", "invalidParameter", "fields", "Invalid field selection"},
		{"fields of a method without a response", "POST", "/drive/v3/channels/stop?fields=kind", `{"id":"c","resourceId":"r"}`,
			"invalidParameter", "fields", "Invalid field selection kind"},
		{"unknown key in a Channel", "POST", "/drive/v3/changes/watch?pageToken=1", `{"id":"c3","type":"web_hook","bogus":1}`,
			"badRequest", "", `Unknown name "bogus"`},
		{"unknown key in channels.stop's Channel", "POST", "/drive/v3/channels/stop", `{"id":"c","resourceId":"r","extra":{}}`,
			"badRequest", "", `Unknown name "extra"`},
		{"an object where params holds strings", "POST", "/drive/v3/changes/watch?pageToken=1", `{"id":"c4","params":{"ttl":{"s":1}}}`,
			"badRequest", "", `Unknown name "params.ttl.s"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantRefused(t, w.serve(tt.method, tt.target, tt.body, ""), tt.reason, tt.location, tt.message)
		})
	}
	if calls := w.s.Calls(); len(calls) != 0 {
		t.Errorf("the fake answered refused requests itself: %v", calls)
	}
}

// The page sizes' bounds are the documents': each of the five the product
// pages with is refused below 1 and above its maximum, and accepted at it
// (TestCheckAcceptsValidRequests).
func TestCheckPageSizeBounds(t *testing.T) {
	w := newCheckWorld(t)
	for _, tt := range []struct {
		method, path, param string
		maximum             int
	}{
		{"drive.files.list", "/drive/v3/files", "pageSize", 1000},
		{"drive.permissions.list", "/drive/v3/files/" + w.folder + "/permissions", "pageSize", 100},
		{"drive.drives.list", "/drive/v3/drives", "pageSize", 100},
		{"directory.users.list", "/admin/directory/v1/users", "maxResults", 500},
		{"directory.members.list", "/admin/directory/v1/groups/team@example.com/members", "maxResults", 200},
	} {
		for _, size := range []int{0, tt.maximum + 1} {
			t.Run(fmt.Sprint(tt.method, " ", size), func(t *testing.T) {
				rec := w.serve("GET", tt.path+"?"+tt.param+"="+fmt.Sprint(size), "", "")
				wantRefused(t, rec, "invalidParameter", tt.param,
					fmt.Sprintf("Invalid value '%d'. Values must be within the range: [1, %d]", size, tt.maximum))
			})
		}
	}
}

// Deprecated parameters, fields and methods are accepted and counted, in
// the requests accepted only, until ResetCalls.
func TestCheckCountsDeprecatedUses(t *testing.T) {
	w := newCheckWorld(t)
	deprecated := "/drive/v3/files?" + query("corpus", "user", "includeTeamDriveItems", "false", "fields", "files(id,teamDriveId)")
	for range 2 {
		if rec := w.serve("GET", deprecated, "", w.driveToken); rec.Code != http.StatusOK {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
	wantRefused(t, w.serve("GET", deprecated+"&pageSize=0", "", w.driveToken), "invalidParameter", "pageSize", "[1, 1000]")
	want := map[string]int{"drive.files.list?corpus": 2, "drive.files.list?includeTeamDriveItems": 2,
		"drive.files.list?fields=files/teamDriveId": 2}
	if got := w.s.DeprecatedUses(); !maps.Equal(got, want) {
		t.Errorf("deprecated uses %v, want %v", got, want)
	}
	w.s.ResetCalls()
	if got := w.s.DeprecatedUses(); len(got) != 0 {
		t.Errorf("deprecated uses after ResetCalls: %v", got)
	}
}

// RequestShapes lists each distinct shape once with its count, refused
// ones with the reason, until ResetCalls.
func TestRequestShapes(t *testing.T) {
	w := newCheckWorld(t)
	for _, pageSize := range []string{"10", "20"} {
		w.serve("GET", "/drive/v3/files?"+query("pageSize", pageSize, "fields", "files(id)", "alt", "json"), "", w.driveToken)
	}
	w.serve("GET", "/drive/v3/files?"+query("fields", "files(id)", "alt", "json"), "", w.driveToken)
	w.serve("GET", "/drive/v3/files/"+w.folder+"?bogus=1", "", w.driveToken)
	w.serve("GET", "/drive/v3/nope", "", w.driveToken)
	want := []googlefake.RequestShape{
		{HTTPMethod: "GET", Path: "/drive/v3/nope", Count: 1,
			Refused: "The discovery document drive:v3 has no method GET /drive/v3/nope (no method has this path)"},
		{Method: "drive.files.get", HTTPMethod: "GET", Path: "drive/v3/files/{fileId}", Params: []string{"bogus"}, Count: 1,
			Refused: `Unknown parameter "bogus": drive.files.get has no such parameter`},
		{Method: "drive.files.list", HTTPMethod: "GET", Path: "drive/v3/files", Params: []string{"alt", "fields"},
			Fields: "files(id)", Count: 1},
		{Method: "drive.files.list", HTTPMethod: "GET", Path: "drive/v3/files", Params: []string{"alt", "fields", "pageSize"},
			Fields: "files(id)", Count: 2},
	}
	if got := w.s.RequestShapes(); !reflect.DeepEqual(got, want) {
		t.Errorf("shapes\n%v\nwant\n%v", got, want)
	}
	if got, want := want[3].String(), "GET drive/v3/files (drive.files.list) ?alt&fields&pageSize fields=files(id)"; got != want {
		t.Errorf("String() %q, want %q", got, want)
	}
	w.s.ResetCalls()
	if got := w.s.RequestShapes(); len(got) != 0 {
		t.Errorf("shapes after ResetCalls: %v", got)
	}
}
