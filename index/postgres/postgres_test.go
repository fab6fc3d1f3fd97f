package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/index/indextest"
	"github.com/foldermirror/foldermirror/index/postgres"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/pgtest"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// TestConformance runs the suite every index backend passes, its tests at
// once: each mostly waits for the server (a database of its own emptied
// and migrated, commits), as do the package's other tests.
func TestConformance(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	urls := map[indextest.Index]string{}
	indextest.Run(t, indextest.Backend{
		Open: func(t *testing.T) indextest.Index {
			url := pgtest.NewDatabase(t)
			db := fmtest.OpenPostgres(t, url, postgres.Options{})
			mu.Lock()
			defer mu.Unlock()
			urls[db] = url
			return db
		},
		Reopen: func(t *testing.T, idx indextest.Index) indextest.Index {
			idx.(*postgres.DB).Close()
			mu.Lock()
			url := urls[idx]
			mu.Unlock()
			db := fmtest.OpenPostgres(t, url, postgres.Options{})
			mu.Lock()
			defer mu.Unlock()
			urls[db] = url
			return db
		},
		Shared:   true,
		Parallel: true,
	})
}

// TestUpdatesInSmallBatches runs the suite's tests of UpdateLibrary with
// updates that send their writes after a statement or a few, and forget
// what they read after a folder or a few: what they read is the same.
func TestUpdatesInSmallBatches(t *testing.T) {
	t.Parallel()
	for _, limits := range smallBatchLimits {
		t.Run(fmt.Sprintf("%d statements, %d folders", limits[0], limits[1]), func(t *testing.T) {
			open := func(t *testing.T, url string) indextest.Index {
				db := fmtest.OpenPostgres(t, url, postgres.Options{})
				postgres.SetTxLimits(db, limits[0], limits[1])
				return db
			}
			urls := sync.Map{}
			indextest.RunUpdates(t, indextest.Backend{
				Open: func(t *testing.T) indextest.Index {
					url := pgtest.NewDatabase(t)
					db := open(t, url)
					urls.Store(db, url)
					return db
				},
				Reopen: func(t *testing.T, idx indextest.Index) indextest.Index {
					idx.(*postgres.DB).Close()
					url, _ := urls.Load(idx)
					db := open(t, url.(string))
					urls.Store(db, url)
					return db
				},
				Parallel: true,
			})
		})
	}
}

// A database of another service, or whose schema is newer, is refused
// with an error that says which, and nothing in it changes.
func TestRefusedDatabases(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, want string
		setup      []string
	}{
		{"another service's", "tables of another service (invoices)", []string{"CREATE TABLE invoices (id int)"}},
		{"newer", "newer than this foldermirror's", []string{
			"CREATE TABLE foldermirror_schema_version (version int4 NOT NULL)",
			"INSERT INTO foldermirror_schema_version VALUES (99)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := pgtest.NewDatabase(t)
			pgtest.Exec(t, url, tc.setup...)
			before := pgtest.Tables(t, url)
			db, err := postgres.Open(url, postgres.Options{Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			err = db.Connect(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), db.Where()) {
				t.Errorf("connect: %v; want an error naming the database and saying %q", err, tc.want)
			}
			if err := db.ConnectRetrying(context.Background()); err == nil {
				t.Error("a refused database is not tried again and again: it fails at once")
			}
			if _, err := db.Acquire(context.Background(), "lib"); !errors.Is(err, fm.ErrIndexRefused) {
				t.Errorf("a lease taken in a refused database: %v", err)
			}
			if after := pgtest.Tables(t, url); !slices.Equal(before, after) {
				t.Errorf("tables before %v, after %v", before, after)
			}
		})
	}
}

// A database that cannot be reached is named, and tried again until it
// can be; readers meanwhile get 503-like errors, not "not synced". The
// database comes back once the index has said it tries again.
func TestUnreachableAtStart(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	proxy, via := pgtest.NewProxy(t, url)
	proxy.Cut()
	var retrying atomic.Bool
	logger := slog.New(onLog{func(r slog.Record) {
		if strings.Contains(r.Message, "cannot be reached; trying again") && retrying.CompareAndSwap(false, true) {
			proxy.Restore()
		}
	}})
	db, err := postgres.Open(via, postgres.Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Connect(context.Background())
	if err == nil || !strings.Contains(err.Error(), db.Where()) {
		t.Fatalf("connect: %v; want an error naming %s", err, db.Where())
	}
	if _, err := db.Library(context.Background(), "lib"); fm.ErrorCode(err) != fm.EUNAVAILABLE {
		t.Errorf("a read before connecting: %v, want EUNAVAILABLE", err)
	}
	if got := pgtest.Tables(t, url); len(got) != 0 {
		t.Errorf("tables created while unreachable: %v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.ConnectRetrying(ctx); err != nil {
		t.Fatalf("after the database came back: %v", err)
	}
	if !retrying.Load() {
		t.Error("ConnectRetrying connected without trying again, or without saying so")
	}
	if !db.Ready() || db.Health() != nil {
		t.Errorf("ready %v, health %v", db.Ready(), db.Health())
	}
}

// onLog is a logger's handler that calls handle with each record.
type onLog struct{ handle func(slog.Record) }

func (h onLog) Enabled(context.Context, slog.Level) bool { return true }

func (h onLog) Handle(_ context.Context, r slog.Record) error {
	h.handle(r)
	return nil
}

func (h onLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h onLog) WithGroup(string) slog.Handler      { return h }

// What one replica commits, another reads within a poll, and is told of.
func TestReplicasSeeEachOthersCommits(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	a := fmtest.OpenPostgres(t, url, postgres.Options{})
	changed := make(chan string, 10)
	b := fmtest.OpenPostgres(t, url, postgres.Options{Poll: 100 * time.Millisecond, OnChange: func(lib string) { changed <- lib }})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go b.Run(ctx)
	indextest.FullSync(t, a, "lib", fm.LibraryState{RootID: "root"}, 10, indextest.Folder("root", "", "Root"))
	select {
	case lib := <-changed:
		if lib != "lib" {
			t.Errorf("told of %q", lib)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the other replica was not told of the commit within 2 s")
	}
	if st, err := b.Library(ctx, "lib"); err != nil || st.Revision != 1 {
		t.Errorf("the other replica's state: %+v %v", st, err)
	}
	_ = a.ReplaceDirectory(ctx, &fm.DirectorySnapshot{Domain: "example.com", Users: map[string]fm.DirectoryUser{"ann@example.com": {ID: "1"}}}, fm.Fence{})
	deadline := time.Now().Add(2 * time.Second)
	for got, _ := b.Lookup(ctx, "ann@example.com"); !got.Known; got, _ = b.Lookup(ctx, "ann@example.com") {
		if time.Now().After(deadline) {
			t.Fatal("the other replica did not read the new directory within 2 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// One holder at a time; the holder is named; a lease lapses after its
// TTL once its holder stops renewing it; writes are fenced meanwhile.
func TestLeases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	a := fmtest.OpenPostgres(t, url, postgres.Options{Holder: "replica-a", LeaseTTL: 600 * time.Millisecond})
	b := fmtest.OpenPostgres(t, url, postgres.Options{Holder: "replica-b", LeaseTTL: 600 * time.Millisecond})
	indextest.FullSync(t, a, "lib", fm.LibraryState{RootID: "root"}, 10, indextest.Folder("root", "", "Root"))
	la, err := a.Acquire(ctx, "lib")
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Acquire(ctx, "lib")
	if !errors.Is(err, fm.ErrLeaseHeld) || !strings.Contains(err.Error(), "replica-a") {
		t.Errorf("b's acquire: %v; want ErrLeaseHeld naming replica-a", err)
	}
	if h, _ := b.Holders(ctx); h["lib"] != "replica-a" {
		t.Errorf("holders %v", h)
	}
	err = b.UpdateLibrary(ctx, "lib", fm.Fence{}, func(tx fm.LibraryTx) error { return tx.Put(indextest.Folder("x", "root", "x")) })
	if !errors.Is(err, fm.ErrLeaseHeld) {
		t.Errorf("b's write while a holds the lease: %v", err)
	}
	time.Sleep(time.Second) // renewals keep a's lease
	if _, err := b.Acquire(ctx, "lib"); !errors.Is(err, fm.ErrLeaseHeld) {
		t.Errorf("a's lease lapsed while renewed: %v", err)
	}
	la.Release()
	lb, err := b.Acquire(ctx, "lib")
	if err != nil {
		t.Fatalf("after a released it: %v", err)
	}
	// b dies holding it (no release, no renewal): it lapses after its TTL.
	b.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		la, err = a.Acquire(ctx, "lib")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dead holder's lease did not lapse: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	la.Release()
	select {
	case <-lb.Lost():
	case <-time.After(2 * time.Second):
		t.Error("the dead holder's lease was not marked lost")
	}
}

// An Acquire whose context ends while it takes the lease leaves no lease
// held but the one it returns: a statement cut off after it committed
// would leave the lease taken unbeknown to the process, held until it
// lapsed. The contexts end at many points of the statement's course.
func TestAcquireCutOffLeavesNoLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := fmtest.OpenPostgres(t, pgtest.NewDatabase(t), postgres.Options{Holder: "replica-a"})
	for i := range 240 {
		name, after := fmt.Sprint("lib", i), time.Duration(i%60)*25*time.Microsecond
		cut, cancel := context.WithTimeout(ctx, after)
		l, err := db.Acquire(cut, name)
		cancel()
		switch {
		case err == nil:
			l.Release()
		case !errors.Is(err, context.DeadlineExceeded):
			t.Fatalf("Acquire cut off after %s: %v; want the lease, or the context's error", after, err)
		}
		held, herr := db.Holders(ctx)
		if herr != nil {
			t.Fatal(herr)
		}
		if held[name] != "" {
			t.Fatalf("Acquire cut off after %s (%v): the lease is held by %s", after, err, held[name])
		}
	}
}

// The suite's tests of shared leases, on two replicas of a database whose
// leases are renewed every half second: a lapsed one is found lost soon.
func TestSharedLeases(t *testing.T) {
	indextest.RunSharedLeases(t, func(t *testing.T) indextest.Replicas {
		t.Parallel()
		url := pgtest.NewDatabase(t)
		replica := func(holder string) indextest.Replica {
			db := fmtest.OpenPostgres(t, url, postgres.Options{Holder: holder, LeaseTTL: 1500 * time.Millisecond})
			return indextest.Replica{Holder: holder, Leases: db, Write: func(ctx context.Context, fence fm.Fence) error {
				return db.UpdateLibrary(ctx, "lib", fence, func(fm.LibraryTx) error { return nil })
			}}
		}
		a, b := replica("replica-a"), replica("replica-b")
		indextest.FullSync(t, a.Leases.(*postgres.DB), "lib", fm.LibraryState{RootID: "root"}, 10, indextest.Folder("root", "", "Root"))
		return indextest.Replicas{A: a, B: b, Lapse: func(name string) { pgtest.LapseLease(t, url, name) }}
	})
}

// Replicas together claim a schedule's run once per period.
func TestClaimScheduledRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	a := fmtest.OpenPostgres(t, url, postgres.Options{Holder: "a"})
	b := fmtest.OpenPostgres(t, url, postgres.Options{Holder: "b"})
	if ok, err := a.ClaimScheduledRun(ctx, "lib", "incremental", time.Minute); !ok || err != nil {
		t.Fatalf("first claim: %v %v", ok, err)
	}
	if ok, _ := b.ClaimScheduledRun(ctx, "lib", "incremental", time.Minute); ok {
		t.Error("a second claim within the period succeeded")
	}
	if ok, _ := b.ClaimScheduledRun(ctx, "lib", "full", time.Minute); !ok {
		t.Error("another kind's claim failed")
	}
	if ok, _ := b.ClaimScheduledRun(ctx, "lib", "incremental", time.Nanosecond); !ok {
		t.Error("a claim after the period failed")
	}
}

// A write whose connection dies before it commits leaves the old state.
func TestConnectionLostMidCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	db := fmtest.OpenPostgres(t, url, postgres.Options{})
	indextest.FullSync(t, db, "lib", fm.LibraryState{RootID: "root"}, 10, indextest.Folder("root", "", "Root"), indextest.Folder("a", "root", "a"))
	err := db.UpdateLibrary(ctx, "lib", fm.Fence{}, func(tx fm.LibraryTx) error {
		if err := tx.Delete("a"); err != nil {
			return err
		}
		if err := tx.Put(indextest.Folder("b", "root", "b")); err != nil {
			return err
		}
		pgtest.Exec(t, url, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")
		return nil
	})
	if err == nil {
		t.Fatal("the update committed over a dead connection")
	}
	if _, err := db.Folder(ctx, "lib", "a"); err != nil {
		t.Errorf("a after the failed update: %v", err)
	}
	if _, err := db.Folder(ctx, "lib", "b"); fm.ErrorCode(err) != fm.ENOTFOUND {
		t.Errorf("b after the failed update: %v", err)
	}
	if st, _ := db.Library(ctx, "lib"); st.Revision != 1 || st.Folders != 2 {
		t.Errorf("state after the failed update: %+v", st)
	}
}

// A replica that loses its database keeps what it read, says it is
// degraded, and is whole again when the database returns.
func TestDatabaseLostWhileServing(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url := pgtest.NewDatabase(t)
	proxy, via := pgtest.NewProxy(t, url)
	db := fmtest.OpenPostgres(t, via, postgres.Options{Poll: 50 * time.Millisecond})
	go db.Run(ctx)
	indextest.FullSync(t, db, "lib", fm.LibraryState{RootID: "root"}, 10, indextest.Folder("root", "", "Root"))
	proxy.Cut()
	deadline := time.Now().Add(5 * time.Second)
	for db.Health() == nil {
		if time.Now().After(deadline) {
			t.Fatal("the loss was not noticed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(db.Health().Error(), db.Where()) {
		t.Errorf("health %v does not name the database", db.Health())
	}
	if st, err := db.Library(ctx, "lib"); err != nil || st.Revision != 1 {
		t.Errorf("state while the database is lost: %+v %v", st, err)
	}
	if err := db.UpdateLibrary(ctx, "lib", fm.Fence{}, func(tx fm.LibraryTx) error { return nil }); err == nil {
		t.Error("a write while the database is lost succeeded")
	}
	proxy.Restore()
	for db.Health() != nil {
		if time.Now().After(deadline.Add(5 * time.Second)) {
			t.Fatalf("still degraded after the database returned: %v", db.Health())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := db.UpdateLibrary(ctx, "lib", fm.Fence{}, func(tx fm.LibraryTx) error { return tx.Put(indextest.Folder("a", "root", "a")) }); err != nil {
		t.Errorf("a write once the database returned: %v", err)
	}
}

// A database migrated from schema 2 keeps its libraries, served, but each
// one's changes token is dropped, so that its next sync is a full one:
// earlier versions made some permission lists out of Drive's order.
func TestMigrationDropsChangesTokens(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	db := fmtest.OpenPostgres(t, url, postgres.Options{})
	indextest.FullSync(t, db, "lib", fm.LibraryState{RootID: "root", StartPageToken: "42"}, 10,
		indextest.Folder("root", "", "Root"), indextest.Folder("a", "root", "a"))
	db.Close()
	pgtest.Exec(t, url, "UPDATE libraries SET start_page_token = '42'", dropSchema5, "DROP TABLE push_channels", // not in schema 2
		"UPDATE foldermirror_schema_version SET version = 2")

	db = fmtest.OpenPostgres(t, url, postgres.Options{})
	st, err := db.Library(context.Background(), "lib")
	if err != nil || st.StartPageToken != "" || st.Folders != 2 {
		t.Errorf("after the migration: %+v, %v; want the library served, without a changes token", st, err)
	}
}
