package tests

import (
	"strings"
	"syscall"
	"testing"

	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/internal/fmtest"
)

// A daemon of the built binary stopped by a signal says so when it begins
// to stop and when it has, and exits 0: serve in its log, the demo under
// its "Press Ctrl-C to stop."
func TestShutdownSaysSo(t *testing.T) {
	t.Parallel()
	fake := fmtest.StartGoogle(t)
	c := fmtest.Config(t, fake, t.TempDir())
	c.Domains = []config.Domain{{Name: "example.com"}}
	path := fmtest.WriteConfig(t, c)
	tests := []struct {
		name        string
		args        []string
		serving     string // what it says once it serves
		out         func(p *process) string
		begun, done string
	}{
		{"serve", []string{"serve", "--config", path}, `msg=serving`, func(p *process) string { return p.stderr.String() },
			`level=INFO msg="shutting down" signal=SIGTERM`, `level=INFO msg=stopped`},
		{"demo", []string{"demo", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--folders", "1"}, "Press Ctrl-C to stop.",
			func(p *process) string { return p.stdout.String() }, "SIGTERM received: stopping the demo", "The demo stopped."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The signal comes once the daemon serves: when it says so.
			p := startProcess(t, tt.serving, tt.args...)
			if err := p.stop(syscall.SIGTERM); err != nil {
				t.Fatalf("exit: %v\nstdout: %s\nstderr: %s", err, p.stdout, p.stderr)
			}
			lines := strings.Split(strings.TrimSpace(tt.out(p)), "\n")
			if n := len(lines); n < 2 || !strings.Contains(lines[n-2], tt.begun) || !strings.Contains(lines[n-1], tt.done) {
				t.Errorf("it said\n%s\nwant it to end with lines saying %q, then %q", strings.Join(lines, "\n"), tt.begun, tt.done)
			}
		})
	}
}
