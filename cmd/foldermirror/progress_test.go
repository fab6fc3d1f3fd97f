package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/foldermirror/foldermirror/syncer"
)

// Off a terminal, progress is plain lines: one when a phase starts and at
// most one a second, each saying every phase.
func TestPlainProgress(t *testing.T) {
	var out bytes.Buffer
	v := newProgressView(&out, "team")
	for i := 1; i <= 100; i++ {
		v.update(syncer.Progress{Library: "team", Phase: "listing", Done: i * 10})
		v.update(syncer.Progress{Library: "team", Phase: "permissions", Done: i, Total: i + 5})
	}
	v.update(syncer.Progress{Library: "team", Phase: "done"})
	v.finish()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{"team: listing: 10 folders", "team: listing: 10 folders, permissions: 1/6"}
	if len(lines) != 2 || lines[0] != want[0] || lines[1] != want[1] {
		t.Errorf("lines %q, want %q", lines, want)
	}
}
