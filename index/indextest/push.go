package indextest

import (
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
)

// The push channels: stored, replaced by ID, deleted (a missing ID is no
// error), kept across a reopening, their token digests byte for byte and
// their expirations to the microsecond at least; a write under the index's
// own PushLease commits.
func testPushChannels(t *testing.T, b Backend) {
	ctx := context.Background()
	idx := b.Open(t)
	wantChannels(t, idx, "a new index")

	var digest [32]byte // a digest with 0x00 and 0xff bytes in it
	for i := range digest {
		digest[i] = byte(i * 8)
	}
	digest[31] = 0xff
	chA := fm.PushChannel{ID: "chan-a", TokenSHA256: sha256.Sum256([]byte("secret a")), Feed: "user:storage@example.com",
		ResourceID: "res-a", Expiration: time.Date(2031, 5, 6, 7, 8, 9, 123456000, time.UTC)}
	chB := fm.PushChannel{ID: "chan-b", TokenSHA256: digest, Feed: "drive:0AbCdEf",
		ResourceID: "res-b", Expiration: time.Date(2031, 5, 6, 8, 0, 0, 1000, time.FixedZone("CEST", 2*3600))}
	putChannel(t, idx, chA, fm.Fence{})
	putChannel(t, idx, chB, fm.Fence{})
	wantChannels(t, idx, "two channels put", chA, chB)

	chA2 := fm.PushChannel{ID: "chan-a", TokenSHA256: sha256.Sum256([]byte("secret a, renewed")), Feed: "drive:0Other",
		ResourceID: "res-a2", Expiration: chA.Expiration.Add(time.Hour)}
	putChannel(t, idx, chA2, fm.Fence{})
	wantChannels(t, idx, "a channel put again under its ID", chA2, chB)

	idx = b.Reopen(t, idx)
	wantChannels(t, idx, "after reopening", chA2, chB)

	for _, id := range []string{"chan-b", "chan-b", "never-stored"} {
		if err := idx.DeleteChannel(ctx, id, fm.Fence{}); err != nil {
			t.Errorf("DeleteChannel(%s): %v", id, err)
		}
	}
	wantChannels(t, idx, "a channel deleted", chA2)

	l, err := idx.Leases().Acquire(ctx, fm.PushLease)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	chC := fm.PushChannel{ID: "chan-c", Feed: "user:other@example.com", ResourceID: "res-c", Expiration: chA.Expiration}
	putChannel(t, idx, chC, l.Fence())
	if err := idx.DeleteChannel(ctx, chA2.ID, l.Fence()); err != nil {
		t.Errorf("DeleteChannel under the push lease: %v", err)
	}
	wantChannels(t, idx, "writes under the push lease", chC)
}

// putChannel stores ch under fence, failing the test if it cannot.
func putChannel(t *testing.T, idx fm.PushChannels, ch fm.PushChannel, fence fm.Fence) {
	t.Helper()
	if err := idx.PutChannel(context.Background(), ch, fence); err != nil {
		t.Fatalf("PutChannel(%s): %v", ch.ID, err)
	}
}

// wantChannels fails the test unless idx stores exactly want, in any
// order: every field alike, the expirations the same instant.
func wantChannels(t *testing.T, idx fm.PushChannels, when string, want ...fm.PushChannel) {
	t.Helper()
	got, err := idx.Channels(context.Background())
	if err != nil {
		t.Fatalf("%s: Channels: %v", when, err)
	}
	if g, w := describeChannels(got), describeChannels(want); !slices.Equal(g, w) {
		t.Errorf("%s: channels\n%s\nwant\n%s", when, strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
}

// describeChannels describes channels, sorted by ID, one line each, with
// the expiration in UTC to the nanosecond.
func describeChannels(channels []fm.PushChannel) []string {
	channels = slices.SortedFunc(slices.Values(channels), func(x, y fm.PushChannel) int { return cmp.Compare(x.ID, y.ID) })
	lines := make([]string, 0, len(channels))
	for _, ch := range channels {
		lines = append(lines, fmt.Sprintf("%s %x %s %s %s", ch.ID, ch.TokenSHA256, ch.Feed, ch.ResourceID,
			ch.Expiration.UTC().Format(time.RFC3339Nano)))
	}
	return lines
}
