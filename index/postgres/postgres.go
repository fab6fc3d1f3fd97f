// Package postgres is foldermirror's PostgreSQL index: what the bbolt index
// keeps, in a database that several replicas of one service share. Each
// replica keeps the libraries' states and the directories in memory, and
// reads what other replicas committed every Poll; syncs hold leases in the
// database, so that one process at a time syncs a library, and every write
// made under a lease is fenced: it commits only while the lease is still
// its writer's (see fm.Fence).
//
// The schema is created and migrated at start (tern, with the migrations
// embedded in the binary); a database whose schema is newer than the
// binary's, or that holds another service's tables, is refused before
// anything is written.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/tern/v2/migrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// versionTable is where tern keeps the schema's version.
const versionTable = "foldermirror_schema_version"

// ownTables are the tables foldermirror's schema makes.
var ownTables = []string{versionTable, "libraries", "folders", "permission_sets", "changes", "directories", "leases", "scheduled_runs"}

// Defaults of Options.
const (
	defaultLeaseTTL = 30 * time.Second
	defaultPoll     = 500 * time.Millisecond
)

// Options configure a PostgreSQL index.
type Options struct {
	Logger *slog.Logger
	// LeaseTTL is how long a sync lease lasts after its holder last renewed
	// it (index.leaseTtl; 30 s by default).
	LeaseTTL time.Duration
	// Poll is how often the index reads what other processes committed
	// (500 ms by default).
	Poll time.Duration
	// Holder names this process in the leases it takes: by default its
	// host name, its pid and a random part, "host pid 1 #a1b2c3d4", unique
	// even where processes share a host name and a pid (containers).
	Holder string
	// OnChange, if set, is told of each library another process changed,
	// once this process has read its new state.
	OnChange func(libraryID string)
}

// DB is a PostgreSQL index. It is safe for concurrent use.
type DB struct {
	pool   *pgxpool.Pool
	where  string // host:port/database, for messages
	logger *slog.Logger
	opts   Options

	mu        sync.RWMutex
	ready     bool
	libraries map[string]*record
	dirs      map[string]int64 // each domain's directory version
	health    error            // the last failure to reach the database, nil when it answers
	// directories holds every domain's directory, for lookups.
	directories fm.Directories
}

// Open returns an index of the database at url, without connecting to it:
// Connect (once) or Run (until it succeeds) does.
func Open(url string, opts Options) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("index.url: %w", err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = defaultLeaseTTL
	}
	if opts.Poll <= 0 {
		opts.Poll = defaultPoll
	}
	if opts.Holder == "" {
		opts.Holder = processIdentity()
	}
	cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("index.url: %w", err)
	}
	where := fmt.Sprintf("%s:%d/%s", cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database)
	return &DB{pool: pool, where: where, logger: opts.Logger, opts: opts, libraries: map[string]*record{}, dirs: map[string]int64{}}, nil
}

// processIdentity names this process: its host, its pid and a random part.
func processIdentity() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s pid %d #%08x", host, os.Getpid(), rand.Uint32())
}

// Where names the database: host:port/database (never the password).
func (db *DB) Where() string { return db.where }

// Close closes the connections.
func (db *DB) Close() error {
	db.pool.Close()
	return nil
}

// Connect connects to the database once: it checks the schema, creates or
// migrates it, and reads the libraries' states and the directories.
func (db *DB) Connect(ctx context.Context) error {
	if err := db.migrate(ctx); err != nil {
		return db.fail(err)
	}
	if err := db.refresh(ctx); err != nil {
		return db.fail(err)
	}
	db.mu.Lock()
	db.ready, db.health = true, nil
	db.mu.Unlock()
	return nil
}

// ConnectRetrying connects, trying again with backoff after failures it
// logs, until it succeeds or ctx ends (then it returns the last failure).
// A database foldermirror must not use (ErrRefused) fails it at once.
func (db *DB) ConnectRetrying(ctx context.Context) error {
	for wait := time.Second; ; wait = min(2*wait, 30*time.Second) {
		err := db.Connect(ctx)
		if err == nil || errors.Is(err, ErrRefused) {
			return err
		}
		db.logger.Error("the index database cannot be reached; trying again", "database", db.where, "in", wait, "err", err)
		t := time.NewTimer(wait/2 + rand.N(wait/2))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (gave up trying: %w)", err, ctx.Err())
		case <-t.C:
		}
	}
}

// Run connects (ConnectRetrying), then reads what other processes commit
// (Watch). A database that refuses foldermirror (another service's, a newer
// schema) ends it with that error.
func (db *DB) Run(ctx context.Context) error {
	if err := db.ConnectRetrying(ctx); err != nil {
		return err
	}
	db.Watch(ctx)
	return nil
}

// Watch reads what other processes commit, every Poll, until ctx ends.
func (db *DB) Watch(ctx context.Context) {
	t := time.NewTicker(db.opts.Poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := db.refresh(ctx); err != nil && ctx.Err() == nil {
			_ = db.fail(err) // recorded as the index's health
		}
	}
}

// fail records that the database did not answer as it should.
func (db *DB) fail(err error) error {
	err = fmt.Errorf("index database %s: %w", db.where, err)
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.health == nil {
		db.logger.Warn("the index database fails; what was read is still served", "err", err)
	}
	db.health = err
	return err
}

// Ready tells whether the index has connected once.
func (db *DB) Ready() bool {
	db.mu.RLock()
	defer db.mu.RUnlock()
	return db.ready
}

// Health returns the last failure to reach the database, nil when it
// answered last.
func (db *DB) Health() error {
	db.mu.RLock()
	defer db.mu.RUnlock()
	return db.health
}

// ErrRefused marks a database foldermirror must not use: another service's,
// or one whose schema a newer foldermirror wrote.
var ErrRefused = errors.New("not a database foldermirror may use")

// migrate checks that the database is foldermirror's (or empty) and its
// schema not newer than the binary's, then creates or migrates it.
func (db *DB) migrate(ctx context.Context) error {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	migrations, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return err
	}
	names, err := migrate.FindMigrations(migrations)
	if err != nil {
		return err
	}
	if err := checkDatabase(ctx, conn.Conn(), int32(len(names))); err != nil {
		return err
	}
	m, err := migrate.NewMigrator(ctx, conn.Conn(), versionTable)
	if err != nil {
		return err
	}
	if err := m.LoadMigrations(migrations); err != nil {
		return err
	}
	return m.Migrate(ctx)
}

// checkDatabase refuses, without writing anything, a database whose
// foldermirror schema is newer than latest, or that holds tables but no
// foldermirror schema.
func checkDatabase(ctx context.Context, conn *pgx.Conn, latest int32) error {
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", versionTable).Scan(&exists); err != nil {
		return err
	}
	if exists {
		var version int32
		if err := conn.QueryRow(ctx, "SELECT version FROM "+versionTable).Scan(&version); err != nil {
			return err
		}
		if version > latest {
			return fmt.Errorf("%w: its schema is version %d, newer than this foldermirror's (%d): it was written by a newer foldermirror", ErrRefused, version, latest)
		}
		return nil
	}
	// foldermirror's own tables do not count: another replica may be
	// creating them right now.
	rows, err := conn.Query(ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name <> ALL($1)
		ORDER BY table_name LIMIT 5`, ownTables)
	if err != nil {
		return err
	}
	others, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	if len(others) > 0 {
		return fmt.Errorf("%w: it holds tables of another service (%s) and no foldermirror schema: give foldermirror a database of its own",
			ErrRefused, strings.Join(others, ", "))
	}
	return nil
}

// unavailable is the error of a read before the index ever connected.
func (db *DB) unavailable() error {
	return &fm.Error{Code: fm.EUNAVAILABLE, RetryAfter: 5 * time.Second,
		Message: "The index database cannot be reached yet; try again shortly.", Err: db.Health()}
}

// Info says which database the index is in, its size, whether it answers,
// and who holds sync leases.
func (db *DB) Info(ctx context.Context) fm.IndexInfo {
	info := fm.IndexInfo{Kind: "postgres", Location: db.where, Ready: db.Ready()}
	if err := db.Health(); err != nil {
		info.Problem = err.Error()
	}
	if !info.Ready || info.Problem != "" {
		return info
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := db.pool.QueryRow(ctx, "SELECT pg_database_size(current_database())").Scan(&info.SizeBytes); err != nil {
		info.Problem = db.wrap("read the database's size", err).Error()
	}
	if leases, err := db.Holders(ctx); err == nil {
		info.Leases = leases
	}
	return info
}
