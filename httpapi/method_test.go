package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/foldermirror/foldermirror/httpapi"
)

// Another method than GET on an API path answers 405 with Allow, in the
// API's error shape, before any authentication; an unknown path stays 404.
func TestMethodNotAllowed(t *testing.T) {
	h := httpapi.New(nil, nil, httpapi.Options{Domains: []httpapi.Domain{{Name: "example.com", Flags: map[string]string{"theme": "dark"}}}}).Handler()
	tests := []struct {
		method, path string
		status       int
		allow        string
	}{
		{http.MethodPost, "/folder/v1/libraries/lib-eng/folders", http.StatusMethodNotAllowed, "GET"},
		{http.MethodPut, "/folder/v1/files/abc", http.StatusMethodNotAllowed, "GET"},
		{http.MethodDelete, "/folder/v1/folders/abc/permissions", http.StatusMethodNotAllowed, "GET"},
		{http.MethodPost, "/domain/v1beta1/configurationFlags", http.StatusMethodNotAllowed, "GET"},
		{http.MethodPatch, "/folder/v1/files/abc/children", http.StatusMethodNotAllowed, "GET"},
		{http.MethodPost, "/no/such/path", http.StatusNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
			if rec.Code != tt.status || rec.Header().Get("Allow") != tt.allow {
				t.Fatalf("status %d, Allow %q; want %d, %q: %s", rec.Code, rec.Header().Get("Allow"), tt.status, tt.allow, rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
			var body struct {
				Error struct {
					Errors  []struct{ Domain, Reason, Message string }
					Code    int
					Message string
				}
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatalf("not the API's JSON error shape: %v: %s", err, rec.Body)
			}
			e := body.Error
			if e.Code != tt.status || len(e.Errors) != 1 || e.Errors[0].Domain != "global" || e.Errors[0].Message != e.Message || e.Message == "" {
				t.Errorf("error body %s", rec.Body)
			}
			if tt.status == http.StatusMethodNotAllowed && e.Errors[0].Reason != "httpMethodNotAllowed" {
				t.Errorf("reason %q, want httpMethodNotAllowed", e.Errors[0].Reason)
			}
		})
	}
}
