package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/jackc/pgx/v5"
)

var _ fm.Leases = (*DB)(nil)

// Acquire takes the lease named name for this process, unless another
// process holds it; the lease is renewed every third of LeaseTTL until it
// is released.
func (db *DB) Acquire(ctx context.Context, name string) (fm.Lease, error) {
	var holder string
	err := db.pool.QueryRow(ctx, `INSERT INTO leases (name, holder, acquired_at, expires_at)
		VALUES ($1, $2, now(), now() + make_interval(secs => $3))
		ON CONFLICT (name) DO UPDATE SET holder = $2, acquired_at = now(), expires_at = now() + make_interval(secs => $3)
			WHERE leases.expires_at < now() OR leases.holder = $2
		RETURNING holder`, name, db.opts.Holder, db.opts.LeaseTTL.Seconds()).Scan(&holder)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, db.heldBy(ctx, name)
	}
	if err != nil {
		return nil, db.wrap("take the lease of "+name, err)
	}
	l := &lease{db: db, name: name, lost: make(chan struct{}), stop: make(chan struct{})}
	l.wg.Go(l.renew)
	return l, nil
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

// fence refuses, within tx, a write to a library whose lease another
// process holds; the lease's row stays locked until tx ends, so that no
// process takes the lease meanwhile.
func (db *DB) fence(ctx context.Context, tx pgx.Tx, libraryID string) error {
	var holder string
	err := tx.QueryRow(ctx, "SELECT holder FROM leases WHERE name = $1 AND expires_at > now() AND holder <> $2 FOR SHARE",
		libraryID, db.opts.Holder).Scan(&holder)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case err != nil:
		return err
	}
	return fmt.Errorf("%s: %w (%s holds its lease)", libraryID, fm.ErrLeaseHeld, holder)
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

// ClaimScheduledRun records that a scheduled run of kind of the job begins
// now, unless one began less than within ago.
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
	name       string
	lost, stop chan struct{}
	once       sync.Once
	wg         sync.WaitGroup
}

func (l *lease) Lost() <-chan struct{} { return l.lost }

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
		tag, err := l.db.pool.Exec(ctx, `UPDATE leases SET expires_at = now() + make_interval(secs => $3)
			WHERE name = $1 AND holder = $2`, l.name, l.db.opts.Holder, ttl.Seconds())
		cancel()
		switch {
		case err == nil && tag.RowsAffected() == 1:
			renewed = time.Now()
			continue
		case err == nil:
			l.db.logger.Warn("a sync lease was taken by another process", "lease", l.name)
		case time.Since(renewed) < ttl:
			continue // try again before it lapses
		default:
			l.db.logger.Warn("a sync lease lapsed: the index database did not answer", "lease", l.name, "err", err)
		}
		close(l.lost)
		return
	}
}

// Release stops renewing the lease and gives it back.
func (l *lease) Release() {
	l.once.Do(func() {
		close(l.stop)
		l.wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := l.db.pool.Exec(ctx, "DELETE FROM leases WHERE name = $1 AND holder = $2", l.name, l.db.opts.Holder); err != nil {
			l.db.logger.Warn("could not give a sync lease back; it lapses by itself", "lease", l.name, "err", err)
		}
	})
}
