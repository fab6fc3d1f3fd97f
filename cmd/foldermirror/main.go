// Command foldermirror mirrors Google Drive folder trees and their
// permissions into a local index and serves them over the folder API.
//
//	foldermirror serve --config FILE         the daemon
//	foldermirror sync --config FILE [--library ID] [--full]
//	foldermirror config check --config FILE
//	foldermirror healthcheck [--config FILE | --url URL]
//	foldermirror demo                        no Google account needed
//	foldermirror version
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/foldermirror/foldermirror/internal/gcpace"
)

// command is one subcommand: ParseFlags, then Run; Close after Run, even
// when Run failed. A daemon's Run returns once it is serving; a one-shot
// command's Run returns when done.
type command interface {
	ParseFlags(args []string) error
	Run(ctx context.Context) error
	Close() error
}

// daemon is a command that keeps running until interrupted: it says when
// it begins to stop, and why (a signalReceived, or the context's end), and
// when it has stopped.
type daemon interface {
	stopping(why error)
	stopped()
}

// Exit statuses.
const (
	exitOK     = 0
	exitFailed = 1 // the command ran and failed
	exitUsage  = 2 // the command line is wrong
)

func main() {
	paceCollector()
	ctx, cancel := context.WithCancelCause(context.Background())
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() { cancel(signalReceived{<-signals}) }()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// signalReceived is why the context of run ends when a signal stops
// foldermirror.
type signalReceived struct{ signal os.Signal }

func (s signalReceived) Error() string { return s.name() + " received" }

// name is the signal's name as kill -l says it: SIGINT, SIGTERM.
func (s signalReceived) name() string {
	switch s.signal {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.signal.String()
}

// How foldermirror paces Go's collector unless GOGC is set (package
// gcpace): the heap may grow by gcPercent of what is live, as GOGC=50 says,
// and by no less than gcFloor. Its large data (a sync's stage, the API's
// catalogs) holds no pointers, so a collection costs little whatever the
// library's size, while the heap's room to grow between collections is
// memory: half of what is live (Go's default is all of it) keeps a large
// sync's peak within the bench's limits (bench/README.md gives the peak at
// each size). The floor keeps a small heap from being collected every few
// megabytes: without it, collections were a tenth or more of a sync's CPU.
const (
	gcPercent = 50
	gcFloor   = 32 << 20
)

// paceCollector paces the collector, unless GOGC says otherwise.
func paceCollector() {
	if os.Getenv("GOGC") == "" {
		gcpace.Start(gcPercent, gcFloor)
	}
}

// run runs the subcommand named by args and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd, rest, err := pick(args, stdout, stderr)
	if err == nil {
		err = cmd.ParseFlags(rest)
	}
	if err != nil {
		return reportUsage(err, stdout, stderr)
	}
	if p, ok := cmd.(profiled); ok {
		if err := p.profiles().start(); err != nil {
			fmt.Fprintln(stderr, "foldermirror:", err)
			return exitFailed
		}
		defer func() {
			if err := p.profiles().stop(); err != nil {
				fmt.Fprintln(stderr, "foldermirror:", err)
			}
		}()
	}
	status := exitOK
	d, isDaemon := cmd.(daemon)
	if err := cmd.Run(ctx); err != nil {
		fmt.Fprintln(stderr, "foldermirror:", err)
		status = exitFailed
	} else if isDaemon {
		<-ctx.Done()
		d.stopping(context.Cause(ctx))
	}
	if err := cmd.Close(); err != nil {
		fmt.Fprintln(stderr, "foldermirror:", err)
		return exitFailed
	}
	if isDaemon && status == exitOK {
		d.stopped()
	}
	return status
}

const usage = `usage:
  foldermirror serve --config FILE                          run the daemon
  foldermirror sync --config FILE [--library ID] [--full]   sync now
  foldermirror config check --config FILE                   validate a config
  foldermirror healthcheck [--config FILE | --url URL]      exit 0 when the daemon is ready
  foldermirror demo [--listen ADDR] [--admin-listen ADDR]   a demo with no Google account
  foldermirror version                                      the version it was built from

--config defaults to $FOLDERMIRROR_CONFIG. foldermirror COMMAND --help describes a command.
`

const configUsage = `usage:
  foldermirror config check --config FILE   validate a config; every problem named by its key
`

// pick returns the command named by args[0] and its arguments.
func pick(args []string, stdout, stderr io.Writer) (command, []string, error) {
	if len(args) == 0 {
		return nil, nil, &usageError{usage: usage, name: "foldermirror", err: errors.New("no command given")}
	}
	switch args[0] {
	case "serve":
		return &serveCommand{stderr: stderr}, args[1:], nil
	case "sync":
		return &syncCommand{stdout: stdout, stderr: stderr}, args[1:], nil
	case "config":
		return pickConfig(args[1:], stdout)
	case "healthcheck":
		return &healthcheckCommand{stdout: stdout}, args[1:], nil
	case "demo":
		return &demoCommand{stdout: stdout, stderr: stderr}, args[1:], nil
	case "version", "-version", "--version":
		return &versionCommand{stdout: stdout}, args[1:], nil
	case "help", "-h", "-help", "--help":
		return nil, nil, &helpRequest{usage: usage}
	}
	return nil, nil, &usageError{usage: usage, name: "foldermirror", err: fmt.Errorf("unknown command %q", args[0])}
}

// pickConfig picks the subcommand of config.
func pickConfig(args []string, stdout io.Writer) (command, []string, error) {
	const name = "foldermirror config"
	switch {
	case len(args) == 0:
		return nil, nil, &usageError{usage: configUsage, name: name, err: errors.New("no subcommand given; expected check")}
	case args[0] == "check":
		return &configCheckCommand{stdout: stdout}, args[1:], nil
	case isHelp(args[0]):
		return nil, nil, &helpRequest{usage: configUsage}
	}
	return nil, nil, &usageError{usage: configUsage, name: name, err: fmt.Errorf("unknown subcommand %q; expected check", args[0])}
}

func isHelp(arg string) bool {
	switch arg {
	case "help", "-h", "-help", "--help":
		return true
	}
	return false
}

// newLogger returns a text logger on w at the named level.
func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(level))); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}
