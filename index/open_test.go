package index_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/foldermirror/foldermirror/index"
)

var quiet = slog.New(slog.DiscardHandler)

// Open picks the backend by index.url, and opens a database without
// reaching it (nothing listens at the address the URLs name).
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		url            string
		kind, location string
		ready          bool
	}{
		{"", "bbolt", filepath.Join(dir, "index.db"), true},
		{"postgres://fm@127.0.0.1:1/fm", "postgres", "127.0.0.1:1/fm", false},
		{"postgresql://fm:secret@127.0.0.1:1/other", "postgres", "127.0.0.1:1/other", false},
	} {
		t.Run(tc.kind+" "+tc.url, func(t *testing.T) {
			db, err := index.Open(index.Options{URL: tc.url, DataDir: dir, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			info := db.Info(context.Background())
			if info.Kind != tc.kind || info.Location != tc.location || info.Ready != tc.ready {
				t.Errorf("info %+v; want kind %q, location %q, ready %v", info, tc.kind, tc.location, tc.ready)
			}
		})
	}
}

// Open refuses what it cannot open, without naming the URL (it may hold a
// password), and returns no index then (not an index that is nil inside).
func TestOpenFails(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts index.Options
		want string
	}{
		{"another scheme", index.Options{URL: "mysql://fm:secret@db/fm"}, "index.url: expected a postgres://"},
		{"no scheme", index.Options{URL: "host=db password=secret"}, "index.url: expected a postgres://"},
		{"a scheme in capitals", index.Options{URL: "POSTGRES://fm:secret@db/fm"}, "index.url: expected a postgres://"},
		{"a data directory that is a file", index.Options{DataDir: file}, file},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, err := index.Open(tc.opts)
			if db != nil || err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "secret") {
				t.Errorf("Open: %v, %v; want no index and an error saying %q", db, err, tc.want)
			}
		})
	}
}

// A bbolt index has nothing to reach or follow, and its leases are always
// free.
func TestBoltLifecycle(t *testing.T) {
	ctx := context.Background()
	db, err := index.Open(index.Options{DataDir: t.TempDir(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Connect(ctx); err != nil {
		t.Errorf("Connect: %v", err)
	}
	if err := db.ConnectRetrying(ctx); err != nil {
		t.Errorf("ConnectRetrying: %v", err)
	}
	db.Watch(ctx) // returns at once, though ctx never ends
	for range 2 {
		l, err := db.Leases().Acquire(ctx, "lib")
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		defer l.Release()
	}
	if claimed, err := db.Leases().ClaimScheduledRun(ctx, "lib", "full", 0); !claimed || err != nil {
		t.Errorf("ClaimScheduledRun: %v, %v; want it claimed", claimed, err)
	}
}
