// Package pgtest gives tests a PostgreSQL database of their own, on the
// server FOLDERMIRROR_TEST_POSTGRES names (a URL); without it, tests that
// need one skip, saying how to run them.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// EnvURL names the variable holding the test server's URL.
const EnvURL = "FOLDERMIRROR_TEST_POSTGRES"

// ServerURL returns the test server's URL, or skips the test; in CI (CI set
// to true) a missing server fails the test instead, so that the PostgreSQL
// tests cannot pass by not running.
func ServerURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvURL)
	if u == "" && os.Getenv("CI") == "true" {
		t.Fatalf("CI=true but %s is not set: the PostgreSQL tests must run in CI", EnvURL)
	}
	if u == "" {
		t.Skipf("no PostgreSQL: set %s to a server's URL (e.g. postgres://postgres@127.0.0.1:5432/postgres) to run this test", EnvURL)
	}
	return u
}

// NewDatabase gives the test an empty database of its own on the test
// server, for as long as it runs, and returns its URL; without a server, it
// skips the test.
//
// The databases are kept on the server and used again, emptied: making one
// and dropping it (a checkpoint) take the server about a second, emptying
// one a few tens of milliseconds. Database fmtest_pool_N is the test's
// while this process holds advisory lock N (of claimKey) on the server:
// tests running at once, in this process or others (go test runs packages
// at once), have different ones, and one whose process died is taken
// again. A database is emptied when it is taken (its connections ended,
// its schemas dropped, an empty public schema made, as in a new database).
func NewDatabase(t testing.TB) string {
	t.Helper()
	server := ServerURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u, release, err := claims.take(ctx, server)
	if err != nil {
		t.Fatalf("the test PostgreSQL server (%s): %v", EnvURL, err)
	}
	t.Cleanup(func() {
		if err := release(); err != nil {
			t.Error(err)
		}
	})
	return u
}

// claimKey is the first key of the advisory locks that claim the pooled
// databases (the second is N of fmtest_pool_N): "fmpt".
const claimKey = 0x666d7074

// claims are this process's claims on the pooled databases of the test
// servers.
var claims = claimer{taken: map[claim]bool{}, conns: map[string]*pgx.Conn{}}

// claim is a pooled database of a server.
type claim struct {
	server string
	n      int
}

// claimer takes and releases the pooled databases. Advisory locks stack
// within a session, so the claims this process holds are kept in taken
// too.
type claimer struct {
	mu    sync.Mutex
	taken map[claim]bool
	// conns hold the claims' advisory locks, one per server.
	conns map[string]*pgx.Conn
}

// take claims a pooled database of the server at serverURL, makes it if
// it is new, and empties it. It returns its URL and a function that
// releases it.
func (c *claimer) take(ctx context.Context, serverURL string) (dbURL string, release func() error, err error) {
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", nil, fmt.Errorf("PostgreSQL server URL: %w", err)
	}
	cl, err := c.lock(ctx, serverURL)
	if err != nil {
		return "", nil, fmt.Errorf("claim a database on %s: %w", u.Redacted(), err)
	}
	release = func() error { return c.unlock(cl) }
	name := fmt.Sprintf("fmtest_pool_%d", cl.n)
	err = execOn(ctx, serverURL, "CREATE DATABASE "+name)
	if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == duplicateDatabase {
		err = nil
	}
	u.Path = "/" + name
	if err == nil {
		err = execOn(ctx, u.String(), emptyDatabase)
	}
	if err != nil {
		return "", nil, errors.Join(fmt.Errorf("database %s on %s: %w", name, u.Redacted(), err), release())
	}
	return u.String(), release, nil
}

// duplicateDatabase is the SQLSTATE of CREATE DATABASE when the database
// exists.
const duplicateDatabase = "42P04"

// emptyDatabase ends the other connections to the database and makes it as
// CREATE DATABASE makes it: its schemas dropped, with all they hold, and
// the public schema made again (owned by the database's owner, usable by
// all, as in PostgreSQL 15).
const emptyDatabase = `
SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid();
DO $$
DECLARE s name;
BEGIN
	FOR s IN SELECT nspname FROM pg_namespace WHERE nspname <> 'information_schema' AND nspname NOT LIKE 'pg\_%' LOOP
		EXECUTE format('DROP SCHEMA %I CASCADE', s);
	END LOOP;
END $$;
CREATE SCHEMA public AUTHORIZATION pg_database_owner;
GRANT USAGE ON SCHEMA public TO PUBLIC;
`

// lock takes the first advisory lock of claimKey that no session holds
// and this process has not taken, on the server's connection of claims.
func (c *claimer) lock(ctx context.Context, serverURL string) (claim, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	conn := c.conns[serverURL]
	if conn == nil || conn.IsClosed() {
		var err error
		if conn, err = pgx.Connect(ctx, serverURL); err != nil {
			return claim{}, err
		}
		c.conns[serverURL] = conn
	}
	for n := 0; ; n++ {
		cl := claim{server: serverURL, n: n}
		if c.taken[cl] {
			continue
		}
		var locked bool
		if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1, $2)", claimKey, n).Scan(&locked); err != nil {
			return claim{}, err
		}
		if locked {
			c.taken[cl] = true
			return cl, nil
		}
	}
}

// unlock releases a claim.
func (c *claimer) unlock(cl claim) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.taken, cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var unlocked bool
	err := c.conns[cl.server].QueryRow(ctx, "SELECT pg_advisory_unlock($1, $2)", claimKey, cl.n).Scan(&unlocked)
	if err == nil && !unlocked {
		err = errors.New("the lock was not held")
	}
	if err != nil {
		return fmt.Errorf("release database fmtest_pool_%d: %w", cl.n, err)
	}
	return nil
}

// CreateDatabase creates an empty database, named prefix and random hex,
// on the server at serverURL, and returns its URL and a function that
// drops it (with its connections).
func CreateDatabase(ctx context.Context, serverURL, prefix string) (dbURL string, drop func() error, err error) {
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", nil, fmt.Errorf("PostgreSQL server URL: %w", err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := prefix + hex.EncodeToString(b[:])
	if err := execOn(ctx, serverURL, "CREATE DATABASE "+name); err != nil {
		return "", nil, fmt.Errorf("create database %s on %s: %w", name, u.Redacted(), err)
	}
	drop = func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := execOn(ctx, serverURL, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			return fmt.Errorf("drop database %s on %s: %w", name, u.Redacted(), err)
		}
		return nil
	}
	u.Path = "/" + name
	return u.String(), drop, nil
}

// Exec runs statements, in order, each on its own connection to the
// database at url, failing the test at the first that fails.
func Exec(t testing.TB, url string, sqls ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, sql := range sqls {
		if err := execOn(ctx, url, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
}

// LapseLease makes the lease named name lapse now, in the database at url,
// as it does when its holder is paused, or cut off from the database, for
// longer than its TTL.
func LapseLease(t testing.TB, url, name string) {
	t.Helper()
	Exec(t, url, "UPDATE leases SET expires_at = now() - interval '1 second' WHERE name = '"+name+"'")
}

// execOn runs one statement on its own connection to the server.
func execOn(ctx context.Context, serverURL, sql string) error {
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx) //nolint:errcheck // the statement's error is the one to tell
	_, err = conn.Exec(ctx, sql)
	return err
}

// Tables lists the tables of the database at url, sorted.
func Tables(t testing.TB, url string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx) //nolint:errcheck // a connection only read from
	rows, _ := conn.Query(ctx, "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY 1")
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// Proxy stands between tests and a database on loopback, and can cut the
// connection, as a network that fails would.
type Proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	down   bool
	conns  []net.Conn
}

// NewProxy returns a proxy to the database at dbURL, closed when the test
// ends, and the URL that goes through it.
func NewProxy(t testing.TB, dbURL string) (*Proxy, string) {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: u.Host}
	t.Cleanup(func() { ln.Close(); p.Cut() })
	go p.accept()
	u.Host = ln.Addr().String()
	return p, u.String()
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(s, c); s.Close() }()
		go func() { _, _ = io.Copy(c, s); c.Close() }()
	}
}

// Cut closes every connection through the proxy and refuses new ones until
// Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// Restore lets connections through again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}
