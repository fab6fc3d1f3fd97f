package httpapi_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3filter"
)

// doctoring changes a real answer's headers or decoded body.
type doctoring struct {
	name   string
	header func(h http.Header)
	body   func(body any)
	status int
}

// at returns the object at a dot-separated path of a decoded JSON value
// (numbers index arrays).
func at(t *testing.T, v any, path string) map[string]any {
	t.Helper()
	if path != "" {
		for _, step := range strings.Split(path, ".") {
			if i, err := strconv.Atoi(step); err == nil {
				v = v.([]any)[i]
			} else {
				v = v.(map[string]any)[step]
			}
		}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%q is no object", path)
	}
	return obj
}

// The validation can fail: a real answer of each shape validates, and the
// same answer doctored (a field the document lacks, at any depth; a field
// of another type; a field missing; a value outside its kind or enum; an
// error's reason or code that is not its status's; a required header
// missing or malformed; a status the operation does not answer) does not.
func TestOpenAPIRefusesDoctoredAnswers(t *testing.T) {
	c := openAPI(t)
	f := newFixture(t)
	set := func(path, key string, value any) func(any) {
		return func(body any) { at(t, body, path)[key] = value }
	}
	drop := func(path, key string) func(any) {
		return func(body any) { delete(at(t, body, path), key) }
	}
	for _, tc := range []struct {
		what, user, path string
		status           int
		doctorings       []doctoring
	}{
		{"flags", "carol", op1, 200, []doctoring{
			{name: "an extra field", body: set("", "extra", true)},
			{name: "a flag not a string", body: set("configurationsFlags", "beta", true)},
			{name: "another kind", body: set("", "kind", "service#flags")},
			{name: "an undocumented status", status: http.StatusTeapot},
		}},
		{"nested children", "alice", "/folder/v1/libraries/lib-eng/folders/children", 200, []doctoring{
			{name: "an extra field in a nested subfolder", body: set("items.0.subfolders.0", "extra", "x")},
			{name: "a nested subfolder's field of another type", body: set("items.0.subfolders.0", "editable", "yes")},
			{name: "a field missing", body: drop("items.1", "resourceKey")},
			{name: "an unknown permitted operation", body: set("items.0", "permittedOperations", []any{"VIEW_ACL", "FLY"})},
			{name: "the list's kind", body: set("", "kind", "service#folder")},
			{name: "no Deprecation header", header: func(h http.Header) { h.Del("Deprecation") }},
			{name: "a Link to no successor", header: func(h http.Header) { h.Set("Link", "</folder/v1/libraries/lib-eng>; rel=\"next\"") }},
			{name: "no ETag", header: func(h http.Header) { h.Del("ETag") }},
		}},
		{"one folder", "carol", "/folder/v1/files/zeus", 200, []doctoring{
			{name: "an extra field", body: set("", "folderOwner", "alice")},
			{name: "the folder's kind", body: set("", "kind", "service#folderList")},
			{name: "a boolean as a string", body: set("", "restrictedDownload", "true")},
			{name: "no subfolders", body: drop("", "subfolders")},
		}},
		{"permissions", "alice", "/folder/v1/folders/partner/permissions", 200, []doctoring{
			{name: "an extra field in a permission", body: set("storagePermissions.0", "domain", "example.com")},
			{name: "an unknown role", body: set("storagePermissions.1", "role", "ADMIN")},
			{name: "a lower-case type", body: set("storagePermissions.0", "type", "user")},
			{name: "an ID of another type", body: set("storagePermissions.0", "permissionId", 42)},
			{name: "no restrictedDownload", body: drop("", "restrictedDownload")},
		}},
		{"not found", "alice", "/folder/v1/files/nope", 404, []doctoring{
			{name: "another status's reason", body: func(body any) { at(t, body, "error.errors.0")["reason"] = "forbidden" }},
			{name: "another status's code", body: set("error", "code", 403)},
			{name: "an extra field in the error", body: set("error", "status", "NOT_FOUND")},
			{name: "an extra field in its item", body: set("error.errors.0", "location", "folderId")},
			{name: "another domain", body: set("error.errors.0", "domain", "usageLimits")},
		}},
		{"no credentials", "", "/folder/v1/files/zeus", 401, []doctoring{
			{name: "no WWW-Authenticate", header: func(h http.Header) { h.Del("WWW-Authenticate") }},
			{name: "another realm", header: func(h http.Header) { h.Set("WWW-Authenticate", `Bearer realm="drive"`) }},
		}},
		{"never synced", "alice", "/folder/v1/libraries/lib-never/folders", 503, []doctoring{
			{name: "no Retry-After", header: func(h http.Header) { h.Del("Retry-After") }},
			{name: "a Retry-After date", header: func(h http.Header) { h.Set("Retry-After", "Wed, 21 Oct 2026 07:28:00 GMT") }},
		}},
	} {
		t.Run(tc.what, func(t *testing.T) {
			token := ""
			if tc.user != "" {
				token = f.token(email(tc.user))
			}
			resp, body := f.get(tc.path, token)
			genuine := answer{req: resp.Request, status: resp.StatusCode, header: resp.Header, body: body}
			if genuine.status != tc.status {
				t.Fatalf("%d %s, want %d", genuine.status, body, tc.status)
			}
			if _, err := c.check(genuine, true); err != nil {
				t.Fatalf("the real answer is not valid: %v", err)
			}
			for _, d := range tc.doctorings {
				_, err := c.check(doctor(t, genuine, d), false)
				var refused *openapi3filter.ResponseError
				if !errors.As(err, &refused) {
					t.Errorf("doctored with %s, the answer is not refused by the validator of answers: %v", d.name, err)
				}
			}
		})
	}
}

// doctor returns a copy of a changes as d says.
func doctor(t *testing.T, a answer, d doctoring) answer {
	t.Helper()
	out := a
	out.header = a.header.Clone()
	if d.header != nil {
		d.header(out.header)
	}
	if d.status != 0 {
		out.status = d.status
	}
	if d.body != nil {
		var body any
		if err := json.Unmarshal(a.body, &body); err != nil {
			t.Fatal(err)
		}
		d.body(body)
		var err error
		if out.body, err = json.Marshal(body); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
