package postgres_test

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/index/indextest"
	"github.com/foldermirror/foldermirror/index/postgres"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/pgtest"
)

// channel returns a push channel of ID id whose resource names who wrote it.
func channel(id, writer string) fm.PushChannel {
	return fm.PushChannel{ID: id, Feed: "drive:0A", ResourceID: writer, Expiration: time.Unix(2000000000, 0).UTC()}
}

// wantResources fails the test unless a fresh replica of the database
// reads exactly the channels named, each with the resource given.
func wantResources(t *testing.T, url string, want map[string]string) {
	t.Helper()
	c := fmtest.OpenPostgres(t, url, postgres.Options{})
	channels, err := c.Channels(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, ch := range channels {
		got[ch.ID] = ch.ResourceID
	}
	if !maps.Equal(got, want) {
		t.Errorf("channels (ID: resource) %v, want %v", got, want)
	}
}

// Once A's push lease lapsed and B took it (and released it, or holds
// it), A's writes fail saying the lease was lost, and B's stay; a lease
// that lapsed with no one taking it fences its holder's writes too.
func TestFencedPushChannels(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		// b writes under the lease after A's lapsed, and releases it if
		// release is set.
		b, release bool
	}{
		{"B released the lease", true, true},
		{"B holds the lease", true, false},
		{"no one took the lease", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url, a, b := replicas(t)
			la := acquire(t, a, fm.PushLease)
			for _, id := range []string{"kept", "put"} {
				if err := a.PutChannel(ctx, channel(id, "a"), la.Fence()); err != nil {
					t.Fatalf("a write under the lease: %v", err)
				}
			}
			pgtest.LapseLease(t, url, fm.PushLease)
			want := map[string]string{"kept": "a", "put": "a"}
			if tc.b {
				lb := acquire(t, b, fm.PushLease)
				if err := b.PutChannel(ctx, channel("put", "b"), lb.Fence()); err != nil {
					t.Fatal(err)
				}
				want["put"] = "b"
				if tc.release {
					lb.Release()
				}
			}
			wantLeaseLost(t, "A's put after its lease lapsed", a.PutChannel(ctx, channel("put", "a2"), la.Fence()))
			wantLeaseLost(t, "A's new channel after its lease lapsed", a.PutChannel(ctx, channel("new", "a2"), la.Fence()))
			wantLeaseLost(t, "A's delete after its lease lapsed", a.DeleteChannel(ctx, "kept", la.Fence()))
			wantResources(t, url, want)
		})
	}
}

// The zero fence writes only while no process holds the push lease; a
// fence of another lease writes nothing.
func TestPushChannelsUnfenced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, a, b := replicas(t)
	if err := b.PutChannel(ctx, channel("kept", "b"), fm.Fence{}); err != nil {
		t.Fatalf("a write without a lease, none held: %v", err)
	}
	la := acquire(t, a, fm.PushLease)
	for what, err := range map[string]error{
		"put":    b.PutChannel(ctx, channel("new", "b"), fm.Fence{}),
		"delete": b.DeleteChannel(ctx, "kept", fm.Fence{}),
	} {
		if !errors.Is(err, fm.ErrLeaseHeld) || !strings.Contains(err.Error(), "replica-a") {
			t.Errorf("a %s without a lease while A holds it: %v; want it refused, naming A", what, err)
		}
	}
	lib := acquire(t, a, "lib")
	if err := a.PutChannel(ctx, channel("new", "a"), lib.Fence()); err == nil || errors.Is(err, fm.ErrLeaseHeld) {
		t.Errorf("a write under a library's lease: %v; want it refused", err)
	}
	wantResources(t, url, map[string]string{"kept": "b"})
	la.Release()
	if err := b.DeleteChannel(ctx, "kept", fm.Fence{}); err != nil {
		t.Errorf("a write without a lease once A gave it back: %v", err)
	}
	wantResources(t, url, map[string]string{})
}

// A database an earlier foldermirror migrated, without push channels, is
// migrated: its libraries kept, push channels stored from then on.
func TestMigrationAddsPushChannels(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	db := fmtest.OpenPostgres(t, url, postgres.Options{})
	indextest.FullSync(t, db, "lib", fm.LibraryState{RootID: "root", StartPageToken: "42"}, 10, indextest.Folder("root", "", "Root"))
	db.Close()
	pgtest.Exec(t, url, dropSchema5, "DROP TABLE push_channels", "UPDATE foldermirror_schema_version SET version = 3")

	db = fmtest.OpenPostgres(t, url, postgres.Options{})
	if st, err := db.Library(ctx, "lib"); err != nil || st.StartPageToken != "42" {
		t.Errorf("the library after the migration: %+v, %v; want it kept", st, err)
	}
	if err := db.PutChannel(ctx, channel("chan", "db"), fm.Fence{}); err != nil {
		t.Fatal(err)
	}
	wantResources(t, url, map[string]string{"chan": "db"})
}

// Channels before the index was reached is unavailable, not empty.
func TestChannelsBeforeConnect(t *testing.T) {
	t.Parallel()
	db, err := postgres.Open(pgtest.NewDatabase(t), postgres.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Channels(context.Background()); fm.ErrorCode(err) != fm.EUNAVAILABLE {
		t.Errorf("channels before connecting: %v, want EUNAVAILABLE", err)
	}
}
