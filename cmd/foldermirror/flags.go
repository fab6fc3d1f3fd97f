package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/foldermirror/foldermirror/config"
)

// usageError is a mistake on the command line: run prints the usage, then
// the error once, and exits 2.
type usageError struct {
	usage string // what to print first
	name  string // the command, such as "foldermirror serve"
	err   error
}

func (e *usageError) Error() string { return e.name + ": " + e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// helpRequest is --help: run prints the usage on stdout and exits 0.
type helpRequest struct{ usage string }

func (h *helpRequest) Error() string { return "help requested" }

// reportUsage prints what a usage error or a help request says and
// returns the exit status.
func reportUsage(err error, stdout, stderr io.Writer) int {
	var help *helpRequest
	if errors.As(err, &help) {
		fmt.Fprint(stdout, help.usage)
		return exitOK
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprint(stderr, ue.usage)
		fmt.Fprintln(stderr)
	}
	fmt.Fprintln(stderr, err)
	return exitUsage
}

// flags is a subcommand's flag set, with what its usage says and the
// checks its values must pass.
type flags struct {
	fs       *flag.FlagSet
	synopsis string // such as "--config FILE [--full]"
	about    string // one line on what the command does
	checks   []func() error
}

// newFlags returns the flag set of "foldermirror name". The flag package
// prints nothing itself: parse returns what run prints.
func newFlags(name, synopsis, about string) *flags {
	fs := flag.NewFlagSet("foldermirror "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &flags{fs: fs, synopsis: synopsis, about: about}
}

// config adds --config, by default $FOLDERMIRROR_CONFIG.
func (f *flags) config(path *string) {
	f.fs.StringVar(path, "config", os.Getenv(config.EnvConfig), "the configuration `FILE` (default $"+config.EnvConfig+")")
}

// logLevel adds --log-level with a default.
func (f *flags) logLevel(level *string, def string) {
	f.fs.StringVar(level, "log-level", def, "the `LEVEL` of what to log: debug, info, warn or error")
	f.check(func() error {
		_, err := newLogger(io.Discard, *level)
		return err
	})
}

// address adds a host:port flag.
func (f *flags) address(addr *string, name, def, usage string) {
	f.fs.StringVar(addr, name, def, usage)
	f.check(func() error { return checkAddress("--"+name, *addr) })
}

// check adds a check of the parsed values.
func (f *flags) check(fn func() error) { f.checks = append(f.checks, fn) }

// parse parses args: no arguments besides flags, --config given when
// configPath is not nil, every check passed. Its errors are a
// *helpRequest or a *usageError.
func (f *flags) parse(args []string, configPath *string) error {
	err := f.fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return &helpRequest{usage: f.usage()}
	}
	if err == nil && f.fs.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q", f.fs.Arg(0))
	}
	if err == nil && configPath != nil && *configPath == "" {
		err = fmt.Errorf("--config FILE is required (or set $%s)", config.EnvConfig)
	}
	for _, check := range f.checks {
		if err == nil {
			err = check()
		}
	}
	if err != nil {
		return &usageError{usage: f.usage(), name: f.fs.Name(), err: err}
	}
	return nil
}

// usage returns the synopsis, what the command does and its flags, each
// written as the synopsis writes it: --name PLACEHOLDER.
func (f *flags) usage() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n%s\n", strings.TrimSpace("usage: "+f.fs.Name()+" "+f.synopsis), f.about)
	if hasFlags(f.fs) {
		var list strings.Builder
		f.fs.SetOutput(&list)
		f.fs.PrintDefaults()
		f.fs.SetOutput(io.Discard)
		b.WriteString("\nflags:\n")
		for _, line := range strings.SplitAfter(list.String(), "\n") {
			if name, ok := strings.CutPrefix(line, "  -"); ok {
				line = "  --" + name
			}
			b.WriteString(line)
		}
	}
	return b.String()
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// checkAddress says what is wrong with a host:port given to a flag.
func checkAddress(flagName, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err == nil {
		_, err = strconv.ParseUint(port, 10, 16)
	}
	if err != nil {
		return fmt.Errorf("%s %q is not host:port; expected an optional host and a numeric port, such as 127.0.0.1:8080 or :8080", flagName, addr)
	}
	return nil
}
