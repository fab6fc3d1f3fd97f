package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// binDir holds the foldermirror binary the tests that run it build, once
// per test process; TestMain makes it and removes it.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "foldermirror-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var built struct {
	once sync.Once
	bin  string
	err  error
}

// buildBinary builds foldermirror once per test process and returns its
// path; a failed build fails every test that asks for it.
func buildBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		bin := filepath.Join(binDir, "foldermirror")
		if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		built.bin = bin
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

func TestConfigCheck(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "key.json"), []byte(`{"type":"authorized_user","client_id":"c","client_secret":"s","refresh_token":"r"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	const good = `
storage: {credentialsFile: key.json}
domains: [{name: example.com}]
libraries: [{id: eng, domain: example.com, storageAccount: s@example.com, rootFolderId: "1abc"}]
`
	for _, tc := range []struct {
		name, yaml string
		status     int
		says       []string
	}{
		{"valid", good, 0, []string{"valid (1 domains, 1 libraries)"}},
		{"both roots", strings.Replace(good, `rootFolderId: "1abc"`, `rootFolderId: "1abc", sharedDriveId: "0d"`, 1), 1, []string{"libraries[0]", "rootFolderId", "sharedDriveId"}},
		{"neither root", strings.Replace(good, `, rootFolderId: "1abc"`, ``, 1), 1, []string{"libraries[0].rootFolderId"}},
		{"unknown domain", strings.Replace(good, "domain: example.com", "domain: example.org", 1), 1, []string{"libraries[0].domain", "example.org"}},
		{"duplicate library", strings.Replace(good, "libraries: [", `libraries: [{id: eng, domain: example.com, storageAccount: s@example.com, rootFolderId: "2"}, `, 1), 1, []string{"libraries[1].id", "duplicates"}},
		{"bad cron", good + "schedule: {full: \"every day\"}\n", 1, []string{"schedule.full"}},
		{"missing key file", strings.Replace(good, "key.json", "nope.json", 1), 1, []string{"storage.credentialsFile", "nope.json"}},
		{"unknown key", good + "listne: \":80\"\n", 1, []string{"listne: unknown key"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "config.yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			var out, errOut bytes.Buffer
			status := run(context.Background(), []string{"config", "check", "--config", path}, &out, &errOut)
			said := out.String() + errOut.String()
			if status != tc.status {
				t.Errorf("status %d, want %d; said %q", status, tc.status, said)
			}
			for _, s := range tc.says {
				if !strings.Contains(said, s) {
					t.Errorf("said %q; want it to name %q", said, s)
				}
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{nil, {"frobnicate"}, {"config"}, {"sync"}, {"serve", "--config"}, {"sync", "--config", "x", "extra"}} {
		var out, errOut bytes.Buffer
		if status := run(context.Background(), args, &out, &errOut); status != 2 {
			t.Errorf("%q: status %d, want 2 (%s)", args, status, errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	if status := run(context.Background(), []string{"sync", "--config", "/nonexistent/config.yaml"}, &out, &errOut); status != 1 ||
		!strings.Contains(errOut.String(), "/nonexistent/config.yaml") {
		t.Errorf("missing config: status %d, %q", status, errOut.String())
	}
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
