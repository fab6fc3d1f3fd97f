package postgres_test

import (
	"context"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/index/indextest"
	"github.com/foldermirror/foldermirror/index/postgres"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/pgtest"
	waitfor "github.com/foldermirror/foldermirror/internal/wait"
	"github.com/jackc/pgx/v5"
)

// An update whose context ends while its statements are being written (the
// kernel took part of them, the rest waits for room, as when the server is
// busy) ends its transaction at once: the server is not left holding it
// open, and the library's row locked, waiting for the rest of a message
// that never comes. The lease is given back, and another replica updates
// the library under it. (A library that leaves the set has its sync
// cancelled, then its rows deleted under its lease: they were deleted only
// once pgx gave the connection up, 15 s later.)
func TestUpdateCutOffWhileWritingEndsItsTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	writes := &cuttableWrites{deadlineSet: make(chan struct{}, 1)}
	a, err := postgres.OpenWrapped(url, postgres.Options{Holder: "replica-a", Logger: slog.New(slog.DiscardHandler)}, writes.wrap)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	if err := a.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	indextest.FullSync(t, a, "lib", fm.LibraryState{RootID: "root", StartPageToken: "0"}, 10, indextest.Folder("root", "", "Root"))
	la := acquire(t, a, "lib")
	cut, cancel := context.WithCancel(ctx)
	defer cancel()
	err = a.UpdateLibrary(cut, "lib", la.Fence(), func(tx fm.LibraryTx) error {
		writes.cutNext(cancel)
		return tx.Put(indextest.Folder("cut", "root", "Cut"))
	})
	if err == nil {
		t.Fatal("the update whose context ended while it wrote committed")
	}
	la.Release()
	waitfor.Until(t, "the cut-off update's transaction to end on the server", func() bool {
		n, err := transactionsOpen(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		return n == 0
	})
	b := fmtest.OpenPostgres(t, url, postgres.Options{Holder: "replica-b"})
	lb := acquire(t, b, "lib")
	err = b.UpdateLibrary(ctx, "lib", lb.Fence(), func(tx fm.LibraryTx) error { return tx.Put(indextest.Folder("b", "root", "B")) })
	if err != nil {
		t.Fatalf("another replica's update under the lease given back: %v", err)
	}
}

// transactionsOpen counts the sessions of the database at url, but the one
// asking, that are in a transaction.
func transactionsOpen(ctx context.Context, url string) (int, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int
	err = conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND xact_start IS NOT NULL`).Scan(&n)
	return n, err
}

// cuttableWrites wraps a pool's connections, so that a test can end a
// context while a write is under way: the next write sends half its bytes,
// then ends the context, and sends the rest once pgx has reacted by setting
// the connection's deadline, which the rest then meets.
type cuttableWrites struct {
	// next is the cancel of the context the next write ends, nil if none.
	next atomic.Pointer[context.CancelFunc]
	// cutting is true between the end of the context and the deadline
	// set; deadlineSet then has a value.
	cutting     atomic.Bool
	deadlineSet chan struct{}
}

// cutNext has the next write end the context of cancel halfway.
func (w *cuttableWrites) cutNext(cancel context.CancelFunc) { w.next.Store(&cancel) }

func (w *cuttableWrites) wrap(conn net.Conn) net.Conn { return &cuttableConn{Conn: conn, writes: w} }

// cuttableConn is a connection of the pool.
type cuttableConn struct {
	net.Conn
	writes *cuttableWrites
}

func (c *cuttableConn) Write(b []byte) (int, error) {
	cancel := c.writes.next.Swap(nil)
	if cancel == nil || len(b) < 2 {
		return c.Conn.Write(b)
	}
	half, err := c.Conn.Write(b[:len(b)/2])
	if err != nil {
		return half, err
	}
	c.writes.cutting.Store(true)
	(*cancel)()
	select {
	case <-c.writes.deadlineSet:
	case <-time.After(waitfor.Bound):
		return half, context.DeadlineExceeded // pgx never reacted: the test's wait for the transaction fails
	}
	rest, err := c.Conn.Write(b[len(b)/2:])
	return half + rest, err
}

func (c *cuttableConn) SetDeadline(t time.Time) error {
	err := c.Conn.SetDeadline(t)
	if c.writes.cutting.CompareAndSwap(true, false) {
		c.writes.deadlineSet <- struct{}{}
	}
	return err
}
