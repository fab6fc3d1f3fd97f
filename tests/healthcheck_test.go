package tests

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
	t.Parallel()
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
			r := runBinary(t, append([]string{"healthcheck"}, tt.args...)...)
			if r.code != tt.status || !strings.Contains(r.said(), tt.says) {
				t.Errorf("status %d, said %q; want %d and %q", r.code, r.said(), tt.status, tt.says)
			}
		})
	}
}
