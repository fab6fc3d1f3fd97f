package main

import (
	"log/slog"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/googleclient"
	"github.com/foldermirror/foldermirror/schedule"
	"github.com/foldermirror/foldermirror/syncer"
	"github.com/prometheus/client_golang/prometheus"
)

// newSyncer returns the syncer of cfg's libraries and domains, reading
// Google as cfg's storage says and writing into idx; its metrics, and its
// Google clients', are registered with reg.
func newSyncer(cfg *config.Config, idx syncer.Index, logger *slog.Logger, reg prometheus.Registerer) (*syncer.Syncer, error) {
	gopts := googleOptions(cfg)
	gopts.Metrics = googleclient.NewMetrics(reg)
	clients, err := googleclient.New(gopts)
	if err != nil {
		return nil, err
	}
	opts := syncerOptions(cfg)
	opts.Logger = logger
	opts.Metrics = syncer.NewMetrics(reg)
	return syncer.New(idx, clients, opts), nil
}

// googleOptions are the options of the Google clients cfg's storage
// describes.
func googleOptions(cfg *config.Config) googleclient.Options {
	return googleclient.Options{
		CredentialsFile:   cfg.Storage.CredentialsFile,
		DriveEndpoint:     cfg.Storage.Endpoint,
		DirectoryEndpoint: cfg.Storage.DirectoryEndpoint,
		RequestsPerSecond: cfg.Storage.RequestsPerSecond,
	}
}

// syncerOptions are the options of a syncer of cfg's libraries and domains.
func syncerOptions(cfg *config.Config) syncer.Options {
	opts := syncer.Options{Libraries: cfg.CoreLibraries(), Concurrency: cfg.Storage.Concurrency}
	for _, d := range cfg.Domains {
		opts.Domains = append(opts.Domains, syncer.Domain{Name: d.Name, AdminEmail: d.AdminEmail})
	}
	return opts
}

// planOf names what there is to sync: the directories of cfg's domains
// that have an adminEmail, and cfg's libraries.
func planOf(cfg *config.Config) schedule.Plan {
	var p schedule.Plan
	for _, d := range cfg.Domains {
		if d.AdminEmail != "" {
			p.Directories = append(p.Directories, d.Name)
		}
	}
	for _, l := range cfg.Libraries {
		p.Libraries = append(p.Libraries, l.ID)
	}
	return p
}

// newScheduler returns the scheduler of cfg's plan on cfg's schedules,
// running s's syncs under db's leases; its metrics are registered with reg.
func newScheduler(cfg *config.Config, s *syncer.Syncer, db fm.Index, logger *slog.Logger, reg prometheus.Registerer) (*schedule.Scheduler, error) {
	return schedule.New(schedule.Options{
		Incremental: cfg.Schedule.Incremental,
		Full:        cfg.Schedule.Full,
		Concurrency: cfg.Storage.Concurrency,
		Plan:        planOf(cfg),
		Syncer:      s,
		Leases:      db.Leases(),
		Index:       db,
		Logger:      logger,
		Metrics:     schedule.NewMetrics(reg),
	})
}
