package main

import (
	"log/slog"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/discovery"
	"github.com/foldermirror/foldermirror/internal/wire"
	"github.com/foldermirror/foldermirror/push"
	"github.com/foldermirror/foldermirror/schedule"
	"github.com/prometheus/client_golang/prometheus"
)

// syncing are the daemon's parts that read Google, with the same clients:
// the scheduler of the syncs, the discovery of shared drives and, when
// push.address is set, the push service.
type syncing struct {
	scheduler *schedule.Scheduler
	discovery *discovery.Discoverer
	push      *push.Service // nil: push off
}

// newSyncing returns the scheduler of cfg's directories and of the
// libraries libs on cfg's schedules, running its syncs under db's leases;
// the discoverer that keeps the discovered libraries of libs; and, when
// push.address is set, the push service that has them sync what Drive
// notifies. At each incremental tick, the drives are discovered again and
// refused watches tried again. Their metrics, and the clients', are
// registered with reg.
func newSyncing(cfg *config.Config, libs *fm.LibrarySet, db fm.Index, logger *slog.Logger, reg prometheus.Registerer) (*syncing, error) {
	s, clients, err := wire.NewSyncer(cfg, libs, db, logger, reg)
	if err != nil {
		return nil, err
	}
	out := &syncing{discovery: discovery.New(discovery.Options{Rules: cfg.SharedDriveDiscoveries(), Libraries: libs,
		Store: db, Leases: db.Leases(), Drive: s, Logger: logger, Metrics: discovery.NewMetrics(reg)})}
	out.scheduler, err = schedule.New(wire.SchedulerOptions(cfg, schedule.Options{
		Plan:    schedule.Plan{Libraries: libs},
		Syncer:  s,
		Leases:  db.Leases(),
		Index:   db,
		Logger:  logger,
		Metrics: schedule.NewMetrics(reg),
	}))
	if err != nil {
		return nil, err
	}
	if cfg.Push.Enabled() {
		out.push, err = push.New(wire.PushOptions(cfg, push.Options{
			Libraries: libs,
			Watcher:   push.NewDriveWatcher(clients.Drive),
			Channels:  db,
			Leases:    db.Leases(),
			Notifier:  out.scheduler,
			Discovery: out.discovery,
			Logger:    logger,
			Metrics:   push.NewMetrics(reg),
		}))
		if err != nil {
			out.scheduler.Stop()
			return nil, err
		}
	}
	out.scheduler.OnIncrementalTick(out.incrementalTick)
	return out, nil
}

// incrementalTick is what the daemon does at each incremental tick but
// sync: discover the drives again (unless another replica just did), and
// try refused watches again.
func (s *syncing) incrementalTick(within time.Duration) {
	s.discovery.Tick(within)
	if s.push != nil {
		s.push.Retry()
	}
}
