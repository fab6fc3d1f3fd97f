// Command foldermirror mirrors Google Drive folder trees and their
// permissions into a local index and serves them over the folder API.
//
//	foldermirror serve --config FILE         the daemon
//	foldermirror sync --config FILE [--library ID] [--full]
//	foldermirror config check --config FILE
//	foldermirror demo                        no Google account needed
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/foldermirror/foldermirror/config"
)

// command is one subcommand: ParseFlags, then Run; Close after Run, even
// when Run failed. A daemon's Run returns once it is serving; a one-shot
// command's Run returns when done.
type command interface {
	ParseFlags(args []string) error
	Run(ctx context.Context) error
	Close() error
}

// daemon marks commands that keep running until interrupted.
type daemon interface{ isDaemon() }

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() { <-signals; cancel() }()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the subcommand named by args and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd, rest, err := pick(args, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "foldermirror:", err)
		return 2
	}
	if err := cmd.ParseFlags(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "foldermirror:", err)
		return 2
	}
	status := 0
	if err := cmd.Run(ctx); err != nil {
		fmt.Fprintln(stderr, "foldermirror:", err)
		status = 1
	} else if _, ok := cmd.(daemon); ok {
		<-ctx.Done()
	}
	if err := cmd.Close(); err != nil {
		fmt.Fprintln(stderr, "foldermirror:", err)
		status = 1
	}
	return status
}

const usage = `usage:
  foldermirror serve --config FILE                          run the daemon
  foldermirror sync --config FILE [--library ID] [--full]   sync now
  foldermirror config check --config FILE                   validate a config
  foldermirror demo [--listen ADDR]                         a demo with no Google account
`

func pick(args []string, stdout, stderr io.Writer) (command, []string, error) {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return nil, nil, errors.New("no command given")
	}
	switch args[0] {
	case "serve":
		return &serveCommand{stderr: stderr}, args[1:], nil
	case "sync":
		return &syncCommand{stdout: stdout, stderr: stderr}, args[1:], nil
	case "config":
		if len(args) < 2 || args[1] != "check" {
			return nil, nil, errors.New(`usage: foldermirror config check --config FILE`)
		}
		return &configCheckCommand{stdout: stdout}, args[2:], nil
	case "demo":
		return &demoCommand{stdout: stdout, stderr: stderr}, args[1:], nil
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil, nil, flag.ErrHelp
	}
	fmt.Fprint(stderr, usage)
	return nil, nil, fmt.Errorf("unknown command %q", args[0])
}

// newFlagSet returns a flag set for a subcommand, with --config (default:
// $FOLDERMIRROR_CONFIG) and --log-level when their targets are given.
func newFlagSet(name string, configPath, logLevel *string, defaultLevel string) *flag.FlagSet {
	fs := flag.NewFlagSet("foldermirror "+name, flag.ContinueOnError)
	if configPath != nil {
		fs.StringVar(configPath, "config", os.Getenv(config.EnvConfig), "configuration file (default $"+config.EnvConfig+")")
	}
	if logLevel != nil {
		fs.StringVar(logLevel, "log-level", defaultLevel, "log level: debug, info, warn or error")
	}
	return fs
}

// parseArgs parses args and requires --config when configPath is given.
func parseArgs(fs *flag.FlagSet, args []string, configPath *string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	if configPath != nil && *configPath == "" {
		return fmt.Errorf("%s: --config FILE is required", fs.Name())
	}
	return nil
}

// newLogger returns a text logger on w at the named level.
func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(level))); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}
