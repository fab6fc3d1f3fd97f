package googleclient

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/time/rate"
)

var testMetrics = NewMetrics(prometheus.NewRegistry())

// scripted answers each request with the next of its replies.
type scripted struct {
	replies []func(w http.ResponseWriter)
	n       atomic.Int32
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i := int(s.n.Add(1)) - 1
	if i >= len(s.replies) {
		i = len(s.replies) - 1
	}
	s.replies[i](w)
}

func status(code int, headers ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.WriteHeader(code)
		if code == 200 {
			io.WriteString(w, `{"ok":true}`)
		}
	}
}

func googleError(code int, reason string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.WriteHeader(code)
		io.WriteString(w, `{"error":{"code":403,"message":"m","errors":[{"domain":"usageLimits","reason":"`+reason+`","message":"m"}]}}`)
	}
}

// truncated announces more body than it sends, then drops the connection.
func truncated(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.Header().Set("Content-Length", "100")
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, `{"ok":`)
}

// cutJSON sends a complete response whose JSON is cut short.
func cutJSON(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, `{"files":[{"id":"a"`)
}

// Page decoders of the retry tests: none, one that checks and reads every
// page, and one that leaves every page to the client library.
var retryDecoders = []struct {
	name    string
	decoder PageDecoder
	decoded string // what the client library reads of a page answered 200
}{
	{"no page decoder", nil, ""},
	{"a page decoder", func(body []byte) ([]byte, error) {
		if !json.Valid(body) {
			return nil, ErrInvalidJSON
		}
		return []byte(`{"decoded":true}`), nil
	}, `{"decoded":true}`},
	{"a page decoder leaving the pages", func([]byte) ([]byte, error) { return nil, errors.New("not a page it reads") }, ""},
}

func TestTransportRetries(t *testing.T) {
	for _, dec := range retryDecoders {
		t.Run(dec.name, func(t *testing.T) { testTransportRetries(t, dec.decoder, dec.decoded) })
	}
}

// testTransportRetries runs the retry tests with a listing's page decoder,
// if decode is not nil; decoded is what it makes of a page answered 200.
func testTransportRetries(t *testing.T, decode PageDecoder, decoded string) {
	for _, tc := range []struct {
		name     string
		replies  []func(http.ResponseWriter)
		status   int
		tries    int32
		wantBody string
	}{
		{"ok", []func(http.ResponseWriter){status(200)}, 200, 1, `{"ok":true}`},
		{"429 then ok", []func(http.ResponseWriter){status(429), status(200)}, 200, 2, `{"ok":true}`},
		{"5xx", []func(http.ResponseWriter){status(500), status(502), status(200)}, 200, 3, ""},
		{"403 rate limit", []func(http.ResponseWriter){googleError(403, "userRateLimitExceeded"), status(200)}, 200, 2, ""},
		{"403 forbidden is final", []func(http.ResponseWriter){googleError(403, "forbidden"), status(200)}, 403, 1, `"reason":"forbidden"`},
		{"404 is final", []func(http.ResponseWriter){status(404), status(200)}, 404, 1, ""},
		{"truncated body", []func(http.ResponseWriter){truncated, status(200)}, 200, 2, `{"ok":true}`},
		{"cut JSON", []func(http.ResponseWriter){cutJSON, status(200)}, 200, 2, ""},
		{"attempts bounded", []func(http.ResponseWriter){status(503)}, 503, 4, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := &scripted{replies: tc.replies}
			ts := httptest.NewServer(srv)
			defer ts.Close()
			metrics := NewMetrics(prometheus.NewRegistry())
			tr := &transport{base: http.DefaultTransport, limiter: rate.NewLimiter(rate.Inf, 1),
				policy: RetryPolicy{Attempts: 4, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Second}, metrics: metrics}
			var calls atomic.Int64
			ctx := WithCallCounter(context.Background(), &calls)
			if decode != nil {
				ctx = WithPageDecoder(ctx, decode)
				if tc.status == http.StatusOK && decoded != "" {
					tc.wantBody = decoded
				}
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL, nil)
			resp, err := (&http.Client{Transport: tr}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || srv.n.Load() != tc.tries || calls.Load() != int64(tc.tries) {
				t.Errorf("status %d after %d tries (%d counted); want %d after %d", resp.StatusCode, srv.n.Load(), calls.Load(), tc.status, tc.tries)
			}
			if tc.wantBody != "" && !strings.Contains(string(body), tc.wantBody) {
				t.Errorf("body %q", body)
			}
			if got := testutil.ToFloat64(metrics.retries.WithLabelValues(apiMethod(req))); got != float64(tc.tries-1) {
				t.Errorf("%v retries counted", got)
			}
		})
	}
}

// handlerTransport hands requests to a handler in this process, without a
// socket: a transport's waits then run on a synctest bubble's clock.
type handlerTransport struct{ h http.Handler }

func (ht handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	w := httptest.NewRecorder()
	ht.h.ServeHTTP(w, req)
	return w.Result(), nil
}

// Retry-After is honoured, in seconds or as an HTTP date, up to MaxDelay:
// on a synctest bubble's clock, the retry comes exactly when it says.
func TestTransportHonoursRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		name       string
		retryAfter func() string
		want       time.Duration
	}{
		{"seconds", func() string { return "1" }, time.Second},
		{"HTTP date", func() string { return time.Now().Add(3 * time.Second).UTC().Format(http.TimeFormat) }, 3 * time.Second},
		{"capped at MaxDelay", func() string { return "3600" }, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &scripted{replies: []func(http.ResponseWriter){status(503, "Retry-After", tc.retryAfter()), status(200)}}
				metrics := NewMetrics(prometheus.NewRegistry())
				tr := &transport{base: handlerTransport{srv}, limiter: rate.NewLimiter(rate.Inf, 1),
					policy: RetryPolicy{Attempts: 4, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Second}, metrics: metrics}
				var calls atomic.Int64
				req, _ := http.NewRequestWithContext(WithCallCounter(context.Background(), &calls), http.MethodGet, "http://drive.invalid/", nil)
				start := time.Now()
				resp, err := (&http.Client{Transport: tr}).Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if took := time.Since(start); resp.StatusCode != http.StatusOK || srv.n.Load() != 2 || calls.Load() != 2 || took != tc.want {
					t.Errorf("status %d after %d tries (%d counted) and %v; want 200 after 2 tries and %v", resp.StatusCode, srv.n.Load(), calls.Load(), took, tc.want)
				}
				if got := testutil.ToFloat64(metrics.retries.WithLabelValues(apiMethod(req))); got != 1 {
					t.Errorf("%v retries counted", got)
				}
			})
		})
	}
}

// A wait for a retry ends with the caller's context, whatever Retry-After
// said: on a synctest bubble's clock, at the context's deadline exactly.
func TestTransportGivesUpWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &scripted{replies: []func(http.ResponseWriter){status(503, "Retry-After", "30")}}
		tr := &transport{base: handlerTransport{srv}, limiter: rate.NewLimiter(rate.Inf, 1), policy: DefaultRetryPolicy, metrics: testMetrics}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://drive.invalid/", nil)
		start := time.Now()
		if _, err := tr.RoundTrip(req); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("error %v, want the context's deadline", err)
		}
		if took := time.Since(start); took != 50*time.Millisecond || srv.n.Load() != 1 {
			t.Errorf("gave up after %v and %d tries, want 50ms and 1 (Retry-After: 30)", took, srv.n.Load())
		}
	})
}

func TestRetryAfter(t *testing.T) {
	for v, want := range map[string]time.Duration{"": -1, "3": 3 * time.Second, "x": -1, "-1": -1,
		time.Now().Add(-time.Minute).UTC().Format(http.TimeFormat): 0} {
		got, ok := retryAfter(v)
		if !ok {
			got = -1
		}
		if got != want {
			t.Errorf("retryAfter(%q) = %v, want %v", v, got, want)
		}
	}
}

// Each method foldermirror calls is counted under its own name.
func TestAPIMethodNames(t *testing.T) {
	for _, tc := range []struct{ method, url, want string }{
		{http.MethodGet, "https://www.googleapis.com/drive/v3/files", "drive.files.list"},
		{http.MethodGet, "https://www.googleapis.com/drive/v3/files/0Bx", "drive.files.get"},
		{http.MethodGet, "https://www.googleapis.com/drive/v3/files/0Bx/permissions", "drive.permissions.list"},
		{http.MethodGet, "https://www.googleapis.com/drive/v3/changes", "drive.changes.list"},
		{http.MethodGet, "https://www.googleapis.com/drive/v3/changes/startPageToken", "drive.changes.getStartPageToken"},
		{http.MethodPost, "https://www.googleapis.com/drive/v3/changes/watch", "drive.changes.watch"},
		{http.MethodPost, "https://www.googleapis.com/drive/v3/channels/stop", "drive.channels.stop"},
		{http.MethodGet, "https://www.googleapis.com/drive/v3/drives", "drive.drives.list"},
		{http.MethodGet, "https://www.googleapis.com/drive/v3/drives/0Ad", "drive.drives.get"},
		{http.MethodGet, "https://admin.googleapis.com/admin/directory/v1/users", "directory.users.list"},
		{http.MethodGet, "https://admin.googleapis.com/admin/directory/v1/groups", "directory.groups.list"},
		{http.MethodGet, "https://admin.googleapis.com/admin/directory/v1/groups/g/members", "directory.members.list"},
		{http.MethodPost, "https://oauth2.googleapis.com/token", "oauth2.token"},
		{http.MethodPost, "https://www.googleapis.com/upload/elsewhere", "other"},
	} {
		if got := apiMethod(httptest.NewRequest(tc.method, tc.url, nil)); got != tc.want {
			t.Errorf("%s %s counted as %q, want %q", tc.method, tc.url, got, tc.want)
		}
	}
}

// A listing's page decoder reads every page, those read ahead included, in
// place of the transport's own check of their JSON: a page only the
// decoder takes (here, JSON with a trailing comma) is not read again.
func TestPageDecoderChecksPagesReadAhead(t *testing.T) {
	var served atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		if r.URL.Query().Get("pageToken") == "" {
			io.WriteString(w, `{"nextPageToken":"p2","files":[],}`)
			return
		}
		io.WriteString(w, `{"files":[],}`)
	}))
	defer ts.Close()
	tr := &transport{base: http.DefaultTransport, limiter: rate.NewLimiter(rate.Inf, 1),
		policy: RetryPolicy{Attempts: 4, BaseDelay: time.Millisecond, MaxDelay: time.Second}, metrics: testMetrics}
	var decoded atomic.Int32
	ctx, stop := WithReadAhead(context.Background())
	defer stop()
	ctx = WithPageDecoder(ctx, func(body []byte) ([]byte, error) {
		decoded.Add(1)
		if strings.Contains(string(body), "p2") {
			return []byte(`{"nextPageToken":"p2"}`), nil
		}
		return []byte(`{}`), nil
	})
	client := &http.Client{Transport: tr}
	for _, url := range []string{ts.URL + "/files", ts.URL + "/files?pageToken=p2"} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		resp.Body.Close()
	}
	if served.Load() != 2 || decoded.Load() != 2 {
		t.Errorf("%d pages served, %d decoded; want 2 and 2 (the second read ahead, not read again)", served.Load(), decoded.Load())
	}
}
