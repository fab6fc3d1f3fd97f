//go:build long

package tests

import (
	"io"
	"log/slog"
)

// What the long tests share. They are in the files built with -tags long:
// the soak, crashes, the graceful shutdown, a full disk, replicas, database
// faults, the terminal.

// Built with -tags long, the property test checks three random worlds by
// default, and the first on PostgreSQL as every user.
const (
	defaultPropertySeeds        = 3
	propertyEveryUserOnPostgres = true
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
