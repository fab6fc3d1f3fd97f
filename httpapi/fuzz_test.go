package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/foldermirror/foldermirror/httpapi"
	"github.com/foldermirror/foldermirror/internal/fmtest"
)

// FuzzQueryParameters: any path under the API and any query string get a
// JSON answer with a documented status, never a 5xx (the fixture has no
// never-synced library in these paths), and never a folder the caller may
// not see. The caller's budget is out of reach: the fuzzer sends thousands
// of requests a second, more than the default budget (TestCallerBudget
// tests it).
func FuzzQueryParameters(f *testing.F) {
	fx := newFixtureWith(f, fixtureOptions{configure: func(o *httpapi.Options) {
		o.CallerRequestsPerSecond, o.CallerBurst = 1e9, 1e9
	}})
	token := fx.token("bob@example.com")
	visible := map[string]bool{"handbook": true, "policies": true, "apollo": true, "designs": true, "locked": true,
		"drive1": true, "plans": true, "zeus": true, "zeus-sub": true}
	for _, seed := range [][2]string{
		{"libraries/lib-eng/folders/children", "onlyDirectChildren=true&nameFilter=a"},
		{"libraries/lib-eng/folders/children", "folderServiceId=apollo&onlyDirectChildren=TRUE"},
		{"libraries/lib-eng/folders", "domain=other.org"},
		{"folders/apollo/permissions", ""},
		{"files/zeus/children", "onlyDirectChildren=0&nameFilter=%00"},
		{"files/..%2Fsecret", ""},
		{"libraries/lib-drive/folders/children", "folderServiceId=secret"},
	} {
		f.Add(seed[0], seed[1])
	}
	allowed := map[int]bool{200: true, 400: true, 403: true, 404: true}
	f.Fuzz(func(t *testing.T, path, query string) {
		if strings.ContainsAny(path, "?#") {
			return
		}
		req, err := http.NewRequest(http.MethodGet, "/folder/v1/"+path+"?"+query, nil)
		if err != nil {
			return // not a URL a client could send
		}
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		fx.handler.ServeHTTP(rec, req)
		if !allowed[rec.Code] {
			t.Fatalf("GET %s: status %d: %s", req.URL, rec.Code, rec.Body)
		}
		var v any
		if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
			t.Fatalf("GET %s: not JSON: %s", req.URL, rec.Body)
		}
		for _, id := range fmtest.FileIDs(v) {
			if !visible[id] {
				t.Fatalf("GET %s names %s, which bob may not see", req.URL, id)
			}
		}
	})
}
