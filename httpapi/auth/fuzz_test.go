package auth_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	fm "github.com/foldermirror/foldermirror"
)

// FuzzAuthenticate: whatever the Authorization header and securityCode
// parameter hold, authentication answers an identity or one of the
// documented refusals, never panics, and never asks the attacker's server.
func FuzzAuthenticate(f *testing.F) {
	w := newWorld(f)
	for _, seed := range []string{
		"Bearer " + w.google(), "Bearer " + w.ms("1.0"), "securityCode " + adminCode, "Bearer e30.e30.", "Bearer a.b.c",
		"Bearer ya29.abc", "Basic x", "Bearer ", "bearer  " + w.google(), "securityCode", "Bearer " + tamper(w.google(), "iss", "x"),
	} {
		f.Add(seed, "")
	}
	f.Add("", adminCode)
	f.Add("", "")
	allowed := map[string]bool{"": true, fm.ENOCREDENTIALS: true, fm.EUNAUTHENTICATED: true, fm.EFORBIDDEN: true,
		fm.ERATELIMITED: true, fm.EUNAVAILABLE: true}
	f.Fuzz(func(t *testing.T, header, code string) {
		r := httptest.NewRequest(http.MethodGet, "/x?securityCode="+url.QueryEscape(code), nil)
		if header != "" {
			r.Header["Authorization"] = []string{header}
		}
		id, err := w.a.Authenticate(r)
		if !allowed[fm.ErrorCode(err)] {
			t.Fatalf("Authenticate(%q, %q): %v", header, code, err)
		}
		if err == nil && id.Email == "" && !id.Admin {
			t.Fatalf("Authenticate(%q, %q): identity without anyone: %+v", header, code, id)
		}
		if w.hits.Load() != 0 {
			t.Fatal("the attacker's server was asked")
		}
	})
}
