package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

var _ fm.Leases = (*DB)(nil)

// Leases returns the index's leases, held in the database: the index
// itself.
func (db *DB) Leases() fm.Leases { return db }

// Acquire takes the lease named name for this process, unless another
// process holds it, with a new epoch: the fencing token of the writes made
// under it. The lease is renewed every third of LeaseTTL, on connections
// of its own, until it is released.
//
// ctx bounds the wait for a connection, not the statement that takes the
// lease: cut off, that statement may commit unbeknown to this process,
// leaving the lease held by nobody who would give it back until it lapsed.
// So the statement runs to its end (within LeaseTTL), and a lease taken
// once ctx has ended is given back at once.
func (db *DB) Acquire(ctx context.Context, name string) (fm.Lease, error) {
	if err := db.Refused(); err != nil {
		return nil, err
	}
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return nil, db.wrap("take the lease of "+name, err)
	}
	defer conn.Release()
	take, cancel := context.WithTimeout(context.WithoutCancel(ctx), db.opts.LeaseTTL)
	defer cancel()
	var epoch int64
	err = conn.QueryRow(take, `INSERT INTO leases (name, holder, acquired_at, expires_at, epoch)
		VALUES ($1, $2, now(), now() + make_interval(secs => $3), nextval('lease_epochs'))
		ON CONFLICT (name) DO UPDATE SET holder = $2, acquired_at = now(), expires_at = now() + make_interval(secs => $3),
			epoch = nextval('lease_epochs')
			WHERE leases.expires_at < now()
		RETURNING epoch`, name, db.opts.Holder, db.opts.LeaseTTL.Seconds()).Scan(&epoch)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, db.heldBy(take, name)
	}
	if err != nil {
		return nil, db.wrap("take the lease of "+name, err)
	}
	l := &lease{db: db, fence: fm.Fence{Lease: name, Epoch: epoch}, lost: make(chan struct{}), stop: make(chan struct{})}
	l.wg.Go(l.renew)
	if err := ctx.Err(); err != nil {
		l.Release()
		return nil, db.wrap("take the lease of "+name, err)
	}
	if err := db.readLibraryRow(take, conn, name); err != nil {
		l.Release()
		return nil, db.wrap("take the lease of "+name, err)
	}
	return l, nil
}

// readLibraryRow reads the row of the library a lease is named after, if
// it has one, into the cache: what the lease's holder is about to do
// depends on the library's state (never synced, or synced up to a token),
// and the last holder may have committed it since the cache was last
// refreshed (Options.Poll); a replica would sync again a library another
// just synced. Under the lease no other process writes it. A row that
// changed what readers see is announced by the next refresh, as if it had
// read it.
func (db *DB) readLibraryRow(ctx context.Context, conn *pgxpool.Conn, name string) error {
	r, err := scanRecord(conn.QueryRow(ctx, "SELECT "+libraryColumns+" FROM libraries WHERE id = $1", name))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case err != nil:
		return err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	if was := db.libraries[name]; db.ready && (was == nil || !was.SameView(r.LibraryState)) {
		db.unannounced[name] = true
	}
	db.libraries[name] = r
	return nil
}

// heldBy returns the error saying who holds a lease.
func (db *DB) heldBy(ctx context.Context, name string) error {
	var holder string
	err := db.pool.QueryRow(ctx, "SELECT holder FROM leases WHERE name = $1", name).Scan(&holder)
	if err != nil {
		holder = "another process"
	}
	return fmt.Errorf("%s: %w (%s holds its lease)", name, fm.ErrLeaseHeld, holder)
}

// fenced runs fn in a transaction of the main pool that commits only if
// fence may write under the lease named name: it is checked first, so
// that a process that lost its lease learns so before anything else, and
// again last, locking the lease's row until the transaction ends, so that
// no process takes the lease between the check and the commit. Errors
// name what was being done.
func (db *DB) fenced(ctx context.Context, what, name string, fence fm.Fence, fn func(pgx.Tx) error) error {
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if err := checkFence(ctx, tx, name, fence, ""); err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			return err
		}
		return checkFence(ctx, tx, name, fence, " FOR SHARE")
	})
	return db.wrap(what, err)
}

// checkFence checks, in tx, that fence may write under the lease named name
// now: a fence must be the lease's live holding (else the error wraps
// fm.ErrLeaseLost); the zero fence, that no process holds the lease (else
// fm.ErrLeaseHeld). lock, if set, is the row lock the check takes.
func checkFence(ctx context.Context, tx pgx.Tx, name string, fence fm.Fence, lock string) error {
	if fence != (fm.Fence{}) && fence.Lease != name {
		return fmt.Errorf("a write to %s under the lease of %s", name, fence.Lease)
	}
	var holder string
	var epoch int64
	var live bool
	err := tx.QueryRow(ctx, "SELECT holder, epoch, expires_at > clock_timestamp() FROM leases WHERE name = $1"+lock, name).
		Scan(&holder, &epoch, &live)
	found := err == nil
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	switch {
	case fence == (fm.Fence{}) && found && live:
		return fmt.Errorf("%s: %w (%s holds its lease)", name, fm.ErrLeaseHeld, holder)
	case fence == (fm.Fence{}):
		return nil
	case !found:
		return fmt.Errorf("%s: %w: it was given back since, by another process", name, fm.ErrLeaseLost)
	case epoch != fence.Epoch:
		return fmt.Errorf("%s: %w: %s took it since", name, fm.ErrLeaseLost, holder)
	case !live:
		return fmt.Errorf("%s: %w: it lapsed, not renewed in time", name, fm.ErrLeaseLost)
	}
	return nil
}

// Holders returns the holder of each lease held now.
func (db *DB) Holders(ctx context.Context) (map[string]string, error) {
	rows, err := db.pool.Query(ctx, "SELECT name, holder FROM leases WHERE expires_at > now()")
	if err != nil {
		return nil, db.wrap("read the leases", err)
	}
	out := map[string]string{}
	defer rows.Close()
	for rows.Next() {
		var name, holder string
		if err := rows.Scan(&name, &holder); err != nil {
			return nil, err
		}
		out[name] = holder
	}
	return out, rows.Err()
}

// ClaimScheduledRun implements fm.Leases: it records, in the
// scheduled_runs table, that a run of the job name and schedule kind begins
// now, and returns true, unless such a run began less than within ago, on
// any replica: then it returns false and records nothing.
func (db *DB) ClaimScheduledRun(ctx context.Context, name, kind string, within time.Duration) (bool, error) {
	var claimed bool
	err := db.pool.QueryRow(ctx, `INSERT INTO scheduled_runs (name, kind, started_at, holder) VALUES ($1, $2, now(), $3)
		ON CONFLICT (name, kind) DO UPDATE SET started_at = now(), holder = $3
			WHERE scheduled_runs.started_at < now() - make_interval(secs => $4)
		RETURNING true`, name, kind, db.opts.Holder, within.Seconds()).Scan(&claimed)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return claimed, db.wrap("claim a scheduled run of "+name, err)
}

// lease is a lease this process holds.
type lease struct {
	db         *DB
	fence      fm.Fence
	lost, stop chan struct{}
	once       sync.Once
	wg         sync.WaitGroup
}

func (l *lease) Lost() <-chan struct{} { return l.lost }

func (l *lease) Fence() fm.Fence { return l.fence }

// renew extends the lease every third of its TTL; when it cannot before the
// lease lapses, the lease is lost.
func (l *lease) renew() {
	ttl := l.db.opts.LeaseTTL
	t := time.NewTicker(ttl / 3)
	defer t.Stop()
	renewed := time.Now()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), ttl/3)
		err := l.renewOnce(ctx)
		cancel()
		switch {
		case err == nil:
			renewed = time.Now()
			continue
		case errors.Is(err, fm.ErrLeaseLost):
			l.db.logger.Warn("a sync lease was lost: it lapsed, or another process took it", "lease", l.fence.Lease)
		case time.Since(renewed) < ttl:
			continue // try again before it lapses
		default:
			l.db.logger.Warn("a sync lease lapsed: the index database did not answer", "lease", l.fence.Lease, "err", err)
		}
		close(l.lost)
		return
	}
}

// renewOnce extends the lease by its TTL, on the renewals' own connections,
// so that syncs busy with every connection of the pool do not starve it;
// a lease that lapsed is not renewed (ErrLeaseLost).
func (l *lease) renewOnce(ctx context.Context) error {
	tag, err := l.db.renewals.Exec(ctx, `UPDATE leases SET expires_at = now() + make_interval(secs => $3)
		WHERE name = $1 AND epoch = $2 AND expires_at > now()`, l.fence.Lease, l.fence.Epoch, l.db.opts.LeaseTTL.Seconds())
	if err == nil && tag.RowsAffected() == 0 {
		err = fm.ErrLeaseLost
	}
	return err
}

// Release stops renewing the lease and gives it back, unless another
// process holds it by now.
func (l *lease) Release() {
	l.once.Do(func() {
		close(l.stop)
		l.wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := l.db.renewals.Exec(ctx, "DELETE FROM leases WHERE name = $1 AND epoch = $2", l.fence.Lease, l.fence.Epoch); err != nil {
			l.db.logger.Warn("could not give a sync lease back; it lapses by itself", "lease", l.fence.Lease, "err", err)
		}
	})
}
