package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/internal/fmtest"
)

// config check and serve refuse an admin listener off loopback without
// adminTokenFile, and a token file that holds no token, naming the key.
func TestAdminTokenFileRequired(t *testing.T) {
	fake := fmtest.StartGoogle(t)
	tests := []struct {
		name        string
		adminListen string
		tokenFile   string // relative to the config file; "" for none
		token       string // written to tokenFile unless "-"
		says        string
	}{
		{"every address", ":0", "", "", `adminTokenFile: is not set, and adminListen ":0" is not a loopback address`},
		{"every IPv4 address", "0.0.0.0:0", "", "", `adminTokenFile: is not set, and adminListen "0.0.0.0:0" is not a loopback address`},
		{"a missing file", "127.0.0.1:0", "admin-token", "-", "adminTokenFile: cannot read the admin token file "},
		{"an empty file", "0.0.0.0:0", "admin-token", "  \n", "adminTokenFile: the admin token file "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fmtest.Config(t, fake, t.TempDir())
			c.Domains = []config.Domain{{Name: "example.com"}}
			c.AdminListen = tt.adminListen
			if tt.tokenFile != "" {
				c.AdminTokenFile = filepath.Join(filepath.Dir(c.Path), tt.tokenFile)
				if tt.token != "-" {
					writeToken(t, c.AdminTokenFile, tt.token)
				}
			}
			path := fmtest.WriteConfig(t, c)
			for _, args := range [][]string{{"config", "check", "--config", path}, {"serve", "--config", path}} {
				var out, errOut bytes.Buffer
				status := run(context.Background(), args, &out, &errOut)
				if said := out.String() + errOut.String(); status != 1 || !strings.Contains(said, tt.says) {
					t.Errorf("%s: status %d, said %q; want 1 and %q", args[0], status, said, tt.says)
				}
			}
		})
	}
}

// With adminTokenFile, the daemon's admin listener wants the token, and
// foldermirror sync and healthcheck, reading the same configuration, send
// it; a sync whose configuration holds another token is refused.
func TestAdminTokenCommands(t *testing.T) {
	fake := fmtest.StartGoogle(t) // closed after the daemon
	m := buildE2EWorld(fake)
	c := e2eConfig(t, fake, m, fmtest.Bolt)
	dir := filepath.Dir(c.Path)
	adminAddr := freePort(t)
	c.AdminListen = adminAddr
	c.AdminTokenFile = filepath.Join(dir, "admin-token")
	writeToken(t, c.AdminTokenFile, "s3cret-token\n")
	path := fmtest.WriteConfig(t, c)
	startServe(t, path)
	waitReady(t, "http://"+adminAddr+"/readyz")

	if resp, err := http.Get("http://" + adminAddr + "/status"); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET /status without the token: %v %v; want 401", resp, err)
	}
	var out, errOut bytes.Buffer
	if status := run(context.Background(), []string{"sync", "--config", path, "--library", "eng"}, &out, &errOut); status != 0 ||
		!strings.Contains(errOut.String(), "asking it") || !strings.Contains(out.String(), "eng: incremental sync: ") {
		t.Errorf("sync through the daemon: status %d\n%s\n%s", status, out.String(), errOut.String())
	}
	out.Reset()
	errOut.Reset()
	if status := run(context.Background(), []string{"healthcheck", "--config", path}, &out, &errOut); status != 0 || !strings.Contains(out.String(), "ready") {
		t.Errorf("healthcheck: status %d\n%s\n%s", status, out.String(), errOut.String())
	}

	// Another token, as a stale copy of the file would hold.
	other := filepath.Join(dir, "other.yaml")
	c.Path, c.AdminTokenFile = other, filepath.Join(dir, "other-token")
	writeToken(t, c.AdminTokenFile, "not-the-token")
	fmtest.WriteConfig(t, c)
	errOut.Reset()
	status := run(context.Background(), []string{"sync", "--config", other, "--library", "eng"}, &out, &errOut)
	if said := errOut.String(); status != 1 || !strings.Contains(said, "401 Unauthorized") || !strings.Contains(said, "adminTokenFile") ||
		strings.Contains(said, "s3cret-token") || strings.Contains(said, "not-the-token") {
		t.Errorf("sync with another token: status %d, said %q; want 1 and the daemon's 401, no token", status, said)
	}
}

func writeToken(t *testing.T, path, token string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
}
