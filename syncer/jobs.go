package syncer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/config"
)

// directoryJob prefixes the job names of directory syncs.
var directoryJob = fm.DirectoryLease("")

// DirectoryJob is the name a domain's directory sync goes by: its lease's.
func DirectoryJob(domain string) string { return fm.DirectoryLease(domain) }

// Jobs names what a sync of library brings: that library alone or, for "",
// every domain's directory (of the domains with an adminEmail) and then
// every library. It returns nil for a library cfg does not have.
func Jobs(cfg *config.Config, library string) []string {
	if library != "" {
		if cfg.Library(library) == nil {
			return nil
		}
		return []string{library}
	}
	names := directoryJobs(cfg)
	for _, l := range cfg.Libraries {
		names = append(names, l.ID)
	}
	return names
}

// directoryJobs names the directory syncs of cfg's domains.
func directoryJobs(cfg *config.Config) []string {
	var names []string
	for _, d := range cfg.Domains {
		if d.AdminEmail != "" {
			names = append(names, DirectoryJob(d.Name))
		}
	}
	return names
}

// RunOptions say how Run shares a job with the other processes of a shared
// index (they take turns, holding the job's lease); with an index one
// process holds alone, the lease is always free.
type RunOptions struct {
	// LeaseWait is how long to wait while another process holds the job's
	// lease (0: give up at once).
	LeaseWait time.Duration
	// Schedule, when set, marks a run of a schedule of that kind
	// ("incremental", "full", "directory"): it is skipped (ErrSkipped) if a
	// run of that kind began, on any process, less than ScheduleWithin ago.
	Schedule       string
	ScheduleWithin time.Duration
}

// ErrSkipped means a scheduled run was left out, another process having run it,
// or running it now.
var ErrSkipped = errors.New("skipped: another process ran it or runs it")

// leaseRetryEvery is how often a run waiting for a lease tries again.
const leaseRetryEvery = time.Second

// Run runs the job named: a domain's directory sync (always whole), or a
// library's sync in mode. It holds the job's lease meanwhile, and writes
// under the lease's fence: it stops without committing if the lease is
// lost, and the index refuses its writes if the lease lapsed unnoticed.
func (s *Syncer) Run(ctx context.Context, job string, mode Mode, progress ProgressFunc, opts RunOptions) (Event, error) {
	lease, err := s.acquire(ctx, job, opts)
	if err != nil {
		return Event{Job: job}, err
	}
	defer lease.Release()
	ctx, cancel := context.WithCancelCause(withFence(ctx, lease.Fence()))
	defer cancel(nil)
	go func() {
		select {
		case <-lease.Lost():
			cancel(fmt.Errorf("%s: %w (the index database did not answer in time, or another process took it)", job, fm.ErrLeaseLost))
		case <-ctx.Done():
		}
	}()
	ev, err := s.run(ctx, job, mode, progress)
	if cause := context.Cause(ctx); err != nil && cause != nil && !errors.Is(cause, context.Canceled) {
		err = cause
	}
	return ev, err
}

// fenceKey keys the fence of the lease a job runs under in its context.
type fenceKey struct{}

// withFence returns ctx carrying the fence the job's writes are made with.
func withFence(ctx context.Context, fence fm.Fence) context.Context {
	return context.WithValue(ctx, fenceKey{}, fence)
}

// fenceOf returns the fence of the lease the job of ctx runs under; the
// zero Fence (a write without a lease) for a sync run by Sync or
// SyncDirectory directly.
func fenceOf(ctx context.Context) fm.Fence {
	fence, _ := ctx.Value(fenceKey{}).(fm.Fence)
	return fence
}

// acquire takes a job's lease, waiting for it up to opts.LeaseWait, and
// claims the scheduled run opts names.
func (s *Syncer) acquire(ctx context.Context, job string, opts RunOptions) (fm.Lease, error) {
	deadline := time.Now().Add(opts.LeaseWait)
	for {
		lease, err := s.index.Leases().Acquire(ctx, job)
		switch {
		case errors.Is(err, fm.ErrLeaseHeld) && opts.Schedule != "":
			return nil, ErrSkipped
		case errors.Is(err, fm.ErrLeaseHeld) && time.Now().Before(deadline):
			if err := sleep(ctx, leaseRetryEvery); err != nil {
				return nil, err
			}
			continue
		case errors.Is(err, fm.ErrLeaseHeld) && opts.LeaseWait > 0:
			return nil, fmt.Errorf("gave up after waiting %s: %w", opts.LeaseWait, err)
		case err != nil:
			return nil, err
		}
		if opts.Schedule == "" {
			return lease, nil
		}
		claimed, err := s.index.Leases().ClaimScheduledRun(ctx, job, opts.Schedule, opts.ScheduleWithin)
		if err == nil && !claimed {
			err = ErrSkipped
		}
		if err != nil {
			lease.Release()
			return nil, err
		}
		return lease, nil
	}
}

// run runs a job, without a lease.
func (s *Syncer) run(ctx context.Context, job string, mode Mode, progress ProgressFunc) (Event, error) {
	if domain, ok := strings.CutPrefix(job, directoryJob); ok {
		res, err := s.SyncDirectory(ctx, domain)
		return Event{Job: job, Directory: res}, err
	}
	res, err := s.Sync(ctx, job, mode, progress)
	return Event{Job: job, Result: res}, err
}
