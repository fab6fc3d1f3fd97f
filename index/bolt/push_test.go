package bolt_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/index/bolt"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	bbolt "go.etcd.io/bbolt"
)

// An index an earlier foldermirror wrote, of the same schema but without
// push channels, is kept and served, at the same schema version, with
// channels stored from then on.
func TestOpenAddsPushChannels(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := fmtest.OpenBolt(t, dir)
	fullSync(t, db, "lib", state, 10, folder("root", "", "Root"))
	db.Close()
	rawBolt(t, dir, func(tx *bbolt.Tx) error { return tx.DeleteBucket([]byte("pushChannels")) })

	db = fmtest.OpenBolt(t, dir)
	if got, err := db.Channels(ctx); err != nil || len(got) != 0 {
		t.Errorf("channels of an index without them: %v, %v; want none", got, err)
	}
	if st, err := db.Library(ctx, "lib"); err != nil || st.StartPageToken != state.StartPageToken {
		t.Errorf("the library: %+v, %v; want it served as it was", st, err)
	}
	ch := fm.PushChannel{ID: "chan", Feed: "drive:0A", Expiration: time.Unix(2000000000, 0).UTC()}
	if err := db.PutChannel(ctx, ch, fm.Fence{}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	rawBolt(t, dir, func(tx *bbolt.Tx) error {
		if v := string(tx.Bucket([]byte("meta")).Get([]byte("schema"))); v != bolt.SchemaVersion {
			t.Errorf("schema %q, want %q", v, bolt.SchemaVersion)
		}
		if tx.Bucket([]byte("pushChannels")).Get([]byte("chan")) == nil {
			t.Error("the channel was not stored")
		}
		return nil
	})
}

// The bbolt index fences nothing: a write under any fence commits.
func TestPushChannelsIgnoreFences(t *testing.T) {
	ctx := context.Background()
	db := fmtest.OpenBolt(t, t.TempDir())
	for _, fence := range []fm.Fence{{Lease: fm.PushLease, Epoch: 42}, {Lease: "lib", Epoch: 7}} {
		if err := db.PutChannel(ctx, fm.PushChannel{ID: "chan"}, fence); err != nil {
			t.Errorf("PutChannel under %+v: %v", fence, err)
		}
		if err := db.DeleteChannel(ctx, "chan", fence); err != nil {
			t.Errorf("DeleteChannel under %+v: %v", fence, err)
		}
	}
}

// A channel record that cannot be decoded fails Channels, naming the
// channel and the index file.
func TestCorruptPushChannel(t *testing.T) {
	dir := t.TempDir()
	db := fmtest.OpenBolt(t, dir)
	db.Close()
	rawBolt(t, dir, func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("pushChannels")).Put([]byte("chan"), []byte{1, 2, 3})
	})
	db = fmtest.OpenBolt(t, dir)
	_, err := db.Channels(context.Background())
	if !errors.Is(err, fm.ErrCorrupt) || !strings.Contains(err.Error(), "chan") || !strings.Contains(err.Error(), db.Path()) {
		t.Errorf("channels: %v; want a corrupt record, naming the channel and %s", err, db.Path())
	}
}
