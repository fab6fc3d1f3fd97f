package syncer

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	fm "github.com/foldermirror/foldermirror"
	"github.com/robfig/cron/v3"
)

// Scheduler runs syncs: at start for libraries never synced, then on the
// configured cron schedules. A library has at most one run at a time (a run
// due while one is going is skipped), and at most storage.concurrency
// libraries sync at once.
type Scheduler struct {
	syncer *Syncer
	logger *slog.Logger
	cron   *cron.Cron
	slots  chan struct{}

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	running map[string]bool
}

// NewScheduler returns a scheduler of s's libraries; Start starts it.
func NewScheduler(s *Syncer) (*Scheduler, error) {
	ctx, cancel := context.WithCancel(context.Background())
	sc := &Scheduler{
		syncer:  s,
		logger:  s.logger,
		cron:    cron.New(),
		slots:   make(chan struct{}, max(1, s.cfg.Storage.Concurrency)),
		ctx:     ctx,
		cancel:  cancel,
		running: map[string]bool{},
	}
	for _, job := range []struct {
		key, spec string
		mode      Mode
	}{
		{"schedule.incremental", s.cfg.Schedule.Incremental, Auto},
		{"schedule.full", s.cfg.Schedule.Full, Full},
	} {
		if _, err := sc.cron.AddFunc(job.spec, func() { sc.triggerAll(job.mode) }); err != nil {
			cancel()
			return nil, fmt.Errorf("%s %q: %w", job.key, job.spec, err)
		}
	}
	return sc, nil
}

// Start syncs the directories, and the libraries that were never synced,
// and starts the schedules.
func (sc *Scheduler) Start() {
	sc.triggerDirectories()
	for _, lib := range sc.syncer.cfg.Libraries {
		if _, err := sc.syncer.index.Library(sc.ctx, lib.ID); fm.ErrorCode(err) == fm.ENOTFOUND {
			sc.Trigger(lib.ID, Full)
		}
	}
	sc.cron.Start()
}

// triggerAll syncs every library; a full sync brings the directories too.
func (sc *Scheduler) triggerAll(mode Mode) {
	if mode == Full {
		sc.triggerDirectories()
	}
	for _, lib := range sc.syncer.cfg.Libraries {
		sc.Trigger(lib.ID, mode)
	}
}

// triggerDirectories syncs the directory of every domain with an adminEmail.
func (sc *Scheduler) triggerDirectories() {
	for _, dom := range sc.syncer.cfg.Domains {
		if dom.AdminEmail != "" {
			sc.start(directoryJob+dom.Name, func(ctx context.Context) error {
				_, err := sc.syncer.SyncDirectory(ctx, dom.Name)
				return err
			})
		}
	}
}

// directoryJob prefixes the job names of directory syncs (library IDs
// cannot contain ':').
const directoryJob = "directory:"

// Trigger starts a sync of one library unless one is running; it reports
// whether it started one.
func (sc *Scheduler) Trigger(libraryID string, mode Mode) bool {
	return sc.start(libraryID, func(ctx context.Context) error {
		_, err := sc.syncer.Sync(ctx, libraryID, mode, nil)
		return err
	})
}

// start runs job in the background unless a job of that name is running.
func (sc *Scheduler) start(name string, job func(context.Context) error) bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.running[name] || sc.ctx.Err() != nil {
		return false
	}
	sc.running[name] = true
	sc.wg.Add(1)
	go sc.run(name, job)
	return true
}

func (sc *Scheduler) run(name string, job func(context.Context) error) {
	defer sc.wg.Done()
	defer func() {
		sc.mu.Lock()
		delete(sc.running, name)
		sc.mu.Unlock()
	}()
	select {
	case sc.slots <- struct{}{}:
		defer func() { <-sc.slots }()
	case <-sc.ctx.Done():
		return
	}
	if err := job(sc.ctx); err != nil && sc.ctx.Err() == nil {
		sc.logger.Error("sync failed; the last good data is still served", "job", name, "err", err)
	}
}

// Stop stops the schedules, cancels running syncs (which leave the index as
// it was) and waits for them to end.
func (sc *Scheduler) Stop() {
	<-sc.cron.Stop().Done()
	sc.cancel()
	sc.wg.Wait()
}
