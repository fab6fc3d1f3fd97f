package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/internal/fmtest"
)

// --cpuprofile and --memprofile write profiles (pprof's: gzipped protocol
// buffers); a profile that cannot be created fails the command before it
// runs.
func TestProfilesAreWritten(t *testing.T) {
	cfg := fmtest.Config(t, fmtest.StartGoogle(t), t.TempDir())
	cfg.Domains = []config.Domain{{Name: "example.com"}}
	path := fmtest.WriteConfig(t, cfg)
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "sync.cpu"), filepath.Join(dir, "sync.mem")
	var out, errOut bytes.Buffer
	status := run(context.Background(), []string{"sync", "--config", path, "--cpuprofile", cpu, "--memprofile", mem}, &out, &errOut)
	if status != exitOK {
		t.Fatalf("sync: status %d: %s", status, errOut.String())
	}
	for _, file := range []string{cpu, mem} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) || len(data) < 100 {
			t.Errorf("%s: %d bytes, not a gzipped profile", file, len(data))
		}
	}
	errOut.Reset()
	status = run(context.Background(), []string{"sync", "--config", path, "--cpuprofile", filepath.Join(dir, "missing", "x.cpu")}, &out, &errOut)
	if status != exitFailed || !bytes.Contains(errOut.Bytes(), []byte("--cpuprofile")) {
		t.Errorf("a CPU profile that cannot be created: status %d, %q; want %d, naming --cpuprofile", status, errOut.String(), exitFailed)
	}
}
