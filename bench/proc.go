package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// childAttr makes a child die with the harness, however the harness ends.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// commandOutput runs a command to its end in dir ("" for the current one)
// and returns its standard output; its standard error is in the error.
func commandOutput(ctx context.Context, dir, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = childAttr()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, tail(stderr.String(), 2000))
	}
	return stdout.String(), nil
}

// daemonProc is a long-running child process: a server.
type daemonProc struct {
	cmd    *exec.Cmd
	done   chan struct{} // closed when the process has exited
	err    error         // its exit status, once done
	stderr *os.File
}

// startDaemon starts a long-running child whose standard output and error
// go to logFile.
func startDaemon(logFile string, env []string, name string, args ...string) (*daemonProc, error) {
	f, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(name, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, err
	}
	d := &daemonProc{cmd: cmd, done: make(chan struct{}), stderr: f}
	go func() {
		d.err = cmd.Wait()
		_ = f.Close() // the child's log, written by the child
		close(d.done)
	}()
	return d, nil
}

// pid is the child's process ID.
func (d *daemonProc) pid() int { return d.cmd.Process.Pid }

// exited reports whether the child has ended.
func (d *daemonProc) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// stop asks the child to end (SIGTERM), and kills it after grace.
func (d *daemonProc) stop(grace time.Duration) {
	if d.exited() {
		return
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(grace):
		_ = d.cmd.Process.Kill()
		<-d.done
	}
}

// logTail returns the end of the child's output, for error messages.
func (d *daemonProc) logTail() string {
	data, _ := os.ReadFile(d.stderr.Name())
	return tail(string(data), 2000)
}

// memory is what /proc/PID/status says of a process's resident memory.
type memory struct {
	rss, anon, file int64 // bytes: VmRSS, RssAnon, RssFile
}

// readMemory reads a process's resident memory from /proc.
func readMemory(pid int) (memory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, err
	}
	defer f.Close() //nolint:errcheck // read only
	var m memory
	fields := map[string]*int64{"VmRSS:": &m.rss, "RssAnon:": &m.anon, "RssFile:": &m.file}
	s := bufio.NewScanner(f)
	for s.Scan() {
		parts := strings.Fields(s.Text())
		if len(parts) == 3 && fields[parts[0]] != nil {
			kib, err := strconv.ParseInt(parts[1], 10, 64)
			if err != nil {
				return memory{}, err
			}
			*fields[parts[0]] = kib << 10
		}
	}
	return m, s.Err()
}

// tail returns the last n bytes of s, trimmed.
func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}

// childEnv is the harness's environment for a child, without GOMAXPROCS
// (children pick their own) and FOLDERMIRROR_* (which would override the
// configuration), plus extra ("NAME=VALUE").
func childEnv(extra ...string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "GOMAXPROCS=") || strings.HasPrefix(kv, "FOLDERMIRROR_")
	})
	return append(env, extra...)
}

// envMeasure makes this binary the measuring wrapper (see runMeasured): the
// file to write the measure to.
const envMeasure = "BENCH_MEASURE_OUT"

// measured is what the measuring wrapper reports of its child.
type measured struct {
	Wall    time.Duration `json:"wall"`
	MaxRSS  int64         `json:"maxRSS"` // bytes
	CPU     time.Duration `json:"cpu"`    // user and system
	Success bool          `json:"success"`
}

// runMeasured is the measuring wrapper's whole program: it runs args with
// the wrapper's standard streams, passing SIGINT and SIGTERM on, writes the
// child's wall time, CPU time and peak RSS (getrusage's maxrss) to outFile, and
// returns the child's exit status.
//
// The wrapper exists because Linux carries a parent's peak RSS into a child
// it starts (os/exec forks with CLONE_VM, and exec records the peak of the
// memory it replaces), and the harness holds the whole fake world: the
// harness's own children would report its peak. The wrapper is small.
func runMeasured(outFile string, args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "bench: measure: no command")
		return 2
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = childAttr()
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "bench: measure:", err)
		return 1
	}
	go func() {
		for sig := range signals {
			_ = cmd.Process.Signal(sig)
		}
	}()
	err := cmd.Wait()
	m := measured{Wall: time.Since(start), Success: err == nil}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		m.MaxRSS = ru.Maxrss << 10 // KiB on Linux
		m.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	data, _ := json.Marshal(m)
	if werr := os.WriteFile(outFile, data, 0o600); werr != nil {
		fmt.Fprintln(os.Stderr, "bench: measure:", werr)
		return 1
	}
	return cmd.ProcessState.ExitCode()
}
