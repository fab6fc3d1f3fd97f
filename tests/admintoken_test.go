package tests

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/foldermirror/foldermirror/internal/fmtest"
)

// With adminTokenFile, the daemon's admin listener wants the token, and
// foldermirror sync and healthcheck, reading the same configuration, send
// it once the daemon proved it holds it; a sync whose configuration holds
// another token does not send it.
func TestAdminTokenCommands(t *testing.T) {
	t.Parallel()
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
	if r := runBinary(t, "sync", "--config", path, "--library", "eng"); r.code != 0 ||
		!strings.Contains(r.stderr, "asking it") || !strings.Contains(r.stdout, "eng: incremental sync: ") {
		t.Errorf("sync through the daemon: status %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := runBinary(t, "healthcheck", "--config", path); r.code != 0 || !strings.Contains(r.stdout, "ready") {
		t.Errorf("healthcheck: status %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	// Another token, as a stale copy of the file would hold.
	other := filepath.Join(dir, "other.yaml")
	c.Path, c.AdminTokenFile = other, filepath.Join(dir, "other-token")
	writeToken(t, c.AdminTokenFile, "not-the-token")
	fmtest.WriteConfig(t, c)
	r := runBinary(t, "sync", "--config", other, "--library", "eng")
	if said := r.stderr; r.code != 1 || !strings.Contains(said, "does not prove that it holds adminTokenFile's token: not sending it") ||
		strings.Contains(said, "s3cret-token") || strings.Contains(said, "not-the-token") {
		t.Errorf("sync with another token: status %d, said %q; want 1, the token not sent, and no token shown", r.code, said)
	}
}

func writeToken(t *testing.T, path, token string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
}
