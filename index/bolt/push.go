package bolt

import (
	"context"
	"fmt"

	fm "github.com/foldermirror/foldermirror"
	bbolt "go.etcd.io/bbolt"
)

// Push channels: pushChannels/ holds channel ID → channel record (see
// encodeChannel). The bucket is created at Open, in a new file and in one
// an earlier foldermirror wrote alike; a foldermirror that does not know it
// ignores it, so it takes no new schema version.

var bucketPushChannels = []byte("pushChannels")

var _ fm.PushChannels = (*DB)(nil)

// Channels returns every stored push channel, in order of ID.
func (db *DB) Channels(context.Context) ([]fm.PushChannel, error) {
	var channels []fm.PushChannel
	err := db.bolt.View(func(tx *bbolt.Tx) error {
		b, err := pushChannels(tx)
		if err != nil {
			return err
		}
		return b.ForEach(func(k, v []byte) error {
			ch, err := decodeChannel(string(k), v)
			if err != nil {
				return fmt.Errorf("push channel %s: %w", k, err)
			}
			channels = append(channels, ch)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read the push channels in index %s: %w", db.path, err)
	}
	return channels, nil
}

// PutChannel stores ch, replacing the channel of its ID. The fence is
// ignored, as by every write of an index one process holds alone.
func (db *DB) PutChannel(_ context.Context, ch fm.PushChannel, _ fm.Fence) error {
	return db.update("write push channel "+ch.ID, func(tx *bbolt.Tx) error {
		b, err := pushChannels(tx)
		if err != nil {
			return err
		}
		return b.Put([]byte(ch.ID), encodeChannel(&ch))
	})
}

// DeleteChannel removes the push channel of that ID, if any. The fence is
// ignored, as by every write of an index one process holds alone.
func (db *DB) DeleteChannel(_ context.Context, id string, _ fm.Fence) error {
	return db.update("delete push channel "+id, func(tx *bbolt.Tx) error {
		b, err := pushChannels(tx)
		if err != nil {
			return err
		}
		return b.Delete([]byte(id))
	})
}

// pushChannels returns the bucket of the push channels, which Open made.
func pushChannels(tx *bbolt.Tx) (*bbolt.Bucket, error) {
	b := tx.Bucket(bucketPushChannels)
	if b == nil {
		return nil, fmt.Errorf("%w: no bucket of push channels", errCorrupt)
	}
	return b, nil
}

// encodeChannel encodes everything of ch but its ID, which is the record's
// key: the token's digest (32 bytes), the feed, the resource ID and the
// expiration.
func encodeChannel(ch *fm.PushChannel) []byte {
	e := encoder{buf: make([]byte, 0, 48+len(ch.Feed)+len(ch.ResourceID))}
	e.byte(recordFormat)
	e.buf = append(e.buf, ch.TokenSHA256[:]...)
	e.str(ch.Feed)
	e.str(ch.ResourceID)
	e.time(ch.Expiration)
	return e.buf
}

// decodeChannel decodes a channel record, whose ID it sets to id.
func decodeChannel(id string, b []byte) (fm.PushChannel, error) {
	d := decoder{buf: b}
	d.header()
	ch := fm.PushChannel{ID: id}
	if d.err == nil && len(d.buf) < len(ch.TokenSHA256) {
		d.err = errCorrupt
	}
	if d.err == nil {
		d.buf = d.buf[copy(ch.TokenSHA256[:], d.buf):]
	}
	ch.Feed = d.str()
	ch.ResourceID = d.str()
	ch.Expiration = d.time()
	return ch, d.done()
}
