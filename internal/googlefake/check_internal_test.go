package googlefake

import (
	"bytes"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	admin "google.golang.org/api/admin/directory/v1"
	"google.golang.org/api/drive/v3"
)

// The embedded documents are those of the google.golang.org/api that
// go.mod requires: an upgrade fails here until they are copied again
// (discovery/README.md says how).
func TestDiscoveryDocumentsMatchTheModule(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	required := regexp.MustCompile(`(?m)^\s*google\.golang\.org/api (v\S+)`).FindSubmatch(mod)
	if required == nil {
		t.Fatal("go.mod requires no google.golang.org/api")
	}
	version := string(required[1])
	if version != discoveryModuleVersion {
		t.Errorf("go.mod requires google.golang.org/api %s; the discovery documents are those of %s: copy them again (discovery/README.md)",
			version, discoveryModuleVersion)
	}
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Skipf("go env GOMODCACHE: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "google.golang.org", "api@"+version)
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("google.golang.org/api %s is not in the module cache: %v", version, err)
	}
	for embedded, original := range map[string]string{
		"discovery/drive-api.json": "drive/v3/drive-api.json",
		"discovery/admin-api.json": "admin/directory/v1/admin-api.json",
	} {
		want, err := os.ReadFile(filepath.Join(dir, original))
		if err != nil {
			t.Fatal(err)
		}
		got, err := discoveryFiles.ReadFile(embedded)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from google.golang.org/api@%s/%s: copy it again (discovery/README.md)", embedded, version, original)
		}
	}
}

// methodOf returns a method of a checked API by its ID.
func methodOf(t testing.TB, prefix, path, verb string) *method {
	t.Helper()
	a := apiOf(prefix)
	m, _ := a.paths.find(strings.TrimPrefix(path, a.root), true, verb)
	if m == nil {
		t.Fatalf("no method %s %s", verb, path)
	}
	return m
}

// The tables read from the documents: the methods the fake answers, by
// path, their parameters' types, bounds and flags.
func TestDiscoveryTables(t *testing.T) {
	for _, tt := range []struct{ verb, path, id string }{
		{"GET", "/drive/v3/files", "drive.files.list"},
		{"GET", "/drive/v3/files/generateIds", "drive.files.generateIds"},
		{"GET", "/drive/v3/files/F", "drive.files.get"},
		{"GET", "/drive/v3/files/F/permissions", "drive.permissions.list"},
		{"POST", "/drive/v3/files/F/approvals/A:approve", "drive.approvals.approve"},
		{"GET", "/drive/v3/drives/D", "drive.drives.get"},
		{"POST", "/drive/v3/changes/watch", "drive.changes.watch"},
		{"POST", "/drive/v3/channels/stop", "drive.channels.stop"},
		{"GET", "/admin/directory/v1/groups/g@example.com/members", "directory.members.list"},
		{"POST", "/admin/directory/v1/customer/C/devices/chromeos:batchChangeStatus", "admin.customer.devices.chromeos.batchChangeStatus"},
		{"GET", "/admin/directory/v1/customer/C/orgunits/a/b/c", "directory.orgunits.get"}, // {+orgUnitPath}
		{"GET", "/admin/directory/v1/customers/C/chrome/printers/P", "admin.customers.chrome.printers.get"},
	} {
		if m := methodOf(t, tt.path, tt.path, tt.verb); m.id != tt.id {
			t.Errorf("%s %s: %s, want %s", tt.verb, tt.path, m.id, tt.id)
		}
	}
	list := methodOf(t, "/drive/v3/", "/drive/v3/files", "GET")
	pageSize, corpus, fields := list.params["pageSize"], list.params["corpus"], list.params["fields"]
	if pageSize.kind != "integer" || pageSize.format != "int32" || pageSize.min != 1 || pageSize.max != 1000 || pageSize.deprecatedKey != "" {
		t.Errorf("files.list's pageSize: %+v", pageSize)
	}
	if corpus.deprecatedKey != "drive.files.list?corpus" || !reflect.DeepEqual(corpus.enum, []string{"domain", "user"}) {
		t.Errorf("files.list's corpus: %+v", corpus)
	}
	if fields == nil || fields.kind != "string" {
		t.Errorf("files.list has not the global parameter fields: %+v", fields)
	}
	changes := methodOf(t, "/drive/v3/", "/drive/v3/changes", "GET")
	if len(changes.required) != 1 || changes.required[0].name != "pageToken" {
		t.Errorf("changes.list requires %v, want pageToken", changes.required)
	}
	members := methodOf(t, "/admin/", "/admin/directory/v1/groups/g/members", "GET")
	if got := members.params["maxResults"]; got.min != 1 || got.max != 200 {
		t.Errorf("members.list's maxResults: %+v (its maximum is in its description only)", got)
	}
}

// Parameters of the types the product's methods do not use: strings of
// int64 and uint64, numbers, unsigned integers.
func TestParameterTypes(t *testing.T) {
	inf := math.Inf(1)
	for _, tt := range []struct {
		p       param
		value   string
		refused bool
	}{
		{param{name: "n", kind: "string", format: "int64", min: -inf, max: inf}, "-9223372036854775808", false},
		{param{name: "n", kind: "string", format: "int64", min: -inf, max: inf}, "9223372036854775808", true},
		{param{name: "n", kind: "string", format: "int64", min: -inf, max: inf}, "12a", true},
		{param{name: "n", kind: "string", format: "uint64", min: -inf, max: inf}, "-1", true},
		{param{name: "n", kind: "integer", format: "uint32", min: 0, max: math.MaxUint32}, "4294967296", true},
		{param{name: "x", kind: "number", format: "double", min: 0.5, max: inf}, "0.75", false},
		{param{name: "x", kind: "number", format: "double", min: 0.5, max: inf}, "0.25", true},
		{param{name: "x", kind: "number", format: "double", min: -inf, max: inf}, "NaN", true},
		{param{name: "s", kind: "string", min: -inf, max: inf}, "anything", false},
	} {
		if aerr := tt.p.check(tt.value); (aerr != nil) != tt.refused {
			t.Errorf("%+v %q: %v, want refused %v", tt.p, tt.value, aerr, tt.refused)
		}
	}
}

// The fields parser and the check of a selection against Drive's FileList
// and the Directory's Users never panic, refuse with a field selection
// error, and accept only what the fake's encoder, which checks selections
// against the client library's types, also accepts (the library's types
// are generated from the same documents).
func FuzzFieldsSelection(f *testing.F) {
	for _, sel := range []string{
		"*", "files", "nextPageToken,files(id,name,parents)", "files/id", "files(permissions(id,permissionDetails(inherited)))",
		"files(owners/emailAddress)", "files/owners/displayName", "files(appProperties/key)", "files(*),kind", "files/*/id",
		"users(name/fullName,customSchemas/a/b)", "a,b/c,d(e,f(g)),*", "files(id", "files)", "files(id),,name", "files/", "(id)",
		"", " ", ",", "files((id))", "files(id)(name)", "files/(id)", "a//b", "files(id) , kind", "\x00", "files(id\xff)",
	} {
		f.Add(sel)
	}
	files := methodOf(f, "/drive/v3/", "/drive/v3/files", "GET")
	users := methodOf(f, "/admin/", "/admin/directory/v1/users", "GET")
	f.Fuzz(func(t *testing.T, sel string) {
		for _, c := range []struct {
			m      *method
			result reflect.Type
		}{{files, reflect.TypeFor[drive.FileList]()}, {users, reflect.TypeFor[admin.Users]()}} {
			_, err := c.m.selection(sel)
			var ferr fieldError
			if err != nil && !errors.As(err, &ferr) {
				t.Fatalf("%s %q: %v (%T), want a field selection error", c.m.id, sel, err, err)
			}
			if err != nil {
				continue
			}
			parsed, perr := parseFields(sel)
			if perr != nil {
				t.Fatalf("%s %q: accepted, but parseFields: %v", c.m.id, sel, perr)
			}
			if verr := parsed.validate(c.result); verr != nil {
				t.Errorf("%s %q: the check accepts it, the encoder's check of %s does not: %v", c.m.id, sel, c.result, verr)
			}
		}
	})
}

// BenchmarkCheckRequest: the check of requests as the product sends them
// (documents read, selections seen before).
func BenchmarkCheckRequest(b *testing.B) {
	fileFields := "nextPageToken,files(id,name,mimeType,parents,trashed,driveId,resourceKey,appProperties," +
		"copyRequiresWriterPermission,hasAugmentedPermissions,permissions(id,type,role,emailAddress,domain,allowFileDiscovery," +
		"deleted,displayName,photoLink,permissionDetails(inherited,role)))"
	for _, bc := range []struct{ name, target string }{
		{"files.list", "/drive/v3/files?" + url.Values{"alt": {"json"}, "prettyPrint": {"false"}, "corpora": {"user"},
			"pageSize": {"1000"}, "supportsAllDrives": {"true"}, "orderBy": {"createdTime"}, "fields": {fileFields},
			"q":         {"mimeType = 'application/vnd.google-apps.folder' and createdTime >= '2026-01-01T00:00:00Z'"},
			"pageToken": {"djF8ZmlsZXN8MTIzNDU2Nzg5MA"}}.Encode()},
		{"permissions.list", "/drive/v3/files/1AbCdEfGhIjKlMnOpQrStUvWxYz/permissions?" + url.Values{"alt": {"json"},
			"prettyPrint": {"false"}, "pageSize": {"100"}, "supportsAllDrives": {"true"},
			"fields": {"nextPageToken,permissions(id,type,role,emailAddress,domain,deleted)"}}.Encode()},
		{"members.list", "/admin/directory/v1/groups/eng%40example.com/members?" + url.Values{"alt": {"json"},
			"prettyPrint": {"false"}, "maxResults": {"200"}, "fields": {"nextPageToken,members(email,type)"}}.Encode()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := New()
			req := httptest.NewRequest(http.MethodGet, bc.target, nil)
			a := apiOf(req.URL.Path)
			if aerr := s.checkRequest(a, req); aerr != nil {
				b.Fatal(aerr.Message)
			}
			b.ReportAllocs()
			for b.Loop() {
				if aerr := s.checkRequest(a, req); aerr != nil {
					b.Fatal(aerr.Message)
				}
			}
		})
	}
}
