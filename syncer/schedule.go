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

// Start syncs the libraries that were never synced and starts the schedules.
func (sc *Scheduler) Start() {
	for _, lib := range sc.syncer.cfg.Libraries {
		if _, err := sc.syncer.index.Library(sc.ctx, lib.ID); fm.ErrorCode(err) == fm.ENOTFOUND {
			sc.Trigger(lib.ID, Full)
		}
	}
	sc.cron.Start()
}

func (sc *Scheduler) triggerAll(mode Mode) {
	for _, lib := range sc.syncer.cfg.Libraries {
		sc.Trigger(lib.ID, mode)
	}
}

// Trigger starts a sync of one library unless one is running; it reports
// whether it started one.
func (sc *Scheduler) Trigger(libraryID string, mode Mode) bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.running[libraryID] || sc.ctx.Err() != nil {
		return false
	}
	sc.running[libraryID] = true
	sc.wg.Add(1)
	go sc.run(libraryID, mode)
	return true
}

func (sc *Scheduler) run(libraryID string, mode Mode) {
	defer sc.wg.Done()
	defer func() {
		sc.mu.Lock()
		delete(sc.running, libraryID)
		sc.mu.Unlock()
	}()
	select {
	case sc.slots <- struct{}{}:
		defer func() { <-sc.slots }()
	case <-sc.ctx.Done():
		return
	}
	if _, err := sc.syncer.Sync(sc.ctx, libraryID, mode, nil); err != nil && sc.ctx.Err() == nil {
		sc.logger.Error("sync failed; the last good tree is still served", "library", libraryID, "err", err)
	}
}

// Stop stops the schedules, cancels running syncs (which leave the index as
// it was) and waits for them to end.
func (sc *Scheduler) Stop() {
	<-sc.cron.Stop().Done()
	sc.cancel()
	sc.wg.Wait()
}
