//go:build long

package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// What the long tests share. They are in the files built with -tags long
// (soak, crash, shutdown, disk, replicas, database faults, the terminal, the
// demo's sync line run by the binary): they run the built binary, and the
// everyday run builds none.

// Built with -tags long, the property test checks three random worlds by
// default.
const defaultPropertySeeds = 3

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

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
			built.err = fmt.Errorf("go build: %w\n%s", err, out)
			return
		}
		built.bin = bin
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}
