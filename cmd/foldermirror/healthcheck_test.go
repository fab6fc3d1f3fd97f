package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/internal/fmtest"
)

// withAdminListen gives the configuration at path a free admin address
// and returns it.
func withAdminListen(t *testing.T, path string) string {
	t.Helper()
	addr := freePort(t)
	fmtest.EditConfig(t, path, func(c *config.Config) { c.AdminListen = addr })
	return addr
}

// healthcheck against live daemons: 0 when ready; 1 with the reason when
// not ready, down, or not foldermirror.
func TestHealthcheck(t *testing.T) {
	fake := fmtest.StartGoogle(t) // closed after the daemons
	m := buildE2EWorld(fake)

	ready := writeE2EConfig(t, fake, m, fmtest.Bolt)
	readyAdmin := withAdminListen(t, ready)
	startServe(t, ready)

	c := fmtest.Config(t, fake, t.TempDir())
	c.Domains = []config.Domain{{Name: "example.com"}}
	c.Libraries = []config.Library{{ID: "gone", Domain: "example.com", StorageAccount: e2eStorage, RootFolderID: "missing-folder"}}
	notReady := fmtest.WriteConfig(t, c)
	notReadyAdmin := withAdminListen(t, notReady)
	startServe(t, notReady)

	waitReady(t, "http://"+readyAdmin+"/readyz")
	stranger := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("hello")) }))
	defer stranger.Close()
	c = fmtest.Config(t, fake, t.TempDir())
	c.Domains = []config.Domain{{Name: "example.com"}}
	portZero := fmtest.WriteConfig(t, c)

	tests := []struct {
		name   string
		args   []string
		status int
		says   string
	}{
		{"ready, from the config", []string{"--config", ready}, 0, "ready"},
		{"ready, by URL", []string{"--url", "http://" + readyAdmin}, 0, "ready"},
		{"not ready", []string{"--config", notReady}, 1,
			"foldermirror: not ready (http://" + notReadyAdmin + "/readyz): waiting for a first sync, or for its catalog: gone"},
		{"down", []string{"--url", "http://" + freePort(t)}, 1, "foldermirror: no foldermirror daemon answers at http://"},
		{"not foldermirror", []string{"--url", stranger.URL}, 1, "answered 200 OK, not a foldermirror readiness (is it the admin listener?)"},
		{"admin port 0", []string{"--config", portZero}, 1, `adminListen in ` + portZero + `: "127.0.0.1:0" is not an address a client can reach`},
		{"not a URL", []string{"--url", "127.0.0.1:8081"}, 2, `--url "127.0.0.1:8081": expected the admin listener's http URL`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			status := run(context.Background(), append([]string{"healthcheck"}, tt.args...), &out, &errOut)
			said := out.String() + errOut.String()
			if status != tt.status || !strings.Contains(said, tt.says) {
				t.Errorf("status %d, said %q; want %d and %q", status, said, tt.status, tt.says)
			}
		})
	}
}

func waitReady(t *testing.T, url string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
	}
	t.Fatalf("%s never became ready", url)
}

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
