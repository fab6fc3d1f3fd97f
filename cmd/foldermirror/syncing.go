package main

import (
	"log/slog"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/internal/wire"
	"github.com/foldermirror/foldermirror/push"
	"github.com/foldermirror/foldermirror/schedule"
	"github.com/prometheus/client_golang/prometheus"
)

// newSyncing returns the scheduler of cfg's directories and of the
// libraries libs on cfg's schedules,
// running its syncs under db's leases and, when push.address is set, the
// push service that has it sync what Drive notifies (and tries refused
// watches again at each incremental tick). Both read Google with the same
// clients; their metrics, and the clients', are registered with reg.
func newSyncing(cfg *config.Config, libs *fm.LibrarySet, db fm.Index, logger *slog.Logger, reg prometheus.Registerer) (*schedule.Scheduler, *push.Service, error) {
	s, clients, err := wire.NewSyncer(cfg, libs, db, logger, reg)
	if err != nil {
		return nil, nil, err
	}
	scheduler, err := schedule.New(wire.SchedulerOptions(cfg, schedule.Options{
		Plan:    schedule.Plan{Libraries: libs},
		Syncer:  s,
		Leases:  db.Leases(),
		Index:   db,
		Logger:  logger,
		Metrics: schedule.NewMetrics(reg),
	}))
	if err != nil || !cfg.Push.Enabled() {
		return scheduler, nil, err
	}
	svc, err := push.New(wire.PushOptions(cfg, push.Options{
		Libraries: libs,
		Watcher:   push.NewDriveWatcher(clients.Drive),
		Channels:  db,
		Leases:    db.Leases(),
		Notifier:  scheduler,
		Logger:    logger,
		Metrics:   push.NewMetrics(reg),
	}))
	if err != nil {
		return scheduler, nil, err // stopped with the daemon's other parts
	}
	scheduler.OnIncrementalTick(svc.Retry)
	return scheduler, svc, nil
}
