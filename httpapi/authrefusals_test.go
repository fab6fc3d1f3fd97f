package httpapi_test

import (
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/foldermirror/foldermirror/httpapi/auth"
	"github.com/foldermirror/foldermirror/internal/googlefake"
	"github.com/foldermirror/foldermirror/internal/wait"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// wantRefusal checks a refusal on the wire: its status, the error body in
// Google's shape with that reason, WWW-Authenticate on a 401, and a
// Retry-After (in whole seconds) exactly when retryAfter.
func wantRefusal(t *testing.T, what string, resp *http.Response, body []byte, status int, reason string, retryAfter bool) {
	t.Helper()
	var e struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Errors  []struct {
				Domain, Reason, Message string
			} `json:"errors"`
		} `json:"error"`
	}
	if resp.StatusCode != status || json.Unmarshal(body, &e) != nil || e.Error.Code != status || len(e.Error.Errors) != 1 ||
		e.Error.Errors[0].Domain != "global" || e.Error.Errors[0].Reason != reason || e.Error.Message == "" ||
		e.Error.Errors[0].Message != e.Error.Message {
		t.Errorf("%s: %d %s, want %d %s in Google's error shape", what, resp.StatusCode, body, status, reason)
	}
	seconds, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if got := err == nil && seconds > 0; got != retryAfter {
		t.Errorf("%s: Retry-After %q", what, resp.Header.Get("Retry-After"))
	}
	if www := resp.Header.Get("WWW-Authenticate"); (status == http.StatusUnauthorized) != (www != "") {
		t.Errorf("%s: WWW-Authenticate %q", what, www)
	}
}

// The trust refusals on the wire, and counted by reason: a consumer
// Google account at a configured domain (401), a token whose key cannot be
// fetched (503), and access tokens beyond the bound on tokeninfo calls
// (503).
func TestAuthRefusalsOnTheWire(t *testing.T) {
	f := newFixture(t)
	resp, body := f.get("/folder/v1/files/root", f.token("alice@example.com", googlefake.WithHostedDomain("")))
	wantRefusal(t, "consumer account", resp, body, http.StatusUnauthorized, "authError", false)

	f.fake.RotateSigningKey()
	f.fake.SetSigningKeysDown(true)
	resp, body = f.get("/folder/v1/files/root", f.token("alice@example.com"))
	wantRefusal(t, "key set down", resp, body, http.StatusServiceUnavailable, "backendError", true)
	f.fake.SetSigningKeysDown(false)

	release := f.fake.HoldTokeninfo()
	defer release()
	const n, bound = 20, auth.MaxTokeninfoCallsPerClient // n from one address
	type answer struct {
		resp *http.Response
		body []byte
		err  error
	}
	answers := make(chan answer, n)
	for range n {
		go func() {
			req, _ := http.NewRequest(http.MethodGet, f.url+"/folder/v1/files/root", nil)
			req.Header.Set("Authorization", "Bearer ya29."+rand.Text())
			resp, err := f.client.Do(req)
			if err != nil {
				answers <- answer{err: err}
				return
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			answers <- answer{resp, body, err}
		}()
	}
	timeout := time.After(10 * time.Second)
	for i := range n - bound {
		select {
		case a := <-answers:
			if a.err != nil {
				t.Fatal(a.err)
			}
			wantRefusal(t, "access token beyond the bound", a.resp, a.body, http.StatusServiceUnavailable, "backendError", true)
		case <-timeout:
			t.Fatalf("%d of %d refusals after 10 s", i, n-bound)
		}
	}
	release()
	for range bound {
		if a := wait.Receive(t, answers, "an answer once tokeninfo is released"); a.err != nil || a.resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("a made-up token tokeninfo was asked about: %v %v", a.resp, a.err)
		}
	}

	for reason, want := range map[string]float64{"hosted_domain": 1, "keys_unavailable": 1, "checker_busy": n - bound, "invalid": bound} {
		if got := testutil.ToFloat64(f.metrics.AuthFailures().WithLabelValues(reason)); got != want {
			t.Errorf("foldermirror_auth_failures_total{reason=%q} = %v, want %v", reason, got, want)
		}
	}
}
