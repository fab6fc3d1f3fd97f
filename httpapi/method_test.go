package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/httpapi"
	"github.com/foldermirror/foldermirror/httpapi/auth"
	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
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

// pushStub plays the push receiver: it records the methods it is asked
// with and answers 405 with Allow: POST to any but POST, as push.Service
// does.
type pushStub struct{ methods []string }

func (p *pushStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.methods = append(p.methods, r.Method)
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// everyoneAuth authenticates every request as alice@example.com, and
// counts the requests it was asked about.
type everyoneAuth struct{ asked int }

func (a *everyoneAuth) Authenticate(*http.Request) (*auth.Identity, error) {
	a.asked++
	return &auth.Identity{Email: "alice@example.com", Domain: "example.com", OrgDomain: "example.com", Method: auth.MethodGoogleIDToken}, nil
}

// The push path answers every method through the push receiver, never
// asking who the caller is (Drive sends no credentials) and spending no
// caller's budget; the API's paths stay GET only, authenticated and
// budgeted, and paths beside the push path stay 404.
func TestPushPath(t *testing.T) {
	stub, authn, reg := &pushStub{}, &everyoneAuth{}, prometheus.NewRegistry()
	h := httpapi.New(nil, authn, httpapi.Options{
		Domains:                 []httpapi.Domain{{Name: "example.com"}},
		CallerRequestsPerSecond: 1e-9, CallerBurst: 1,
		Metrics: httpapi.NewMetrics(reg),
		Push:    stub, PushPath: "/drive/push",
	}).Handler()
	const flags = "/domain/v1beta1/configurationFlags"
	tests := []struct {
		method, path string
		status       int
		allow        string
		reached      bool // the push receiver
		asked        bool // the authenticator
	}{
		{http.MethodPost, "/drive/push", http.StatusOK, "", true, false},
		{http.MethodGet, flags, http.StatusOK, "", false, true},
		{http.MethodGet, flags, http.StatusTooManyRequests, "", false, true}, // the caller's budget is spent
		{http.MethodPost, "/drive/push", http.StatusOK, "", true, false},     // still answered: no budget here
		{http.MethodGet, "/drive/push", http.StatusMethodNotAllowed, "POST", true, false},
		{http.MethodPut, "/drive/push", http.StatusMethodNotAllowed, "POST", true, false},
		{http.MethodHead, "/drive/push", http.StatusMethodNotAllowed, "POST", true, false},
		{http.MethodPost, "/drive/push/", http.StatusNotFound, "", false, false},
		{http.MethodPost, "/drive", http.StatusNotFound, "", false, false},
		{http.MethodPost, "/folder/v1/files/abc", http.StatusMethodNotAllowed, "GET", false, false},
	}
	for _, tt := range tests {
		reachedBefore, askedBefore := len(stub.methods), authn.asked
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
		reached, asked := len(stub.methods) > reachedBefore, authn.asked > askedBefore
		if rec.Code != tt.status || rec.Header().Get("Allow") != tt.allow || reached != tt.reached || asked != tt.asked {
			t.Errorf("%s %s: status %d, Allow %q, reached the receiver %v, authenticated %v; want %d, %q, %v, %v: %s",
				tt.method, tt.path, rec.Code, rec.Header().Get("Allow"), reached, asked, tt.status, tt.allow, tt.reached, tt.asked, rec.Body)
		}
	}
	// The API's metrics count the receiver's answers under its path.
	want := `
		# HELP foldermirror_api_requests_total API requests answered, by route and HTTP status.
		# TYPE foldermirror_api_requests_total counter
		foldermirror_api_requests_total{code="200",route="/domain/v1beta1/configurationFlags"} 1
		foldermirror_api_requests_total{code="429",route="/domain/v1beta1/configurationFlags"} 1
		foldermirror_api_requests_total{code="200",route="/drive/push"} 2
		foldermirror_api_requests_total{code="405",route="/drive/push"} 3
		foldermirror_api_requests_total{code="405",route="unmatched"} 1
		foldermirror_api_requests_total{code="404",route="unmatched"} 2
	`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "foldermirror_api_requests_total"); err != nil {
		t.Error(err)
	}
}

// config.Parse refuses a push.address whose path is one of the API's, or
// under one: the receiver never shadows, nor collides with, an API route.
func TestPushAddressAmongTheAPIsPathsRefused(t *testing.T) {
	engine := httpapi.New(nil, nil, httpapi.Options{}).Handler().(*gin.Engine)
	routes := engine.Routes()
	if len(routes) == 0 {
		t.Fatal("no routes")
	}
	for _, r := range routes {
		path := regexp.MustCompile(`[:*][^/]*`).ReplaceAllString(r.Path, "x")
		for _, p := range []string{path, path + "/push"} {
			src := "domains: [{name: example.com}]\npush: {address: 'https://fm.example.com" + p + "'}\n"
			_, err := config.Parse([]byte(src), "config.yaml", nil)
			if err == nil || !strings.Contains(err.Error(), "push.address: its path "+p+" is among the API's own") {
				t.Errorf("push.address on %s (route %s): %v; want it refused", p, r.Path, err)
			}
		}
	}
}

// A push path the router would take for a pattern is a mistake of the
// caller's (config.Parse refuses it): New panics rather than route
// notifications elsewhere.
func TestPushPathWithAWildcardPanics(t *testing.T) {
	for _, path := range []string{"/drive/:push", "/drive/*push", "drive/push"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New with the push path %q did not panic", path)
				}
			}()
			httpapi.New(nil, nil, httpapi.Options{Push: &pushStub{}, PushPath: path})
		}()
	}
}
