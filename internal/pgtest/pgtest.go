// Package pgtest gives tests a PostgreSQL database of their own, on the
// server FOLDERMIRROR_TEST_POSTGRES names (a URL); without it, tests that
// need one skip, saying how to run them.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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

// NewDatabase creates an empty database for the test on the test server,
// dropped when the test ends, and returns its URL; without a server, it
// skips the test.
func NewDatabase(t testing.TB) string {
	t.Helper()
	server := ServerURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u, drop, err := CreateDatabase(ctx, server, "fmtest_")
	if err != nil {
		t.Fatalf("the test PostgreSQL server (%s): %v", EnvURL, err)
	}
	t.Cleanup(func() {
		if err := drop(); err != nil {
			t.Error(err)
		}
	})
	return u
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
