package demo_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/foldermirror/foldermirror/internal/demo"
	"github.com/foldermirror/foldermirror/internal/googlefake"
)

// The controls rename a folder the fake has, and refuse what is not a
// rename of one.
func TestControl(t *testing.T) {
	fake := googlefake.New()
	world := demo.Build(fake, demo.Spec{Seed: 1, FoldersPerLibrary: 10})
	h := world.Control()
	root := world.Libraries[0].RootFolderID
	tests := []struct {
		name, method, url string
		want              int
	}{
		{"unknown folder", http.MethodPost, demo.RenameURL("", "no-such-folder", "x"), http.StatusNotFound},
		{"rename, the fake still whole", http.MethodPost, demo.RenameURL("", root, "Platform engineering"), http.StatusNoContent},
		{"no name", http.MethodPost, demo.RenamePath + "?folder=" + root, http.StatusBadRequest},
		{"no folder", http.MethodPost, demo.RenamePath + "?name=x", http.StatusBadRequest},
		{"GET", http.MethodGet, demo.RenameURL("", root, "x"), http.StatusMethodNotAllowed},
		{"another path", http.MethodPost, "/demo/delete?folder=" + root, http.StatusNotFound},
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.url, nil))
		if rec.Code != tt.want {
			t.Errorf("%s: %s %s: %d, want %d: %s", tt.name, tt.method, tt.url, rec.Code, tt.want, rec.Body)
		}
	}
	if got := demo.RenameURL("http://127.0.0.1:1", "1a-B", "New name"); got != "http://127.0.0.1:1/demo/rename?folder=1a-B&name=New+name" {
		t.Errorf("RenameURL = %s", got)
	}
}
