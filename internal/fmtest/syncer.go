package fmtest

import (
	"log/slog"
	"testing"

	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/googleclient"
	"github.com/foldermirror/foldermirror/syncer"
)

// GoogleOptions returns the options of the Google clients cfg's storage
// describes, as the daemon makes them (with unregistered metrics): the
// test changes what it needs.
func GoogleOptions(cfg *config.Config) googleclient.Options {
	return googleclient.Options{
		CredentialsFile:   cfg.Storage.CredentialsFile,
		DriveEndpoint:     cfg.Storage.Endpoint,
		DirectoryEndpoint: cfg.Storage.DirectoryEndpoint,
		RequestsPerSecond: cfg.Storage.RequestsPerSecond,
	}
}

// SyncerOptions returns the options of a syncer of cfg's libraries and
// domains, as the daemon makes them (with the default logger and
// unregistered metrics): the test changes what it needs.
func SyncerOptions(cfg *config.Config) syncer.Options {
	opts := syncer.Options{Libraries: cfg.CoreLibraries(), Concurrency: cfg.Storage.Concurrency}
	for _, d := range cfg.Domains {
		opts.Domains = append(opts.Domains, syncer.Domain{Name: d.Name, AdminEmail: d.AdminEmail})
	}
	return opts
}

// Syncer returns a syncer of cfg, as the daemon makes it, that writes into
// idx and logs to logger.
func Syncer(t testing.TB, cfg *config.Config, idx syncer.Index, logger *slog.Logger) *syncer.Syncer {
	t.Helper()
	clients, err := googleclient.New(GoogleOptions(cfg))
	if err != nil {
		t.Fatal(err)
	}
	opts := SyncerOptions(cfg)
	opts.Logger = logger
	return syncer.New(idx, clients, opts)
}
