package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/discovery"
	"github.com/foldermirror/foldermirror/httpapi/admin"
	"github.com/foldermirror/foldermirror/httpapi/catalog"
	"github.com/foldermirror/foldermirror/internal/wire"
	"github.com/foldermirror/foldermirror/schedule"
	"github.com/prometheus/client_golang/prometheus"
)

// syncCommand syncs now, showing progress: through the daemon when one runs
// (it holds the index), else by opening the index itself.
type syncCommand struct {
	stdout, stderr io.Writer
	configPath     string
	logLevel       string
	library        string
	full           bool
	wait           time.Duration
	profiling      profiles

	db       fm.Index
	progress *progressDisplay
	jobs     int // how many jobs were asked for
}

func (c *syncCommand) ParseFlags(args []string) error {
	f := newFlags("sync", "--config FILE [--library ID] [--full] [--wait DURATION] [--log-level LEVEL] [--cpuprofile FILE] [--memprofile FILE]",
		"Syncs now, showing progress: through the daemon when one runs (it holds the index), else by opening the index.")
	f.config(&c.configPath)
	f.logLevel(&c.logLevel, "warn") // progress says what info logs would
	f.fs.StringVar(&c.library, "library", "", "sync only this library `ID` (default: every directory and library)")
	f.fs.BoolVar(&c.full, "full", false, "read whole trees even where a changes token is saved")
	f.profileFlags(&c.profiling)
	f.fs.DurationVar(&c.wait, "wait", time.Minute, "with a PostgreSQL index, how long (`DURATION`, such as 30s or 5m) to wait for a library another process (a replica) is syncing")
	return f.parse(args, &c.configPath)
}

func (c *syncCommand) profiles() *profiles { return &c.profiling }

func (c *syncCommand) Run(ctx context.Context) error {
	cfg, err := config.Load(c.configPath)
	if err != nil {
		return err
	}
	discovering := len(cfg.SharedDriveDiscoveries()) > 0
	if c.library != "" && cfg.Library(c.library) == nil && !discovering {
		return fmt.Errorf("--library %s: no such library in %s", c.library, c.configPath)
	}
	c.jobs = len(wire.Plan(cfg, wire.Libraries(cfg)).Jobs(c.library))
	if c.library != "" {
		c.jobs = 1 // maybe a shared drive discovered, which the configuration does not name
	}
	token, err := cfg.AdminToken()
	if err != nil {
		return err
	}
	// A daemon holds a bbolt index alone: it is asked. A PostgreSQL index is
	// shared: this command syncs by itself, under the jobs' leases.
	var daemon *admin.Client
	if !cfg.Index.IsPostgres() {
		if daemon, err = findDaemon(ctx, cfg.AdminListen, token); err != nil {
			return err
		}
	}
	if daemon != nil {
		fmt.Fprintf(c.stderr, "a foldermirror daemon holds the index; asking it (%s)\n", daemon.Base())
	}
	c.progress = newProgressDisplay(c.stderr, listingOf(cfg))
	defer c.progress.close()
	if daemon != nil {
		return c.viaDaemon(ctx, daemon)
	}
	return c.locally(ctx, cfg)
}

// findDaemon returns a client of the daemon's admin listener if a daemon
// answers there, nil if none does; its error says that what answers does
// not prove it holds token.
func findDaemon(ctx context.Context, adminListen, token string) (*admin.Client, error) {
	base, err := admin.BaseURL(adminListen)
	if err != nil {
		return nil, nil // no address to ask, so no daemon to find
	}
	daemon := admin.NewClient(base, token, nil)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	switch _, err := daemon.Health(ctx); {
	case errors.Is(err, admin.ErrNoDaemon):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return daemon, nil
}

// viaDaemon asks the daemon to sync, and shows the progress it streams.
func (c *syncCommand) viaDaemon(ctx context.Context, daemon *admin.Client) error {
	mode := fm.SyncAuto
	if c.full {
		mode = fm.SyncFull
	}
	var failed []error
	err := daemon.Sync(ctx, c.library, mode, func(ev schedule.Event) {
		if err := c.show(ev); err != nil {
			failed = append(failed, err)
		}
	})
	if err != nil {
		return err
	}
	return c.joinFailures(failed)
}

// locally opens the index and syncs: directories first (all only), then
// libraries.
func (c *syncCommand) locally(ctx context.Context, cfg *config.Config) error {
	logger, err := newLogger(c.progress, c.logLevel)
	if err != nil {
		return err
	}
	if c.db, err = openIndex(cfg, logger, nil); err != nil {
		if !cfg.Index.IsPostgres() {
			err = fmt.Errorf("%w; no daemon answered at adminListen %s either", err, cfg.AdminListen)
		}
		return err
	}
	if err := connect(ctx, c.db); err != nil {
		return err
	}
	libs, err := discoveredLibraries(ctx, cfg, c.db)
	if err != nil {
		return err
	}
	plan := wire.Plan(cfg, libs)
	if c.library != "" && plan.Jobs(c.library) == nil {
		return fmt.Errorf("--library %s: no such library in %s, nor a shared drive discovered (domains[].sharedDrives)", c.library, c.configPath)
	}
	s, _, err := wire.NewSyncer(cfg, libs, c.db, logger, prometheus.NewRegistry())
	if err != nil {
		return err
	}
	runner := schedule.Runner{Syncer: s, Leases: c.db.Leases()}
	mode := fm.SyncAuto
	if c.full {
		mode = fm.SyncFull
	}
	var failed []error
	for _, job := range plan.Jobs(c.library) {
		ev, err := runner.Run(ctx, job, mode, func(p fm.Progress) { c.progress.update(job, p) }, schedule.RunOptions{LeaseWait: c.wait})
		if err != nil {
			ev.Error = err.Error()
		}
		if err := c.show(ev); err != nil {
			failed = append(failed, err)
		} else if ev.Result != nil {
			keepCatalog(ctx, c.db, logger, ev.Result.Library)
		}
	}
	return c.joinFailures(failed)
}

// keepCatalog has an index that keeps the API's catalogs keep that of a
// library just synced (catalog.Keep), so that a daemon starting next reads
// it rather than the whole library. A failure only costs that daemon's
// start the time of reading the library, so it is logged.
func keepCatalog(ctx context.Context, db fm.Index, logger *slog.Logger, libraryID string) {
	if err := catalog.Keep(ctx, db, libraryID); err != nil {
		logger.Warn("could not keep the library's catalog in the index; the next start reads the library whole",
			"library", libraryID, "err", err)
	}
}

// discoveredLibraries returns the set of cfg's libraries and of the shared
// drives discovered, as db holds them.
func discoveredLibraries(ctx context.Context, cfg *config.Config, db fm.Index) (*fm.LibrarySet, error) {
	libs := wire.Libraries(cfg)
	d := discovery.New(discovery.Options{Rules: cfg.SharedDriveDiscoveries(), Libraries: libs, Store: db, Leases: db.Leases()})
	if err := d.Load(ctx); err != nil {
		return nil, fmt.Errorf("read the shared drives discovered: %w", err)
	}
	return libs, nil
}

// show shows an event: progress, or a job's outcome (an error if it failed).
func (c *syncCommand) show(ev schedule.Event) error {
	if !ev.Final() {
		c.progress.update(ev.Job, *ev.Progress)
		return nil
	}
	c.progress.done(ev.Job)
	switch {
	case ev.Error != "":
		c.progress.println(c.stderr, fmt.Sprintf("%s: failed: %s", ev.Job, ev.Error))
		return jobFailed(ev.Job)
	case ev.Directory != nil:
		c.progress.println(c.stdout, directoryLine(ev.Job, ev.Directory))
	case ev.Result != nil:
		c.progress.println(c.stdout, summary(ev.Result))
	}
	return nil
}

// directoryLine is a directory sync's outcome in a line.
func directoryLine(job string, d *fm.DirectoryResult) string {
	return fmt.Sprintf("%s: %s, %s, %s, %s", job, count(d.Users, "user"), count(d.Groups, "group"),
		count(d.Calls, "Directory call"), d.Duration.Round(time.Millisecond))
}

// jobFailed is the error of a job whose failure was shown already.
type jobFailed string

func (j jobFailed) Error() string { return string(j) }

// summary is a library sync's outcome in a line; a full sync says why it
// read the whole library, in how many createdTime ranges when more than
// one, and why they fell back to one sequential listing if they did.
func summary(r *fm.SyncResult) string {
	if r.Full {
		why := ""
		if r.FullReason != "" {
			why = " (" + string(r.FullReason) + ")"
		}
		calls := count(r.Calls, "Drive call")
		if r.Ranges > 1 {
			calls += fmt.Sprintf(" in %d createdTime ranges", r.Ranges)
		}
		if r.ListingFallback != "" {
			calls += ", then one sequential listing (" + r.ListingFallback + ")"
		}
		return fmt.Sprintf("%s: full sync%s: %s, %s, drift %d, %s, %s", r.Library, why, count(r.Folders, "folder"),
			count(r.Permissions, "permission"), r.Drift.Total(), calls, r.Duration.Round(time.Millisecond))
	}
	return fmt.Sprintf("%s: incremental sync: %s, %s written or removed, %s, %s, %s", r.Library, count(r.Changes, "change"),
		count(r.Applied, "folder"), count(r.Folders, "folder"), count(r.Calls, "Drive call"), r.Duration.Round(time.Millisecond))
}

// joinFailures says which jobs failed, in a line: each job's reason was
// shown when it failed.
func (c *syncCommand) joinFailures(failed []error) error {
	if len(failed) == 0 {
		return nil
	}
	names := make([]string, len(failed))
	for i, err := range failed {
		names[i] = err.Error()
	}
	return fmt.Errorf("%d of %s failed (%s); the reasons are above", len(failed), count(max(c.jobs, len(failed)), "sync"), strings.Join(names, ", "))
}

func (c *syncCommand) Close() error {
	if c.db == nil {
		return nil
	}
	return c.db.Close()
}
