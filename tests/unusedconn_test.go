package tests

import (
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/internal/fmtest"
)

// A connection a client opened and never sent a request on (Go's HTTP
// client leaves such connections behind) neither holds serve's shutdown up
// nor fails it: on SIGTERM the daemon says it stopped, and exits 0.
func TestShutdownWithUnusedConnections(t *testing.T) {
	t.Parallel()
	fake := fmtest.StartGoogle(t)
	tests := []struct {
		name       string
		api, admin bool // an unused connection to listen, to adminListen
	}{
		{name: "adminListen", admin: true},
		{name: "listen", api: true},
		{name: "both", api: true, admin: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := fmtest.Config(t, fake, t.TempDir())
			c.Domains = []config.Domain{{Name: "example.com"}}
			p := startServe(t, fmtest.WriteConfig(t, c))
			if tt.api {
				openUnused(t, p.api)
			}
			if tt.admin {
				openUnused(t, p.admin)
			}
			if err := p.stop(syscall.SIGTERM); err != nil {
				t.Fatalf("exit: %v\nstderr: %s", err, p.stderr)
			}
			lines := strings.Split(strings.TrimSpace(p.stderr.String()), "\n")
			if n := len(lines); n < 2 || !strings.Contains(lines[n-2], `msg="shutting down" signal=SIGTERM`) || !strings.Contains(lines[n-1], "msg=stopped") {
				t.Errorf("it said\n%s\nwant it to end with lines saying it is shutting down, then that it stopped", strings.Join(lines, "\n"))
			}
		})
	}
}

// openUnused opens a connection to the listener of base (an http:// URL)
// that sends nothing, kept open until the test ends, and returns once the
// daemon has accepted it: a request on a later connection to the same
// listener is answered, and a listener accepts in order.
func openUnused(t *testing.T, base string) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	// Any answer will do (the API's is 404); no connection is kept.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get(base + "/healthz")
	if err != nil {
		t.Fatalf("a request after the unused connection: %v", err)
	}
	resp.Body.Close()
}
