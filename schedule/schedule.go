// Package schedule runs the syncs: each job (a library's sync, a domain's
// directory's) under its lease, at start, on the cron schedules and on
// request, one run of a job at a time, and keeps what it knows of them for
// the admin listener.
package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/internal/timeq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/robfig/cron/v3"
)

// Syncer syncs libraries and directories (syncer.Syncer).
type Syncer interface {
	// Sync brings one library up to date, reporting its progress.
	Sync(ctx context.Context, req fm.SyncRequest, progress fm.ProgressFunc) (*fm.SyncResult, error)
	// SyncDirectory reads a domain's directory and replaces the index's
	// with it, under fence.
	SyncDirectory(ctx context.Context, domain string, fence fm.Fence) (*fm.DirectoryResult, error)
}

// Index is what the scheduler reads of the index.
type Index interface {
	// Library returns the state of a synced library; ENOTFOUND if it was
	// never synced.
	Library(ctx context.Context, libraryID string) (*fm.LibraryState, error)
}

// Options say what a scheduler runs, when, and with what.
type Options struct {
	// Incremental and Full are the cron specs of the incremental and the
	// full schedules (schedule.incremental, schedule.full).
	Incremental, Full string
	// Concurrency bounds the runs that go at once (storage.concurrency); at
	// least one.
	Concurrency int
	// Plan names the jobs: the directories and the libraries.
	Plan Plan
	// Syncer runs the syncs, each under the lease of its job, which Leases
	// give.
	Syncer Syncer
	Leases fm.Leases
	// Index tells which libraries were never synced.
	Index Index
	// PollsPerSecond caps the rate at which a large incremental round
	// starts its syncs (each a changes.list, the safety net of push): a
	// share of storage.requestsPerSecond; 0: no cap but the spread.
	PollsPerSecond float64
	Logger         *slog.Logger
	// Metrics records how runs went; unregistered ones by default.
	Metrics *Metrics
}

// Scheduler runs syncs: at start the directories and the libraries never
// synced, then on the configured cron schedules, on request, and when Drive
// says a library changed (Notify). A library has at most one run at a time
// (a run due while one is going is skipped; a request joins it; a
// notification leaves one incremental run pending, to start when it ends).
// storage.concurrency bounds both how many runs go at once and how many
// calls each run makes in parallel: it is not a cap on the calls in flight
// over all runs.
type Scheduler struct {
	runner  Runner
	plan    Plan
	index   Index
	metrics *Metrics
	logger  *slog.Logger
	cron    *cron.Cron
	slots   chan struct{}
	// minPollInterval is the least time between two polls of a spread
	// round (Options.PollsPerSecond).
	minPollInterval time.Duration
	// entries are the cron entries of the incremental and full schedules.
	incremental, full cron.EntryID

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	running map[string]*job
	status  map[string]*JobStatus
	// pending are the libraries with a notified run to start when their
	// running one ends.
	pending map[string]bool
	// due are the scheduled runs waiting for their time and a slot; active
	// counts the runs launched that have not ended; wake has the dispatcher
	// look at due again.
	due    timeq.Queue[dueRun]
	active int
	wake   chan struct{}
	// now is time.Now (tests replace it).
	now func() time.Time
	// notifyGap is how long a pending notified run waits (see notifyGap).
	notifyGap time.Duration
	// after is time.After (tests replace it).
	after func(time.Duration) <-chan time.Time
	// onSynced is told of each library sync that succeeded.
	onSynced func(libraryID string)
	// onIncrementalTick is called at each tick of the incremental schedule.
	onIncrementalTick func(within time.Duration)
}

// Event is what a sync reports to those following it: progress, then, last,
// its result or its error.
type Event struct {
	Job       string              `json:"job"`
	Progress  *fm.Progress        `json:"progress,omitempty"`
	Result    *fm.SyncResult      `json:"result,omitempty"`
	Directory *fm.DirectoryResult `json:"directory,omitempty"`
	Error     string              `json:"error,omitempty"`
}

// Final tells whether the event is a job's last.
func (e *Event) Final() bool { return e.Progress == nil }

// job is a sync under way and who follows it.
type job struct {
	name string
	// ctx is the run's; cancel ends it (the library left the plan).
	ctx       context.Context
	cancel    context.CancelFunc
	mode      fm.SyncMode
	opts      RunOptions
	followers []follower
	// settle, for a notified run started as another ended, is how long it
	// waits before it syncs; settling is true meanwhile (a notification
	// then needs no run after it: this one has read nothing yet).
	settle   time.Duration
	settling bool
}

type follower struct {
	ctx    context.Context
	events chan<- Event
}

// JobStatus is what the scheduler knows of a library's (or a directory's)
// syncs.
type JobStatus struct {
	Name            string     `json:"name"`
	Running         bool       `json:"running"`
	LastFull        *RunStatus `json:"lastFull,omitempty"`
	LastIncremental *RunStatus `json:"lastIncremental,omitempty"`
	LastError       string     `json:"lastError,omitempty"`
	LastErrorAt     time.Time  `json:"lastErrorAt,omitzero"`
	NextRun         time.Time  `json:"nextRun,omitzero"`
}

// RunStatus is one finished sync.
type RunStatus struct {
	Started     time.Time     `json:"started"`
	Duration    time.Duration `json:"durationNanos"`
	Folders     int           `json:"folders,omitempty"`
	Permissions int           `json:"permissions,omitempty"`
	Users       int           `json:"users,omitempty"`
	Groups      int           `json:"groups,omitempty"`
	Calls       int64         `json:"calls"`
	Drift       int           `json:"drift"`
	Changes     int           `json:"changes,omitempty"`
	// UnreadableGroups are a directory's nested groups its admin may not
	// read, which contribute no members.
	UnreadableGroups []string `json:"unreadableGroups,omitempty"`
}

// New returns a scheduler of opts' plan; Start starts it.
func New(opts Options) (*Scheduler, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(prometheus.NewRegistry())
	}
	ctx, cancel := context.WithCancel(context.Background())
	sc := &Scheduler{
		runner:  Runner{Syncer: opts.Syncer, Leases: opts.Leases},
		plan:    opts.Plan,
		index:   opts.Index,
		metrics: opts.Metrics,
		logger:  opts.Logger,
		cron:    cron.New(),
		slots:   make(chan struct{}, max(1, opts.Concurrency)),
		ctx:     ctx,
		cancel:  cancel,
		running: map[string]*job{},
		status:  map[string]*JobStatus{},
		pending: map[string]bool{},
		wake:    make(chan struct{}, 1),
		now:     time.Now,

		notifyGap: notifyGap,
		after:     time.After,
	}
	if opts.PollsPerSecond > 0 {
		sc.minPollInterval = time.Duration(float64(time.Second) / opts.PollsPerSecond)
	}
	var err error
	if sc.incremental, err = sc.cron.AddFunc(opts.Incremental, sc.incrementalTick); err != nil {
		cancel()
		return nil, fmt.Errorf("schedule.incremental %q: %w", opts.Incremental, err)
	}
	if sc.full, err = sc.cron.AddFunc(opts.Full, func() { sc.triggerAll(fm.SyncFull, sc.scheduled("full", sc.full)) }); err != nil {
		cancel()
		return nil, fmt.Errorf("schedule.full %q: %w", opts.Full, err)
	}
	if sc.plan.Libraries != nil {
		sc.plan.Libraries.Subscribe(sc.librariesChanged)
	}
	sc.wg.Add(1)
	go sc.dispatch()
	return sc, nil
}

// OnSynced has fn called (in the scheduler's goroutine) after each library
// sync that succeeded; set it before Start.
func (sc *Scheduler) OnSynced(fn func(libraryID string)) { sc.onSynced = fn }

// incrementalTick is what the incremental schedule does at each tick: sync
// every library (a large round spread over the period), and call
// onIncrementalTick in a goroutine of its own.
func (sc *Scheduler) incrementalTick() {
	opts := sc.scheduled("incremental", sc.incremental)
	sc.triggerAll(fm.SyncAuto, opts)
	if fn := sc.onIncrementalTick; fn != nil {
		go fn(opts.ScheduleWithin)
	}
}

// Jobs names what a sync of library brings (see Plan.Jobs).
func (sc *Scheduler) Jobs(library string) []string { return sc.plan.Jobs(library) }

// Start syncs the directories, and the libraries that were never synced,
// and starts the schedules. With an index shared by replicas, a replica
// leaves these first syncs to another that runs them already.
func (sc *Scheduler) Start() {
	if sc.ctx.Err() != nil {
		return // stopped already
	}
	sc.triggerDirectories(sc.scheduled("directory", sc.full))
	sc.syncNeverSynced(sc.plan.libraryIDs())
	sc.cron.Start()
}

// syncNeverSynced queues a first full sync of each of the libraries that
// was never synced. The run asks again once it holds the lease: with an
// index shared by replicas, another may have synced the library meanwhile.
func (sc *Scheduler) syncNeverSynced(ids []string) {
	for _, lib := range ids {
		if never, _ := sc.neverSynced(sc.ctx, lib); never {
			sc.trigger(lib, fm.SyncFull, RunOptions{Schedule: "initial",
				Needed: func(ctx context.Context) (bool, error) { return sc.neverSynced(ctx, lib) }})
		}
	}
}

// neverSynced tells whether the index holds no state of the library.
func (sc *Scheduler) neverSynced(ctx context.Context, library string) (bool, error) {
	_, err := sc.index.Library(ctx, library)
	switch fm.ErrorCode(err) {
	case fm.ENOTFOUND:
		return true, nil
	case "":
		return false, nil
	}
	return false, err
}

// librariesChanged follows the plan's library set: a library added is
// synced whole if it never was; one removed has its runs cancelled and
// forgotten.
func (sc *Scheduler) librariesChanged(c fm.LibrarySetChange) {
	sc.mu.Lock()
	for _, l := range c.Removed {
		sc.due.Remove(l.ID)
		delete(sc.pending, l.ID)
		delete(sc.status, l.ID)
		if j := sc.running[l.ID]; j != nil {
			j.cancel()
		}
		sc.metrics.forget(l.ID)
	}
	sc.mu.Unlock()
	if len(c.Added) == 0 {
		return
	}
	ids := make([]string, len(c.Added))
	for i := range c.Added {
		ids[i] = c.Added[i].ID
	}
	sc.wg.Add(1)
	go func() { // reads the index: never in the set's goroutine
		defer sc.wg.Done()
		sc.syncNeverSynced(ids)
	}()
}

// scheduled returns the options of a run of the schedule entry id, of that
// kind: with an index shared by replicas, a run of that kind is skipped if
// another began since the entry last fired (replicas' schedules fire at
// their own times: together, they run a schedule as often as one would).
func (sc *Scheduler) scheduled(kind string, id cron.EntryID) RunOptions {
	now := time.Now()
	period := sc.cron.Entry(id).Schedule.Next(now).Sub(now)
	return RunOptions{Schedule: kind, ScheduleWithin: period * 9 / 10}
}

// triggerAll queues a sync of every library, a full sync the directories
// too. An incremental round of many libraries is spread over the period
// until the next, each library at its turn.
func (sc *Scheduler) triggerAll(mode fm.SyncMode, opts RunOptions) {
	if mode == fm.SyncFull {
		dirs := opts
		dirs.Schedule = "directory"
		sc.triggerDirectories(dirs)
	}
	ids := sc.plan.libraryIDs()
	var interval time.Duration
	if mode != fm.SyncFull {
		interval = spreadInterval(len(ids), sc.period(sc.incremental), sc.minPollInterval)
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.ctx.Err() != nil {
		return
	}
	start := sc.now()
	for i, lib := range ids {
		sc.enqueue(lib, mode, opts, start.Add(time.Duration(i)*interval))
	}
}

// period is the time from now to the next run of the schedule entry id.
func (sc *Scheduler) period(id cron.EntryID) time.Duration {
	now := time.Now()
	return sc.cron.Entry(id).Schedule.Next(now).Sub(now)
}

func (sc *Scheduler) triggerDirectories(opts RunOptions) {
	for _, name := range sc.plan.directoryJobs() {
		sc.trigger(name, fm.SyncFull, opts)
	}
}

// trigger queues a run of a job nobody follows, to start as soon as a
// slot is free, unless it runs already then.
func (sc *Scheduler) trigger(name string, mode fm.SyncMode, opts RunOptions) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.ctx.Err() == nil {
		sc.enqueue(name, mode, opts, sc.now())
	}
}

// Trigger starts a sync of one library unless one is running; it reports
// whether it started one.
func (sc *Scheduler) Trigger(libraryID string, mode fm.SyncMode) bool {
	started, _ := sc.Follow(context.Background(), libraryID, mode, nil)
	return started
}

// Follow starts a sync of a library (or, for "directory:DOMAIN", of a
// domain's directory) in mode, or joins the one running, and sends its
// events to events (if not nil) until it ends, then closes events. Progress
// events are dropped when events is full; the final one waits for room
// while ctx lasts. It reports whether it started a sync, and an error if
// there is nothing of that name to sync or the scheduler stopped. With an
// index shared by replicas, a sync whose lease another replica holds fails
// at once, naming it.
func (sc *Scheduler) Follow(ctx context.Context, name string, mode fm.SyncMode, events chan<- Event) (started bool, err error) {
	return sc.follow(ctx, name, mode, RunOptions{}, events)
}

// follow is Follow with run options for a sync it starts.
func (sc *Scheduler) follow(ctx context.Context, name string, mode fm.SyncMode, opts RunOptions, events chan<- Event) (started bool, err error) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if !sc.plan.has(name) {
		return false, fm.Errorf(fm.ENOTFOUND, "Nothing to sync is named %s.", name)
	}
	if sc.ctx.Err() != nil {
		return false, fm.Errorf(fm.EUNAVAILABLE, "The daemon is shutting down.")
	}
	j, running := sc.running[name]
	if !running {
		j = sc.start(name, mode, opts)
	}
	if events != nil {
		j.followers = append(j.followers, follower{ctx: ctx, events: events})
	}
	return !running, nil
}

// start starts a job of that name, which does not run. Call with sc.mu
// held, the scheduler not stopped.
func (sc *Scheduler) start(name string, mode fm.SyncMode, opts RunOptions) *job {
	return sc.launch(&job{name: name, mode: mode, opts: opts})
}

// launch runs j, whose name does not run, in place of any queued run of
// it. Call with sc.mu held, the scheduler not stopped.
func (sc *Scheduler) launch(j *job) *job {
	name := j.name
	sc.due.Remove(name)
	j.ctx, j.cancel = context.WithCancel(sc.ctx)
	sc.running[name] = j
	sc.statusOf(name).Running = true
	sc.active++
	sc.wg.Add(1)
	go sc.execute(j)
	return j
}

// statusOf returns the status of the job of that name, made if it has
// none yet. Call with sc.mu held.
func (sc *Scheduler) statusOf(name string) *JobStatus {
	st := sc.status[name]
	if st == nil {
		st = &JobStatus{Name: name}
		sc.status[name] = st
	}
	return st
}

// execute runs a job in a slot and tells its followers how it went.
func (sc *Scheduler) execute(j *job) {
	defer sc.wg.Done()
	final, err := sc.inSlot(j)
	if err != nil {
		final = Event{Job: j.name, Error: err.Error()}
		if errors.Is(err, ErrSkipped) {
			sc.logger.Debug("scheduled sync left to another process", "job", j.name)
		} else if !errors.Is(err, context.Canceled) {
			sc.logger.Error(sc.failureMessage(j.name), "job", j.name, "err", err)
		}
	}
	if err == nil && final.Result != nil && sc.onSynced != nil {
		sc.onSynced(j.name)
	}
	j.cancel()
	sc.mu.Lock()
	delete(sc.running, j.name)
	sc.active--
	sc.wakeDispatcher()
	if sc.plan.has(j.name) {
		sc.record(j, final, err)
		sc.startPending(j.name)
	}
	followers := j.followers
	j.followers = nil
	sc.mu.Unlock()
	for _, f := range followers {
		select {
		case f.events <- final:
		case <-f.ctx.Done():
		}
		close(f.events)
	}
}

// failureMessage says what a failed job leaves served: the last good tree
// of a library synced before, nothing of one never synced.
func (sc *Scheduler) failureMessage(name string) string {
	if strings.HasPrefix(name, directoryJob) {
		return "directory sync failed; the users and groups of the last one that succeeded, if any, are still used"
	}
	if _, err := sc.index.Library(context.Background(), name); fm.ErrorCode(err) == fm.ENOTFOUND {
		return "sync failed; the library was never synced, so the API answers 503 for it until a sync succeeds"
	}
	return "sync failed; the last good data is still served"
}

func (sc *Scheduler) inSlot(j *job) (Event, error) {
	if err := sc.settle(j); err != nil {
		return Event{}, err
	}
	select {
	case sc.slots <- struct{}{}:
		defer func() { <-sc.slots }()
	case <-j.ctx.Done():
		return Event{}, j.ctx.Err()
	}
	started := time.Now()
	ev, err := sc.runner.Run(j.ctx, j.name, j.mode, func(p fm.Progress) { sc.broadcast(j, p) }, j.opts)
	sc.observe(j, ev, err, started)
	return ev, err
}

// observe records a finished job in the metrics.
func (sc *Scheduler) observe(j *job, ev Event, err error, started time.Time) {
	m := sc.metrics
	kind := jobKind(j, ev)
	if errors.Is(err, ErrSkipped) || !sc.plan.has(j.name) {
		return // a library that left the set has no series any more
	}
	if err != nil {
		m.failures.WithLabelValues(j.name, kind).Inc()
		return
	}
	m.duration.WithLabelValues(kind).Observe(time.Since(started).Seconds())
	m.syncs.WithLabelValues(j.name, kind).Inc()
	m.lastSuccess.WithLabelValues(j.name, kind).SetToCurrentTime()
	if r := ev.Result; r != nil {
		m.folders.WithLabelValues(j.name).Set(float64(r.Folders))
		m.permissions.WithLabelValues(j.name).Set(float64(r.Permissions))
		if r.Full {
			m.drift.WithLabelValues(j.name).Set(float64(r.Drift.Total()))
		}
	}
}

// jobKind is "directory", "full" or "incremental" (an Auto sync that
// failed counts as incremental).
func jobKind(j *job, ev Event) string {
	switch {
	case strings.HasPrefix(j.name, directoryJob):
		return "directory"
	case ev.Result != nil && ev.Result.Full, ev.Result == nil && j.mode == fm.SyncFull:
		return "full"
	}
	return "incremental"
}

// broadcast sends progress to a job's followers, dropping it for those
// whose channel is full: a slow follower never holds a sync up.
func (sc *Scheduler) broadcast(j *job, p fm.Progress) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	for _, f := range j.followers {
		select {
		case f.events <- Event{Job: j.name, Progress: &p}:
		default:
		}
	}
}

// record keeps the outcome of a job in its status. Call with sc.mu held.
func (sc *Scheduler) record(j *job, final Event, err error) {
	st := sc.statusOf(j.name)
	st.Running = false
	if errors.Is(err, ErrSkipped) {
		return
	}
	if err != nil {
		st.LastError, st.LastErrorAt = err.Error(), time.Now().UTC()
		return
	}
	st.LastError, st.LastErrorAt = "", time.Time{}
	switch {
	case final.Directory != nil:
		d := final.Directory
		st.LastFull = &RunStatus{Started: time.Now().Add(-d.Duration).UTC(), Duration: d.Duration, Users: d.Users, Groups: d.Groups,
			UnreadableGroups: d.UnreadableGroups, Calls: d.Calls}
	case final.Result != nil:
		r := final.Result
		run := &RunStatus{Started: time.Now().Add(-r.Duration).UTC(), Duration: r.Duration, Folders: r.Folders,
			Permissions: r.Permissions, Calls: r.Calls, Drift: r.Drift.Total(), Changes: r.Changes}
		if r.Full {
			st.LastFull = run
		} else {
			st.LastIncremental = run
		}
	}
}

// Status returns the status of every library and directory, by name.
func (sc *Scheduler) Status() []JobStatus { return sc.statusNow(sc.plan.Jobs("")) }

// statusNow returns the status of the jobs names, sorted by name.
func (sc *Scheduler) statusNow(names []string) []JobStatus {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	next := sc.cron.Entry(sc.incremental).Next
	if full := sc.cron.Entry(sc.full).Next; next.IsZero() || (!full.IsZero() && full.Before(next)) {
		next = full
	}
	out := make([]JobStatus, 0, len(names))
	for _, name := range names {
		s := JobStatus{Name: name}
		if st := sc.status[name]; st != nil {
			s = *st
		}
		s.NextRun = next
		if strings.HasPrefix(name, directoryJob) {
			s.NextRun = sc.cron.Entry(sc.full).Next
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, k int) bool { return out[i].Name < out[k].Name })
	return out
}

// Stop stops the schedules, cancels running syncs (which leave the index as
// it was) and waits for them to end; pending runs never start.
func (sc *Scheduler) Stop() {
	<-sc.cron.Stop().Done()
	sc.mu.Lock() // no job starts once Wait may have begun
	sc.cancel()
	sc.mu.Unlock()
	sc.wg.Wait()
}

// JobStatus returns the status of one job and true, or false if the plan
// has no job of that name.
func (sc *Scheduler) JobStatus(name string) (JobStatus, bool) {
	if !sc.plan.has(name) {
		return JobStatus{}, false
	}
	for _, st := range sc.statusNow([]string{name}) {
		return st, true
	}
	return JobStatus{}, false
}
