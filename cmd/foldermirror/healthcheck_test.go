package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
