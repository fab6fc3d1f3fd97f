//go:build long

package main

import (
	"bytes"
	"os/exec"
	"testing"
)

// The demo's sync line, run with the built binary, as its user would.
func TestDemoSyncLineBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	checkDemoSyncLine(t, func(args []string) (stdout, stderr string, err error) {
		cmd := exec.Command(bin, args...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err = cmd.Run()
		return out.String(), errOut.String(), err
	})
}
