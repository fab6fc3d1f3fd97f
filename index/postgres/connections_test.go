package postgres_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/index/indextest"
	"github.com/foldermirror/foldermirror/index/postgres"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/pgtest"
	"github.com/jackc/pgx/v5"
)

// Renewals have connections of their own: they keep the lease while every
// connection of the pool is busy.
func TestRenewalsWhilePoolBusy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	a := fmtest.OpenPostgres(t, url, postgres.Options{Holder: "replica-a", MaxConns: 2})
	b := fmtest.OpenPostgres(t, url, postgres.Options{Holder: "replica-b"})
	libs := []string{"one", "two"}
	for _, lib := range libs {
		indextest.FullSync(t, a, lib, fm.LibraryState{RootID: "root"}, 10, indextest.Folder("root", "", "Root"))
	}
	la := acquire(t, a, "lib")
	release := make(chan struct{})
	var busy, done sync.WaitGroup
	for _, lib := range libs { // each update holds a connection until released
		busy.Add(1)
		done.Go(func() {
			_ = a.UpdateLibrary(ctx, lib, fm.Fence{}, func(fm.LibraryTx) error { busy.Done(); <-release; return nil })
		})
	}
	busy.Wait()
	defer done.Wait()
	defer close(release)
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := postgres.Renew(rctx, la); err != nil {
		t.Errorf("a renewal while every pool connection is busy: %v", err)
	}
	if _, err := b.Acquire(ctx, "lib"); !errors.Is(err, fm.ErrLeaseHeld) {
		t.Errorf("another process took the renewed lease: %v", err)
	}
}

// A replica that meets a schema another process is migrating says so and
// waits for it; when that process was a newer foldermirror, the replica is
// refused at once, nothing written, instead of trying again.
func TestSchemaBeingMigrated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	fmtest.OpenPostgres(t, url, postgres.Options{}).Close()
	before := pgtest.Tables(t, url)
	newer, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer newer.Close(ctx)
	if _, err := newer.Exec(ctx, "SELECT pg_advisory_lock($1)", postgres.MigrationLock); err != nil {
		t.Fatal(err)
	}
	var logs fmtest.LogBuffer
	db, err := postgres.Open(url, postgres.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	connected := make(chan error, 1)
	go func() { connected <- db.ConnectRetrying(ctx) }()
	waitForLockWaiter(t, newer)
	if !strings.Contains(logs.String(), "another foldermirror process is creating or migrating the index's schema; waiting for it") {
		t.Errorf("the wait is not said: %q", logs.String())
	}
	if _, err := newer.Exec(ctx, "UPDATE foldermirror_schema_version SET version = 99"); err != nil {
		t.Fatal(err)
	}
	if _, err := newer.Exec(ctx, "SELECT pg_advisory_unlock($1)", postgres.MigrationLock); err != nil {
		t.Fatal(err)
	}
	select {
	case err = <-connected:
	case <-time.After(30 * time.Second):
		t.Fatal("ConnectRetrying has not returned 30 s after the migration lock was released")
	}
	if !errors.Is(err, fm.ErrIndexRefused) || !strings.Contains(err.Error(), "newer than this foldermirror's") {
		t.Errorf("connect once a newer foldermirror migrated the schema: %v; want it refused", err)
	}
	if strings.Contains(logs.String(), "trying again") {
		t.Errorf("tried again: %q", logs.String())
	}
	if after := pgtest.Tables(t, url); !slices.Equal(before, after) {
		t.Errorf("tables before %v, after %v", before, after)
	}
}

// waitForLockWaiter waits until a process waits for an advisory lock of
// conn's database (those of the server's other databases are other tests').
func waitForLockWaiter(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	for range 500 {
		var waiting bool
		err := conn.QueryRow(context.Background(), `SELECT exists(SELECT FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))`).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no process waits for the migration lock")
}

// A replica running when a newer foldermirror migrates the schema stops
// (Run returns, saying so), and takes no more leases.
func TestRunStopsAtNewerSchema(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	db := fmtest.OpenPostgres(t, url, postgres.Options{Poll: 20 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- db.Run(ctx) }()
	pgtest.Exec(t, url, "UPDATE foldermirror_schema_version SET version = 99")
	if err := <-stopped; !errors.Is(err, fm.ErrIndexRefused) || ctx.Err() != nil {
		t.Fatalf("run: %v; want it to stop, refused", err)
	}
	if err := db.Health(); err == nil || !strings.Contains(err.Error(), "newer than this foldermirror's") {
		t.Errorf("health %v", err)
	}
	if _, err := db.Acquire(ctx, "lib"); !errors.Is(err, fm.ErrIndexRefused) {
		t.Errorf("a lease taken at a newer schema: %v", err)
	}
}

// The connections bound how long a statement runs and waits for a lock:
// those of the pool generously (a full sync's commit is long), the
// renewals' within the time a renewal has, a third of the lease's TTL.
func TestConnectionTimeouts(t *testing.T) {
	t.Parallel()
	db := fmtest.OpenPostgres(t, pgtest.NewDatabase(t), postgres.Options{LeaseTTL: 6 * time.Second})
	for _, tc := range []struct {
		renewals      bool
		setting, want string
	}{
		{false, "statement_timeout", "10min"},
		{false, "lock_timeout", "30s"},
		{true, "statement_timeout", "2s"},
		{true, "lock_timeout", "2s"},
	} {
		if got, err := postgres.Setting(context.Background(), db, tc.renewals, tc.setting); err != nil || got != tc.want {
			t.Errorf("%s (renewals: %v): %q %v, want %q", tc.setting, tc.renewals, got, err, tc.want)
		}
	}
}
