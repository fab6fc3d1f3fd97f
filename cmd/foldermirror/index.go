package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/index"
)

// openIndex opens the index the configuration names: the bbolt file in
// dataDir, or the PostgreSQL database at index.url, which is not reached
// yet (see reach). onChange, if set, is told of each library another
// replica of a shared index changed.
func openIndex(cfg *config.Config, logger *slog.Logger, onChange func(libraryID string)) (fm.Index, error) {
	return index.Open(index.Options{URL: cfg.Index.URL, DataDir: cfg.DataDir, LeaseTTL: cfg.Index.LeaseTTL,
		Logger: logger, OnChange: onChange})
}

// reach reaches db once, at once, failing if it is a database foldermirror
// must not use. If it cannot be reached, unreachable (if set) is told why,
// and the function returned tries again until it is reached or ctx ends;
// that function returns nil at once if db was reached already (a bbolt
// index always is).
func reach(ctx context.Context, db fm.Index, unreachable func(error)) (func() error, error) {
	err := db.Connect(ctx)
	switch {
	case err == nil:
		return func() error { return nil }, nil
	case errors.Is(err, fm.ErrIndexRefused):
		return nil, reachError(db, err)
	}
	if unreachable != nil {
		unreachable(err)
	}
	return func() error {
		if err := db.ConnectRetrying(ctx); err != nil {
			return reachError(db, err)
		}
		return nil
	}, nil
}

// reachError says, under index.url, why db was not reached: a refused
// database's error names it already.
func reachError(db fm.Index, err error) error {
	if errors.Is(err, fm.ErrIndexRefused) {
		return fmt.Errorf("index.url: %w", err)
	}
	return fmt.Errorf("index.url: the database %s: %w", db.Info(context.Background()).Location, err)
}

// connectTimeout bounds how long a one-shot command tries to reach its
// index.
const connectTimeout = 30 * time.Second

// connect reaches db for a one-shot command (reach), trying for up to
// connectTimeout.
func connect(ctx context.Context, db fm.Index) error {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	reached, err := reach(ctx, db, nil)
	if err != nil {
		return err
	}
	return reached()
}
