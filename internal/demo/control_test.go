package demo_test

import (
	"cmp"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/foldermirror/foldermirror/internal/demo"
	"github.com/foldermirror/foldermirror/internal/googlefake"
)

// The controls rename a folder the fake has, and refuse what is not a
// rename of one, and what a page of another site could send: a POST
// without demo.RequestHeader (a form's), or one whose Host is not loopback
// (DNS rebinding).
func TestControl(t *testing.T) {
	fake := googlefake.New()
	world := demo.Build(fake, demo.Spec{Seed: 1, FoldersPerLibrary: 10})
	h := world.Control()
	root := world.Libraries[0].RootFolderID
	const form = "application/x-www-form-urlencoded"
	tests := []struct {
		name, method, url string
		host, contentType string // "" for 127.0.0.1:8082, and none
		header            bool   // sends demo.RequestHeader
		want              int
	}{
		{"unknown folder", http.MethodPost, demo.RenameURL("", "no-such-folder", "x"), "", "", true, http.StatusNotFound},
		{"rename, the fake still whole", http.MethodPost, demo.RenameURL("", root, "Platform engineering"), "", "", true, http.StatusNoContent},
		{"no name", http.MethodPost, demo.RenamePath + "?folder=" + root, "", "", true, http.StatusBadRequest},
		{"no folder", http.MethodPost, demo.RenamePath + "?name=x", "", "", true, http.StatusBadRequest},
		{"GET", http.MethodGet, demo.RenameURL("", root, "x"), "", "", true, http.StatusMethodNotAllowed},
		{"another path", http.MethodPost, "/demo/delete?folder=" + root, "", "", true, http.StatusNotFound},
		{"a form of another site", http.MethodPost, demo.RenameURL("", root, "Pwned"), "", form, false, http.StatusForbidden},
		{"a POST without the header", http.MethodPost, demo.RenameURL("", root, "Pwned"), "", "", false, http.StatusForbidden},
		{"a name rebound to loopback", http.MethodPost, demo.RenameURL("", root, "Pwned"), "evil.example:8082", "", true, http.StatusMisdirectedRequest},
		{"localhost", http.MethodPost, demo.RenameURL("", root, "Platform"), "localhost:8082", form, true, http.StatusNoContent},
		{"IPv6 loopback", http.MethodPost, demo.RenameURL("", root, "Platform"), "[::1]:8082", "", true, http.StatusNoContent},
		{"a shared drive", http.MethodPost, demo.SharedDriveURL("", "Research"), "", "", true, http.StatusCreated},
		{"a shared drive without a name", http.MethodPost, demo.SharedDrivePath, "", "", true, http.StatusBadRequest},
		{"a shared drive by a form of another site", http.MethodPost, demo.SharedDriveURL("", "Pwned"), "", form, false, http.StatusForbidden},
	}
	for _, tt := range tests {
		req := httptest.NewRequest(tt.method, tt.url, nil)
		req.Host = cmp.Or(tt.host, "127.0.0.1:8082")
		if tt.contentType != "" {
			req.Header.Set("Content-Type", tt.contentType)
		}
		if tt.header {
			req.Header.Set(demo.RequestHeader, "test")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tt.want {
			t.Errorf("%s: %s %s: %d, want %d: %s", tt.name, tt.method, tt.url, rec.Code, tt.want, rec.Body)
		}
	}
	if got := demo.RenameURL("http://127.0.0.1:1", "1a-B", "New name"); got != "http://127.0.0.1:1/demo/rename?folder=1a-B&name=New+name" {
		t.Errorf("RenameURL = %s", got)
	}
}
