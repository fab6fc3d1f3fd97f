//go:build long

package main

import (
	"io"
	"log/slog"
)

// Built with -tags long, the property test checks three random worlds by
// default; the long tests themselves are in the files built with the tag
// (soak, crash, shutdown, disk, replicas, database faults, the terminal).
const defaultPropertySeeds = 3

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
