package syncer

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
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

func TestTransportRetries(t *testing.T) {
	for _, tc := range []struct {
		name     string
		replies  []func(http.ResponseWriter)
		status   int
		tries    int32
		minWait  time.Duration
		wantBody string
	}{
		{"ok", []func(http.ResponseWriter){status(200)}, 200, 1, 0, `{"ok":true}`},
		{"429 then ok", []func(http.ResponseWriter){status(429), status(200)}, 200, 2, 0, `{"ok":true}`},
		{"Retry-After honoured", []func(http.ResponseWriter){status(503, "Retry-After", "1"), status(200)}, 200, 2, time.Second, ""},
		{"5xx", []func(http.ResponseWriter){status(500), status(502), status(200)}, 200, 3, 0, ""},
		{"403 rate limit", []func(http.ResponseWriter){googleError(403, "userRateLimitExceeded"), status(200)}, 200, 2, 0, ""},
		{"403 forbidden is final", []func(http.ResponseWriter){googleError(403, "forbidden"), status(200)}, 403, 1, 0, `"reason":"forbidden"`},
		{"404 is final", []func(http.ResponseWriter){status(404), status(200)}, 404, 1, 0, ""},
		{"truncated body", []func(http.ResponseWriter){truncated, status(200)}, 200, 2, 0, `{"ok":true}`},
		{"cut JSON", []func(http.ResponseWriter){cutJSON, status(200)}, 200, 2, 0, ""},
		{"attempts bounded", []func(http.ResponseWriter){status(503)}, 503, 4, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := &scripted{replies: tc.replies}
			ts := httptest.NewServer(srv)
			defer ts.Close()
			metrics := NewMetrics(prometheus.NewRegistry())
			tr := &transport{base: http.DefaultTransport, limiter: rate.NewLimiter(rate.Inf, 1),
				policy: RetryPolicy{Attempts: 4, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Second}, metrics: metrics}
			var calls atomic.Int64
			req, _ := http.NewRequestWithContext(withCallCounter(context.Background(), &calls), http.MethodGet, ts.URL, nil)
			start := time.Now()
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
			if time.Since(start) < tc.minWait {
				t.Errorf("retried after %v, before Retry-After", time.Since(start))
			}
			if got := testutil.ToFloat64(metrics.retries.WithLabelValues(apiMethod(req))); got != float64(tc.tries-1) {
				t.Errorf("%v retries counted", got)
			}
		})
	}
}

func TestTransportGivesUpWithContext(t *testing.T) {
	ts := httptest.NewServer(&scripted{replies: []func(http.ResponseWriter){status(503, "Retry-After", "30")}})
	defer ts.Close()
	tr := &transport{base: http.DefaultTransport, limiter: rate.NewLimiter(rate.Inf, 1), policy: DefaultRetryPolicy, metrics: testMetrics}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL, nil)
	start := time.Now()
	if _, err := tr.RoundTrip(req); err == nil {
		t.Fatal("no error")
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("waited %v past the context", time.Since(start))
	}
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
