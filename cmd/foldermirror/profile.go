package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// profiles are the Go runtime profiles a command writes when asked, for
// performance work: --cpuprofile covers the command from the end of its
// flags' parsing to the end of its Close (a daemon's whole run, its start
// included), --memprofile holds the allocations made over the same span,
// written at the end.
type profiles struct {
	cpuPath, memPath string
	cpu              *os.File
}

// profiled is a command that can write profiles of its run.
type profiled interface {
	profiles() *profiles
}

// profileFlags adds --cpuprofile and --memprofile.
func (f *flags) profileFlags(p *profiles) {
	f.fs.StringVar(&p.cpuPath, "cpuprofile", "", "write a CPU profile of the run to `FILE` (for go tool pprof)")
	f.fs.StringVar(&p.memPath, "memprofile", "", "write a profile of the run's allocations to `FILE` when it ends (for go tool pprof)")
}

// start begins the CPU profile, if one is asked for.
func (p *profiles) start() error {
	if p.cpuPath == "" {
		return nil
	}
	f, err := os.Create(p.cpuPath) //nolint:gosec // the path the operator gave on the command line
	if err != nil {
		return fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return fmt.Errorf("--cpuprofile: %w", errors.Join(err, f.Close()))
	}
	p.cpu = f
	return nil
}

// stop ends the CPU profile and writes the allocations' profile, as asked.
func (p *profiles) stop() error {
	var errs []error
	if p.cpu != nil {
		pprof.StopCPUProfile()
		if err := p.cpu.Close(); err != nil {
			errs = append(errs, fmt.Errorf("--cpuprofile: %w", err))
		}
		p.cpu = nil
	}
	if p.memPath != "" {
		errs = append(errs, writeAllocs(p.memPath))
	}
	return errors.Join(errs...)
}

func writeAllocs(path string) error {
	f, err := os.Create(path) //nolint:gosec // the path the operator gave on the command line
	if err != nil {
		return fmt.Errorf("--memprofile: %w", err)
	}
	runtime.GC() // the profile is as of the last collection: one that counts all the run's allocations
	err = pprof.Lookup("allocs").WriteTo(f, 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("--memprofile: %w", err)
	}
	return nil
}
