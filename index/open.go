// Package index opens foldermirror's index from index.url, whichever
// backend keeps it: the bbolt file in the data directory (index/bolt), or
// a PostgreSQL database that replicas share (index/postgres). It is the one
// package that knows the backends; the others see an index as a
// foldermirror.Index.
package index

import (
	"errors"
	"log/slog"
	"strings"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/index/bolt"
	"github.com/foldermirror/foldermirror/index/postgres"
)

// Options say which index Open opens, and how.
type Options struct {
	// URL is index.url: "" for the bbolt file in DataDir, or the
	// postgres:// (or postgresql://) URL of a PostgreSQL database.
	URL string
	// DataDir is the directory of the bbolt file, made if missing.
	DataDir string
	// LeaseTTL is how long a sync lease of a PostgreSQL index lasts after
	// its holder last renewed it (index.leaseTtl); 0 for the backend's
	// default.
	LeaseTTL time.Duration
	// Logger logs what the index does; slog.Default() if nil.
	Logger *slog.Logger
	// OnChange, if set, is told of each library another process sharing
	// the index changed, once this process has read its new state, or
	// deleted, once this process has forgotten it.
	OnChange func(libraryID string)
}

// Open opens the index opts.URL names, without reaching it: a PostgreSQL
// index is reached by its Connect or ConnectRetrying. On error, the index
// is nil.
func Open(opts Options) (fm.Index, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.URL == "" {
		db, err := bolt.Open(opts.DataDir, opts.Logger)
		if err != nil {
			return nil, err
		}
		return db, nil
	}
	// The scheme only: the rest of the URL may hold a password.
	switch scheme, _, _ := strings.Cut(opts.URL, "://"); scheme {
	case "postgres", "postgresql":
		db, err := postgres.Open(opts.URL, postgres.Options{Logger: opts.Logger, LeaseTTL: opts.LeaseTTL, OnChange: opts.OnChange})
		if err != nil {
			return nil, err
		}
		return db, nil
	}
	return nil, errors.New("index.url: expected a postgres:// or postgresql:// URL, or nothing for the bbolt file in the data directory")
}
