package httpapi_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/foldermirror/foldermirror/httpapi"
)

// Each caller has a request budget: over it, 429 with Retry-After; other
// callers are not affected.
func TestCallerBudget(t *testing.T) {
	f := newFixtureWith(t, fixtureOptions{configure: func(o *httpapi.Options) {
		o.CallerRequestsPerSecond, o.CallerBurst = 1, 3
	}})
	bob, carol := f.token("bob@example.com"), f.token("carol@example.com")
	for i := range 3 {
		if resp, _ := f.get("/folder/v1/files/apollo", bob); resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d within the burst: %d", i+1, resp.StatusCode)
		}
	}
	resp, body := f.get("/folder/v1/files/apollo", bob)
	retry, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != http.StatusTooManyRequests || retry < 1 || !strings.Contains(string(body), `"reason":"rateLimitExceeded"`) {
		t.Errorf("over budget: %d, Retry-After %q, %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if resp, _ := f.get("/folder/v1/files/handbook", carol); resp.StatusCode != http.StatusOK {
		t.Errorf("another caller: %d", resp.StatusCode)
	}
}

// Requests too large or too slow to be meant are cut off by the server.
func TestServerLimits(t *testing.T) {
	f := newFixtureWith(t, fixtureOptions{readHeaderTimeout: 300 * time.Millisecond})
	token := f.token("alice@example.com")
	addr := strings.TrimPrefix(f.url, "http://")

	t.Run("10,000 query parameters", func(t *testing.T) {
		q := strings.Repeat("nameFilter=a&", 10_000) // 130 KB: over the header limit
		if resp, _ := f.get("/folder/v1/files/root/children?"+q, token); resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("%d", resp.StatusCode)
		}
		q = strings.Repeat("nameFilter=a&", 1_000) // 13 KB: over the query limit
		resp, body := f.get("/folder/v1/files/root/children?"+q, token)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "query string") {
			t.Errorf("%d %s", resp.StatusCode, body)
		}
	})
	t.Run("1 MB of headers", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, f.url+"/folder/v1/files/root", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("X-Padding", strings.Repeat("x", 1<<20))
		resp, err := f.client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
				t.Errorf("status %d", resp.StatusCode)
			}
		}
	})
	t.Run("slowloris", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		start := time.Now()
		fmt.Fprint(conn, "GET /folder/v1/files/root HTTP/1.1\r\nHost: x\r\n")
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		for {
			if _, err := bufio.NewReader(conn).ReadString('\n'); err != nil {
				break
			}
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("a request whose header never ends held its connection for %v", d)
		}
	})
}

// Paths that play tricks get 400 or 404, never another folder's answer.
func TestPathTricks(t *testing.T) {
	f := newFixture(t)
	bob := f.token("bob@example.com")
	for _, path := range []string{
		"/folder/v1/files/../folders/secret/permissions",
		"/folder/v1/files/..%2Fsecret",
		"/folder/v1/files/apollo%2F..%2Fsecret",
		"/folder/v1/files/%2e%2e/secret",
		"/folder/v1/libraries/lib-eng/folders/children?folderServiceId=plans",
		"/folder/v1/libraries/lib-drive/folders/children?folderServiceId=apollo",
		"/folder/v1/libraries/..%2Flib-eng/folders",
		"/folder/v1/libraries/lib-eng/folders/children?folderServiceId=../secret",
		"/folder/v1/files/apollo/",
		"//folder/v1/files/apollo",
	} {
		req, _ := http.NewRequest(http.MethodGet, f.url+path, nil)
		req.URL.Opaque = "//" + req.URL.Host + strings.SplitN(path, "?", 2)[0] // as sent, not cleaned
		req.Header.Set("Authorization", "Bearer "+bob)
		resp, err := f.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400 or 404", path, resp.StatusCode)
		}
	}
}
