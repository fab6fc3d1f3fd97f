package postgres

import (
	"context"
	"fmt"

	fm "github.com/foldermirror/foldermirror"
	"github.com/jackc/pgx/v5"
)

var _ fm.PushChannels = (*DB)(nil)

// Channels returns every stored push channel, in order of ID, as the
// database holds them now; EUNAVAILABLE before the index was reached.
func (db *DB) Channels(ctx context.Context) ([]fm.PushChannel, error) {
	if !db.Ready() {
		return nil, db.unavailable()
	}
	rows, err := db.pool.Query(ctx, "SELECT id, token_sha256, feed, resource_id, expiration FROM push_channels ORDER BY id")
	if err != nil {
		return nil, db.wrap("read the push channels", err)
	}
	channels, err := pgx.CollectRows(rows, scanChannel)
	return channels, db.wrap("read the push channels", err)
}

// scanChannel reads a row of push_channels.
func scanChannel(row pgx.CollectableRow) (fm.PushChannel, error) {
	var ch fm.PushChannel
	var digest []byte
	if err := row.Scan(&ch.ID, &digest, &ch.Feed, &ch.ResourceID, &ch.Expiration); err != nil {
		return ch, err
	}
	if len(digest) != len(ch.TokenSHA256) {
		return ch, fmt.Errorf("push channel %s: %w", ch.ID, fm.ErrCorrupt)
	}
	copy(ch.TokenSHA256[:], digest)
	ch.Expiration = ch.Expiration.UTC()
	return ch, nil
}

// PutChannel stores ch, replacing the channel of its ID, for every replica,
// in a transaction fenced by fence: a fence of fm.PushLease, or the zero
// Fence while no process holds that lease.
func (db *DB) PutChannel(ctx context.Context, ch fm.PushChannel, fence fm.Fence) error {
	return db.fenced(ctx, "write push channel "+ch.ID, fm.PushLease, fence, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO push_channels (id, token_sha256, feed, resource_id, expiration)
			VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (id) DO UPDATE SET token_sha256 = $2, feed = $3, resource_id = $4, expiration = $5`,
			ch.ID, ch.TokenSHA256[:], ch.Feed, ch.ResourceID, ch.Expiration)
		return err
	})
}

// DeleteChannel removes the push channel of that ID, if any, for every
// replica, in a transaction fenced by fence, as PutChannel's.
func (db *DB) DeleteChannel(ctx context.Context, id string, fence fm.Fence) error {
	return db.fenced(ctx, "delete push channel "+id, fm.PushLease, fence, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "DELETE FROM push_channels WHERE id = $1", id)
		return err
	})
}
