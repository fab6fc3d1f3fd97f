//go:build long

package tests

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/googlefake"
)

// terminalWidth is the width of the tmux pane the progress is drawn in.
const terminalWidth = 100

// TestSyncProgressInATerminal runs the built binary's sync through a
// daemon in a real terminal (a tmux pane) while three libraries sync at
// once, and reads the screen as it goes: each running job has a line of
// its own, a bar where the total is known, and no line mixes two jobs.
func TestSyncProgressInATerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("tmux is not installed: the progress display in a real terminal is not checked (apt-get install tmux)")
	}
	bin := buildBinary(t)
	fake := fmtest.StartGoogle(t) // closed after the daemon
	path := writeProgressWorld(t, fake)
	admin := withAdminListen(t, path)
	startServe(t, path)
	waitReady(t, "http://"+admin+"/readyz")
	fake.SetLatency(60 * time.Millisecond) // each permissions.list call: about 1 s a drive

	pane := startPane(t, tmux, fmt.Sprintf("%s sync --config %s --full; echo EXIT=$?; sleep 600", bin, path))
	jobs := []string{"team-a", "team-b", "handbook"}
	var screens []string
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		screen := pane.capture(t)
		screens = append(screens, screen)
		if strings.Contains(screen, "EXIT=") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sync did not end in 90 s; the screen:\n%s", screen)
		}
	}
	final := screens[len(screens)-1]
	if !strings.Contains(final, "EXIT=0") {
		t.Fatalf("the sync failed; the screen:\n%s", final)
	}

	bar := regexp.MustCompile(`^(team-a|team-b)\s+listing the shared drive: \d+ folders?, permissions \[[=>+-]+\] \d+/\d+$`)
	sawTogether, sawBar := false, false
	for _, screen := range screens {
		lines := strings.Split(screen, "\n")
		running := 0
		for _, line := range lines {
			line = strings.TrimRight(line, " ")
			if n := jobsIn(line, jobs); n > 1 {
				t.Fatalf("a line mixes jobs: %q; the screen:\n%s", line, screen)
			}
			switch {
			case isProgressLine(line, jobs):
				running++
			case line == "", strings.HasPrefix(line, "a foldermirror daemon holds the index; asking it"),
				isSummaryLine(line, jobs), strings.HasPrefix(line, "EXIT="):
			default: // a wrapped line, or pieces of several
				t.Fatalf("a garbled line: %q; the screen:\n%s", line, screen)
			}
			sawBar = sawBar || bar.MatchString(line)
		}
		sawTogether = sawTogether || running >= 2
	}
	if !sawTogether {
		t.Errorf("never saw two jobs' progress at once, each on its line; the screens:\n%s", strings.Join(screens, "\n----\n"))
	}
	if !sawBar {
		t.Errorf("never saw a permissions bar; the screens:\n%s", strings.Join(screens, "\n----\n"))
	}
	// In the end: one summary line a job, nothing left of the bars.
	for _, job := range jobs {
		if n := strings.Count(final, job+": full sync ("); n != 1 {
			t.Errorf("the final screen says %q %d times:\n%s", job+": full sync (", n, final)
		}
	}
	for _, line := range strings.Split(final, "\n") {
		if isProgressLine(line, jobs) {
			t.Errorf("a progress line is left on the final screen: %q\n%s", line, final)
		}
	}
}

// jobsIn counts the jobs a line names.
func jobsIn(line string, jobs []string) int {
	n := 0
	for _, job := range jobs {
		if strings.Contains(line, job+" ") || strings.Contains(line, job+":") {
			n++
		}
	}
	return n
}

// isProgressLine tells whether a line is a job's progress (not its
// summary): the job's name, then what it is doing.
func isProgressLine(line string, jobs []string) bool {
	for _, job := range jobs {
		if rest, ok := strings.CutPrefix(line, job+" "); ok && !strings.Contains(rest, "full sync:") {
			return true
		}
	}
	return false
}

// isSummaryLine tells whether a line is a job's outcome.
func isSummaryLine(line string, jobs []string) bool {
	for _, job := range jobs {
		if strings.HasPrefix(line, job+": full sync (") && strings.HasSuffix(line, "s") {
			return true
		}
	}
	return false
}

// writeProgressWorld makes two shared drives whose folders each have a
// permission of their own (a permissions.list call each, a bar) and a
// My Drive tree, and returns the path of their configuration.
func writeProgressWorld(t *testing.T, fake *googlefake.Server) string {
	t.Helper()
	fake.AddUser(e2eStorage)
	c := fmtest.Config(t, fake, t.TempDir())
	c.Domains = []config.Domain{{Name: "example.com"}}
	for _, name := range []string{"team-a", "team-b"} {
		drive := fake.CreateSharedDrive(name, e2eStorage)
		for i := range 150 {
			f := fake.CreateFolder(e2eStorage, drive, fmt.Sprintf("folder %d", i))
			fake.Share(f, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: fmt.Sprintf("u%d@example.com", i)})
		}
		c.Libraries = append(c.Libraries, config.Library{ID: name, Domain: "example.com", StorageAccount: e2eStorage, SharedDriveID: drive})
	}
	root := fake.CreateFolder(e2eStorage, "", "Handbook")
	for i := range 50 {
		fake.CreateFolder(e2eStorage, root, fmt.Sprintf("chapter %d", i))
	}
	c.Libraries = append(c.Libraries, config.Library{ID: "handbook", Domain: "example.com", StorageAccount: e2eStorage, RootFolderID: root})
	return fmtest.WriteConfig(t, c)
}

// tmuxPane is a detached tmux session on a server of its own.
type tmuxPane struct {
	tmux, socket string
}

// startPane runs command in a new detached tmux pane, terminalWidth
// columns wide, until the test ends.
func startPane(t *testing.T, tmux, command string) *tmuxPane {
	t.Helper()
	p := &tmuxPane{tmux: tmux, socket: filepath.Join(t.TempDir(), "tmux.sock")}
	if out, err := p.run("new-session", "-d", "-x", fmt.Sprint(terminalWidth), "-y", "40", command); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	t.Cleanup(func() { p.run("kill-server") })
	return p
}

func (p *tmuxPane) run(args ...string) ([]byte, error) {
	return exec.Command(p.tmux, append([]string{"-S", p.socket, "-f", "/dev/null"}, args...)...).CombinedOutput()
}

// capture returns what the pane shows.
func (p *tmuxPane) capture(t *testing.T) string {
	t.Helper()
	out, err := p.run("capture-pane", "-p")
	if err != nil {
		t.Fatalf("tmux capture-pane: %v\n%s", err, out)
	}
	return string(out)
}
