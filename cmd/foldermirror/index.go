package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/httpapi/admin"
	"github.com/foldermirror/foldermirror/index/bolt"
	"github.com/foldermirror/foldermirror/index/postgres"
	"github.com/foldermirror/foldermirror/syncer"
)

// indexBackend is what the daemon and the sync command use of an index,
// whichever keeps it.
type indexBackend interface {
	syncer.Index
	fm.Leases
	admin.Index
	fm.DirectoryStore
	Close() error
}

var (
	_ indexBackend = (*bolt.DB)(nil)
	_ indexBackend = (*postgres.DB)(nil)
)

// openIndex opens the index the configuration names: the bbolt file in
// dataDir, or the PostgreSQL database at index.url, which is not reached
// yet (see connect). onChange, if set, is told of each library another
// replica of a shared index changed.
func openIndex(cfg *config.Config, logger *slog.Logger, onChange func(libraryID string)) (indexBackend, error) {
	if !cfg.Index.IsPostgres() {
		return bolt.Open(cfg.DataDir, logger)
	}
	return postgres.Open(cfg.Index.URL, postgres.Options{Logger: logger, LeaseTTL: cfg.Index.LeaseTTL, OnChange: onChange})
}

// connectTimeout bounds how long a one-shot command tries to reach a
// PostgreSQL index.
const connectTimeout = 30 * time.Second

// connect reaches a PostgreSQL index for a one-shot command, trying again
// for up to connectTimeout; a bbolt index is open already.
func connect(ctx context.Context, db indexBackend) error {
	pg, ok := db.(*postgres.DB)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if err := pg.ConnectRetrying(ctx); err != nil {
		return fmt.Errorf("index.url: the database %s: %w", pg.Where(), err)
	}
	return nil
}
