package main

import (
	"log/slog"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/internal/wire"
	"github.com/foldermirror/foldermirror/schedule"
	"github.com/foldermirror/foldermirror/syncer"
	"github.com/prometheus/client_golang/prometheus"
)

// newScheduler returns the scheduler of cfg's plan on cfg's schedules,
// running s's syncs under db's leases; its metrics are registered with reg.
func newScheduler(cfg *config.Config, s *syncer.Syncer, db fm.Index, logger *slog.Logger, reg prometheus.Registerer) (*schedule.Scheduler, error) {
	return schedule.New(wire.SchedulerOptions(cfg, schedule.Options{
		Syncer:  s,
		Leases:  db.Leases(),
		Index:   db,
		Logger:  logger,
		Metrics: schedule.NewMetrics(reg),
	}))
}
