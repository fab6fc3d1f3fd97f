package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// healthcheck says each readiness once, in words: "ready", not "ready
// (ready)"; a degraded daemon's problem and an unready index's too.
func TestHealthcheckSays(t *testing.T) {
	tests := []struct {
		name   string
		code   int
		answer string
		status int
		says   string
	}{
		{"ready", http.StatusOK, `{"status":"ready"}`, 0, "ready\n"},
		{"degraded", http.StatusOK, `{"status":"degraded","problem":"the index database does not answer: connection refused"}`, 0,
			"degraded: the index database does not answer: connection refused (serving what it read)\n"},
		{"index down", http.StatusServiceUnavailable, `{"status":"waiting for the index","problem":"connection refused"}`, 1,
			"/readyz): waiting for the index: connection refused\n"},
		{"libraries", http.StatusServiceUnavailable, `{"status":"waiting for a first sync, or for its catalog","libraries":["eng","ops"]}`, 1,
			"/readyz): waiting for a first sync, or for its catalog: eng, ops\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			daemon := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tt.code)
				w.Write([]byte(tt.answer))
			}))
			defer daemon.Close()
			var out, errOut bytes.Buffer
			status := run(context.Background(), []string{"healthcheck", "--url", daemon.URL}, &out, &errOut)
			said := out.String() + errOut.String()
			if status != tt.status || !strings.HasSuffix(said, tt.says) {
				t.Errorf("status %d, said %q; want %d and %q", status, said, tt.status, tt.says)
			}
		})
	}
}

// A daemon that does not answer within --timeout is said so, with the
// timeout.
func TestHealthcheckTimeout(t *testing.T) {
	daemon := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	defer daemon.Close()
	var out, errOut bytes.Buffer
	status := run(context.Background(), []string{"healthcheck", "--url", daemon.URL, "--timeout", "100ms"}, &out, &errOut)
	want := "no foldermirror daemon answers at " + daemon.URL + "/readyz: no answer in time (--timeout 100ms)\n"
	if said := out.String() + errOut.String(); status != 1 || !strings.HasSuffix(said, want) {
		t.Errorf("status %d, said %q; want 1 and %q", status, said, want)
	}
}

// --url is the admin listener's URL, with /readyz or without; a path is a
// prefix it is reached under (a proxy's).
func TestHealthcheckURLPaths(t *testing.T) {
	asked := make(chan string, 1)
	daemon := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked <- r.URL.Path
		w.Write([]byte(`{"status":"ready"}`))
	}))
	defer daemon.Close()
	for url, want := range map[string]string{
		daemon.URL: "/readyz", daemon.URL + "/": "/readyz", daemon.URL + "/readyz": "/readyz", daemon.URL + "/admin/": "/admin/readyz",
	} {
		var out, errOut bytes.Buffer
		if status := run(context.Background(), []string{"healthcheck", "--url", url}, &out, &errOut); status != 0 {
			t.Fatalf("--url %s: status %d, said %q", url, status, out.String()+errOut.String())
		}
		if got := <-asked; got != want {
			t.Errorf("--url %s asked %s, want %s", url, got, want)
		}
	}
}
