package schedule

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	fm "github.com/foldermirror/foldermirror"
)

// directoryJob prefixes the job names of directory syncs.
var directoryJob = fm.DirectoryLease("")

// DirectoryJob is the name a domain's directory sync goes by: its lease's.
func DirectoryJob(domain string) string { return fm.DirectoryLease(domain) }

// Plan is what there is to sync.
type Plan struct {
	// Directories are the domains whose directories are synced (those with
	// an adminEmail).
	Directories []string
	// Libraries are the libraries synced, as they are now (nil: none).
	Libraries *fm.LibrarySet
}

// Jobs names what a sync of library brings: that library alone or, for "",
// every domain's directory and then every library. It returns nil for a
// library the plan does not have.
func (p Plan) Jobs(library string) []string {
	if library != "" {
		if !p.hasLibrary(library) {
			return nil
		}
		return []string{library}
	}
	return append(p.directoryJobs(), p.libraryIDs()...)
}

// hasLibrary tells whether the plan has the library of that ID.
func (p Plan) hasLibrary(id string) bool {
	if p.Libraries == nil {
		return false
	}
	_, ok := p.Libraries.Library(id)
	return ok
}

// has tells whether the plan has a job of that name.
func (p Plan) has(name string) bool {
	if domain, ok := strings.CutPrefix(name, directoryJob); ok {
		return slices.Contains(p.Directories, domain)
	}
	return p.hasLibrary(name)
}

// libraryIDs returns the IDs of the libraries, sorted.
func (p Plan) libraryIDs() []string {
	if p.Libraries == nil {
		return nil
	}
	return p.Libraries.IDs()
}

// directoryJobs names the directory syncs.
func (p Plan) directoryJobs() []string {
	var names []string
	for _, d := range p.Directories {
		names = append(names, DirectoryJob(d))
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
	// A full sync run by the full schedule says so (fm.FullScheduled).
	Schedule       string
	ScheduleWithin time.Duration
	// Needed, when set, is asked once the lease is held: false skips the
	// run (ErrSkipped). A first sync asks whether the library is still
	// unsynced, for another replica may have synced it since it was queued.
	Needed func(context.Context) (bool, error)
}

// ErrSkipped means a scheduled run was left out, another process having run it,
// or running it now.
var ErrSkipped = errors.New("skipped: another process ran it or runs it")

// leaseRetryEvery is how often a run waiting for a lease tries again.
const leaseRetryEvery = time.Second

// Runner runs jobs one at a time, each under its lease: the scheduler's
// runs, and those of a one-off sync.
type Runner struct {
	Syncer Syncer
	// Leases are the index's: a job runs holding the lease of its name.
	Leases fm.Leases
}

// Run runs the job named: a domain's directory sync (always whole), or a
// library's sync in mode. It holds the job's lease meanwhile, and writes
// under the lease's fence: it stops without committing if the lease is
// lost, and the index refuses its writes if the lease lapsed unnoticed.
func (r Runner) Run(ctx context.Context, job string, mode fm.SyncMode, progress fm.ProgressFunc, opts RunOptions) (Event, error) {
	lease, err := r.acquire(ctx, job, opts)
	if err != nil {
		return Event{Job: job}, err
	}
	defer lease.Release()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-lease.Lost():
			cancel(fmt.Errorf("%s: %w (the index database did not answer in time, or another process took it)", job, fm.ErrLeaseLost))
		case <-ctx.Done():
		}
	}()
	ev, err := r.run(ctx, job, mode, lease.Fence(), progress, opts)
	if cause := context.Cause(ctx); err != nil && cause != nil && !errors.Is(cause, context.Canceled) {
		err = cause
	}
	return ev, err
}

// acquire takes a job's lease, waiting for it up to opts.LeaseWait, and
// claims the scheduled run opts names.
func (r Runner) acquire(ctx context.Context, job string, opts RunOptions) (fm.Lease, error) {
	deadline := time.Now().Add(opts.LeaseWait)
	for {
		lease, err := r.Leases.Acquire(ctx, job)
		switch {
		case errors.Is(err, fm.ErrLeaseHeld) && opts.Schedule != "":
			return nil, ErrSkipped
		case errors.Is(err, fm.ErrLeaseHeld) && time.Now().Before(deadline):
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(leaseRetryEvery):
			}
			continue
		case errors.Is(err, fm.ErrLeaseHeld) && opts.LeaseWait > 0:
			return nil, fmt.Errorf("gave up after waiting %s: %w", opts.LeaseWait, err)
		case err != nil:
			return nil, err
		}
		if err := r.claim(ctx, job, opts); err != nil {
			lease.Release()
			return nil, err
		}
		return lease, nil
	}
}

// claim decides, once the job's lease is held, whether the run goes on:
// ErrSkipped if it is no longer needed, or if it is a scheduled run
// another process made already.
func (r Runner) claim(ctx context.Context, job string, opts RunOptions) error {
	if opts.Needed != nil {
		needed, err := opts.Needed(ctx)
		if err == nil && !needed {
			err = ErrSkipped
		}
		if err != nil {
			return err
		}
	}
	if opts.Schedule == "" {
		return nil
	}
	claimed, err := r.Leases.ClaimScheduledRun(ctx, job, opts.Schedule, opts.ScheduleWithin)
	if err == nil && !claimed {
		err = ErrSkipped
	}
	return err
}

// run runs a job under fence, once its lease is held.
func (r Runner) run(ctx context.Context, job string, mode fm.SyncMode, fence fm.Fence, progress fm.ProgressFunc, opts RunOptions) (Event, error) {
	if domain, ok := strings.CutPrefix(job, directoryJob); ok {
		res, err := r.Syncer.SyncDirectory(ctx, domain, fence)
		return Event{Job: job, Directory: res}, err
	}
	req := fm.SyncRequest{Library: job, Mode: mode, Fence: fence}
	if opts.Schedule == "full" {
		req.FullReason = fm.FullScheduled
	}
	res, err := r.Syncer.Sync(ctx, req, progress)
	return Event{Job: job, Result: res}, err
}
