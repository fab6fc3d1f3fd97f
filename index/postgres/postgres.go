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
// anything is written, and so is, while it runs, a schema a newer binary
// migrated.
//
// Connections: the index reads and writes through a pool of MaxConns
// connections (10 by default); lease renewals have two connections of
// their own, so that syncs busy with the whole pool do not starve them. On
// the pool's connections a statement may run for at most 10 minutes
// (statement_timeout; a full sync's commit of a million folders takes
// seconds) and wait for a lock for at most 30 s (lock_timeout; writers
// under leases do not wait for each other); on the renewals', both are a
// third of LeaseTTL, the time a renewal has.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/tern/v2/migrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// versionTable is where tern keeps the schema's version.
const versionTable = "foldermirror_schema_version"

// ownTables are the tables foldermirror's schema makes.
var ownTables = []string{versionTable, "libraries", "folders", "permission_sets", "changes", "directories", "leases", "scheduled_runs", "push_channels",
	"discoveries", "discovered_drives", "retired_libraries"}

// Defaults of Options, and the connections' limits (see the package's
// documentation).
const (
	defaultLeaseTTL  = 30 * time.Second
	defaultPoll      = 500 * time.Millisecond
	defaultMaxConns  = 10
	renewalConns     = 2
	statementTimeout = 10 * time.Minute
	lockTimeout      = 30 * time.Second
	// cancelDeadlineDelay is how long a statement whose context ended
	// waits for the server to cancel it before its connection is cut off.
	cancelDeadlineDelay = 5 * time.Second
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
	// MaxConns is the most connections the index reads and writes through:
	// the URL's pool_max_conns if it has one, else 10. Lease renewals have
	// two more of their own.
	MaxConns int32
	// OnChange, if set, is told of each library another process changed,
	// once this process has read its new state, or deleted, once this
	// process has forgotten it (its Library then answers ENOTFOUND).
	OnChange func(libraryID string)
}

// DB is a PostgreSQL index. It is safe for concurrent use.
type DB struct {
	pool *pgxpool.Pool
	// renewals are the connections lease renewals and releases use.
	renewals *pgxpool.Pool
	where    string // host:port/database, for messages
	logger   *slog.Logger
	opts     Options
	// txLimits bound what an update keeps in memory (defaultTxLimits).
	txLimits txLimits

	mu        sync.RWMutex
	ready     bool
	libraries map[string]*record
	// unannounced are the libraries whose row another process changed,
	// read under a lease this process took (readLibraryRow) before a
	// refresh read it: the next refresh tells OnChange of them.
	unannounced map[string]bool
	dirs        map[string]int64 // each domain's directory version
	health      error            // the last failure to reach the database, nil when it answers
	// refused is why the database may no longer be used (a newer
	// foldermirror migrated its schema), nil while it may.
	refused error
	// directories holds every domain's directory, for lookups.
	directories fm.Directories
}

var _ fm.Index = (*DB)(nil)

// Open returns an index of the database at url, without connecting to it:
// Connect (once) or Run (until it succeeds) does.
func Open(url string, opts Options) (*DB, error) {
	return open(url, opts, nil)
}

// open is Open, the pool's connections (not the renewals') wrapped by wrap
// if it is set: tests see what the pool writes.
func open(url string, opts Options, wrap func(net.Conn) net.Conn) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("index.url: %w", err)
	}
	opts = withDefaults(opts)
	cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	renewalsCfg := cfg.Copy()
	if wrap != nil {
		dial := cfg.ConnConfig.DialFunc
		cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return wrap(conn), nil
		}
	}
	switch {
	case opts.MaxConns > 0:
		cfg.MaxConns = opts.MaxConns
	case !strings.Contains(url, "pool_max_conns"):
		cfg.MaxConns = defaultMaxConns
	}
	setTimeouts(cfg, statementTimeout, lockTimeout)
	renewalsCfg.MaxConns = renewalConns
	setTimeouts(renewalsCfg, opts.LeaseTTL/3, opts.LeaseTTL/3)
	cancelThroughServer(cfg)
	cancelThroughServer(renewalsCfg)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("index.url: %w", err)
	}
	renewals, err := pgxpool.NewWithConfig(context.Background(), renewalsCfg)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("index.url: %w", err)
	}
	where := fmt.Sprintf("%s:%d/%s", cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database)
	return &DB{pool: pool, renewals: renewals, where: where, logger: opts.Logger, opts: opts, txLimits: defaultTxLimits,
		libraries: map[string]*record{}, unannounced: map[string]bool{}, dirs: map[string]int64{}}, nil
}

// withDefaults fills in the options left unset.
func withDefaults(opts Options) Options {
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
	return opts
}

// processIdentity names this process: its host, its pid and a random part.
func processIdentity() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s pid %d #%08x", host, os.Getpid(), rand.Uint32())
}

// cancelThroughServer has a statement whose context ends cancelled by the
// server (a cancel request), the connection's deadline set only
// cancelDeadlineDelay later, if the server has not answered by then. pgx's
// default sets the deadline at once, which cuts off a write under way: the
// connection's stream is broken (a TLS connection refuses every later
// write), pgx closes it asynchronously, and the server, waiting for the
// rest of a message, holds the transaction open, with its locks (a
// library's row, a lease's), until pgx gives up, 15 s later. Cancelled by
// the server, the statement fails, the stream stays whole, and the
// transaction ends as soon as it is rolled back or the connection closed.
func cancelThroughServer(cfg *pgxpool.Config) {
	cfg.ConnConfig.BuildContextWatcherHandler = func(conn *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: conn, DeadlineDelay: cancelDeadlineDelay}
	}
}

// setTimeouts sets the statement and lock timeouts of a pool's
// connections.
func setTimeouts(cfg *pgxpool.Config, statement, lock time.Duration) {
	cfg.ConnConfig.RuntimeParams["statement_timeout"] = fmt.Sprint(max(statement.Milliseconds(), 1))
	cfg.ConnConfig.RuntimeParams["lock_timeout"] = fmt.Sprint(max(lock.Milliseconds(), 1))
}

// Where names the database: host:port/database (never the password).
func (db *DB) Where() string { return db.where }

// Close closes the connections.
func (db *DB) Close() error {
	db.pool.Close()
	db.renewals.Close()
	return nil
}

// Connect connects to the database once: it checks the schema, creates or
// migrates it, and reads the libraries' states and the directories.
func (db *DB) Connect(ctx context.Context) error {
	switch err := db.migrate(ctx); {
	case errors.Is(err, fm.ErrIndexRefused):
		return db.refuse(err)
	case err != nil:
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
// A database foldermirror must not use (fm.ErrIndexRefused) fails it at
// once; one whose schema another foldermirror process is migrating is
// waited for, and refused at once if that process was a newer foldermirror.
func (db *DB) ConnectRetrying(ctx context.Context) error {
	for wait := time.Second; ; wait = min(2*wait, 30*time.Second) {
		err := db.Connect(ctx)
		switch {
		case err == nil || errors.Is(err, fm.ErrIndexRefused):
			return err
		case errors.Is(err, errMigrating):
			db.logger.Warn("another foldermirror process still creates or migrates the index's schema; waiting for it",
				"database", db.where, "in", wait)
		default:
			db.logger.Error("the index database cannot be reached; trying again", "database", db.where, "in", wait, "err", err)
		}
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
// schema, at start or later) ends it with that error.
func (db *DB) Run(ctx context.Context) error {
	if err := db.ConnectRetrying(ctx); err != nil {
		return err
	}
	db.Watch(ctx)
	return db.Refused()
}

// Watch reads what other processes commit, every Poll, until ctx ends, or
// until it finds the schema migrated by a newer foldermirror: then the
// index is refused (Refused, Health), for good.
func (db *DB) Watch(ctx context.Context) {
	t := time.NewTicker(db.opts.Poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := db.checkVersion(ctx)
		if err == nil {
			err = db.refresh(ctx)
		}
		switch {
		case err == nil || ctx.Err() != nil:
		case errors.Is(err, fm.ErrIndexRefused):
			db.logger.Error("the index database may no longer be used: its schema was migrated by a newer foldermirror; "+
				"no more syncs, and what was read is served until this process is replaced by the newer foldermirror",
				"err", db.refuse(err))
			return
		default:
			_ = db.fail(err) // recorded as the index's health
		}
	}
}

// refuse records that the database may no longer be used, for good, and
// returns why, naming it.
func (db *DB) refuse(err error) error {
	err = fmt.Errorf("index database %s: %w", db.where, err)
	db.mu.Lock()
	defer db.mu.Unlock()
	db.refused, db.health = err, err
	return err
}

// Refused returns why the database may no longer be used (its schema was
// migrated by a newer foldermirror while this process ran), nil while it
// may.
func (db *DB) Refused() error {
	db.mu.RLock()
	defer db.mu.RUnlock()
	return db.refused
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

// errMigrating: another process held the lock under which foldermirror
// creates or migrates the schema for longer than the connections' lock
// timeout.
var errMigrating = errors.New("another foldermirror process is creating or migrating its schema, and holds the migration lock for long")

// migrationLock is the advisory lock under which the schema is checked and
// migrated: tern's own, which its migrator takes again (advisory locks
// nest within a session), so that foldermirror processes of every version
// exclude each other.
const migrationLock = int64(9628173550095224)

// lockNotAvailable is PostgreSQL's code of a lock not had within
// lock_timeout.
const lockNotAvailable = "55P03"

// migrate, holding the migration lock, checks that the database is
// foldermirror's (or empty) and its schema not newer than the binary's,
// then creates or migrates it. While another process holds the lock, it
// says so and waits, up to the lock timeout (errMigrating).
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
	if err := db.lockMigrations(ctx, conn.Conn()); err != nil {
		return err
	}
	defer unlockMigrations(conn.Conn())
	if err := checkDatabase(ctx, conn.Conn()); err != nil {
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

// lockMigrations takes the migration lock; while another process holds
// it, it says so and waits, up to the lock timeout (errMigrating).
func (db *DB) lockMigrations(ctx context.Context, conn *pgx.Conn) error {
	var locked bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", migrationLock).Scan(&locked); err != nil || locked {
		return err
	}
	db.logger.Info("another foldermirror process is creating or migrating the index's schema; waiting for it", "database", db.where)
	_, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrationLock)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == lockNotAvailable {
		return errMigrating
	}
	return err
}

// unlockMigrations gives the migration lock back; if it cannot, it closes
// the connection, which gives it back too.
func unlockMigrations(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", migrationLock); err != nil {
		_ = conn.Close(ctx) // the pool drops a closed connection
	}
}

// schemaVersion is the version of the schema the embedded migrations make:
// their number.
var schemaVersion = func() int32 {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		panic(err)
	}
	return int32(len(names))
}()

// checkVersion refuses a database whose schema a newer foldermirror
// migrated.
func (db *DB) checkVersion(ctx context.Context) error {
	var version int32
	if err := db.pool.QueryRow(ctx, "SELECT version FROM "+versionTable).Scan(&version); err != nil {
		return err
	}
	return newerSchema(version)
}

// newerSchema refuses a schema of a version newer than the binary's.
func newerSchema(version int32) error {
	if version > schemaVersion {
		return fmt.Errorf("%w: its schema is version %d, newer than this foldermirror's (%d): it was written by a newer foldermirror",
			fm.ErrIndexRefused, version, schemaVersion)
	}
	return nil
}

// checkDatabase refuses, without writing anything, a database whose
// foldermirror schema is newer than the binary's, or that holds tables but
// no foldermirror schema.
func checkDatabase(ctx context.Context, conn *pgx.Conn) error {
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", versionTable).Scan(&exists); err != nil {
		return err
	}
	if exists {
		var version int32
		if err := conn.QueryRow(ctx, "SELECT version FROM "+versionTable).Scan(&version); err != nil {
			return err
		}
		return newerSchema(version)
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
			fm.ErrIndexRefused, strings.Join(others, ", "))
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
