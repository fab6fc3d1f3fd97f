package tests

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/foldermirror/foldermirror/internal/fmtest"
)

// The everyday tests that run the binary call t.Parallel: each has a fake,
// a directory and ports of its own, and most of their time is spent
// waiting on the processes they started. Those that set environment
// variables (t.Setenv) cannot, nor do the long ones, which measure or
// load the machine.

// binDir holds the foldermirror binary the tests build, once per test
// process; TestMain makes it and removes it.
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
//
// The build starts from the binary the last run of this module's tests
// built, if any (lastBuilt): go build does not link again a binary whose
// build ID says it is up to date, which saves seconds. The binary built
// is kept for the next run.
func buildBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		bin := filepath.Join(binDir, "foldermirror")
		last := lastBuilt()
		if last != "" {
			_ = copyFile(last, bin) // else go build builds it anew
		}
		if out, err := exec.Command("go", "build", "-o", bin, "../cmd/foldermirror").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %w\n%s", err, out)
			return
		}
		built.bin = bin
		if last != "" {
			keepBuilt(bin, last)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

// lastBuilt is where the tests of this module (this checkout: each has its
// own) keep the binary they built, in the user's cache directory; "" when
// there is none.
func lastBuilt() string {
	cache, err := os.UserCacheDir()
	module, err2 := filepath.Abs("..")
	if err != nil || err2 != nil {
		return ""
	}
	sum := sha256.Sum256([]byte(module))
	return filepath.Join(cache, "foldermirror-tests", hex.EncodeToString(sum[:8]), "foldermirror")
}

// keepBuilt puts a copy of bin at last for the next run, if it differs
// from what is there: whole or not at all (a run at once may be reading
// it), and silently (it only saves time).
func keepBuilt(bin, last string) {
	if a, b := fileDigest(bin), fileDigest(last); a != "" && a == b {
		return
	}
	if os.MkdirAll(filepath.Dir(last), 0o700) != nil {
		return
	}
	tmp := fmt.Sprintf("%s.%d", last, os.Getpid())
	if copyFile(bin, tmp) != nil || os.Rename(tmp, last) != nil {
		os.Remove(tmp)
	}
}

// fileDigest is the SHA-256 of a file's content, "" if it cannot be read.
func fileDigest(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

// copyFile copies the file at from to a new executable file at to.
func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o700)
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, src)
	return errors.Join(err, dst.Close())
}

// result is what a command of the binary that ran to its end did.
type result struct {
	stdout, stderr string
	code           int // its exit status
}

// said is everything the command wrote, its standard output first.
func (r result) said() string { return r.stdout + r.stderr }

// runBinary runs the built binary with args, in the test's environment,
// until it exits; it fails the test if the binary cannot be started.
func runBinary(t *testing.T, args ...string) result {
	t.Helper()
	cmd := exec.Command(buildBinary(t), args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("foldermirror %s: %v", strings.Join(args, " "), err)
	}
	return result{stdout: out.String(), stderr: errOut.String(), code: cmd.ProcessState.ExitCode()}
}

// process is a daemon of the built binary (serve, demo), stopped when the
// test ends (SIGTERM, then SIGKILL if it lingers), its output logged if the
// test failed.
type process struct {
	cmd            *exec.Cmd
	stdout, stderr *output
	exited         chan struct{} // closed once it exited and its output is read
	err            error         // what Wait said, once exited is closed
	// api and admin are the base URLs of its listeners, for serve
	// (startServe).
	api, admin string
}

// output is a process's standard output or error, kept whole, that the
// test may read while the process writes it.
type output struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	wrote chan struct{} // a value after each write, at most one waiting
}

func newOutput() *output { return &output{wrote: make(chan struct{}, 1)} }

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	n, err := o.buf.Write(p)
	o.mu.Unlock()
	select {
	case o.wrote <- struct{}{}:
	default:
	}
	return n, err
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// startProcess starts the built binary with args and returns once it has
// written ready, on its standard output or its error; it fails the test if
// the process exits first, or has not said it within a minute.
func startProcess(t *testing.T, ready string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(buildBinary(t), args...), stdout: newOutput(), stderr: newOutput(), exited: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.stop(syscall.SIGTERM)
		if t.Failed() {
			t.Logf("foldermirror %s:\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), p.stdout, p.stderr)
		}
	})
	said := func() bool {
		return strings.Contains(p.stdout.String(), ready) || strings.Contains(p.stderr.String(), ready)
	}
	deadline := time.After(time.Minute)
	for !said() {
		select {
		case <-p.stdout.wrote:
		case <-p.stderr.wrote:
		case <-p.exited:
			if !said() {
				t.Fatalf("foldermirror %s exited (%v) before saying %q\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), p.err, ready, p.stdout, p.stderr)
			}
		case <-deadline:
			t.Fatalf("foldermirror %s has not said %q in a minute\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), ready, p.stdout, p.stderr)
		}
	}
	return p
}

// stop sends the process sig, unless it exited, and waits until it has,
// killing it if it still runs 20 s later; it returns what Wait said.
func (p *process) stop(sig syscall.Signal) error {
	select {
	case <-p.exited:
		return p.err
	default:
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	return p.err
}

// serving is serve's log line once it serves, with the addresses it bound.
var serving = regexp.MustCompile(`msg=serving listen=(\S+) adminListen=(\S+)`)

// startServe runs `foldermirror serve --config path` (logging at info, to
// read the addresses it bound from its log) until the test ends, and
// returns once it serves.
func startServe(t *testing.T, path string) *process {
	t.Helper()
	p := startProcess(t, "msg=serving", "serve", "--config", path, "--log-level", "info")
	m := serving.FindStringSubmatch(p.stderr.String())
	if m == nil {
		t.Fatalf("serve's log names no addresses:\n%s", p.stderr)
	}
	p.api, p.admin = "http://"+m[1], "http://"+m[2]
	return p
}

// getJSON GETs url with a bearer token (none if token is ""), fails the
// test unless the answer has the status, decodes it into into if not nil,
// and returns its body.
func getJSON(t *testing.T, url, token string, status int, into any) []byte {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, body := fmtest.Do(t, req)
	if resp.StatusCode != status {
		t.Fatalf("GET %s: %d, want %d: %s", url, resp.StatusCode, status, body)
	}
	if into != nil {
		if err := json.Unmarshal(body, into); err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
	}
	return body
}

// freePort returns a loopback address nothing listens on now: for a
// listener the test must know before the daemon starts (the admin
// listener that foldermirror sync and healthcheck find in the
// configuration).
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitReady waits until url (a daemon's /readyz) answers 200, failing the
// test after 30 s.
func waitReady(t *testing.T, url string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
	}
	t.Fatalf("%s never became ready", url)
}

// waitUntil polls cond every 50 ms until it holds, failing the test after
// timeout.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s", what, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
