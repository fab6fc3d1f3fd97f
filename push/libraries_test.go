package push_test

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/internal/googlefake"
	"github.com/foldermirror/foldermirror/push"
)

// discovered returns the library of a discovered shared drive of alice,
// in domain d.
func discovered(d, driveID, name string) fm.Library {
	return fm.Library{ID: driveID, Name: name, Domain: d, StorageAccount: alice, SharedDriveID: driveID}
}

// liveOf returns the fake's live channel of the feed keyed key, if it has
// one alone.
func (e *env) liveOf(key string) (googlefake.PushChannel, bool) {
	chans := e.live()[key]
	if len(chans) != 1 {
		return googlefake.PushChannel{}, false
	}
	return chans[0], true
}

// stored tells whether a channel of that ID is stored.
func (e *env) stored(id string) bool { return slices.Contains(e.storedIDs(), id) }

// TestLibraryDiscovered: a library added to the set has a channel
// registered at once, whose notifications sync it; removed, its channel is
// stopped and deleted at once (not at its renewal), with nothing synced,
// and a notification of it afterwards starts nothing.
func TestLibraryDiscovered(t *testing.T) {
	e := newEnv(t)
	svc := e.run(t, e.libs)
	e.step(t)
	ops := e.fake.CreateSharedDrive("Ops", alice)
	key := "drive:" + ops
	e.set.SetDiscovered(domain, []fm.Library{discovered(domain, ops, "Ops")})
	waitFor(t, "the discovered drive's channel", func() bool {
		ch, ok := e.liveOf(key)
		return ok && e.stored(ch.ID)
	})
	ch, _ := e.liveOf(key)
	// The channel's registration syncs the drive once (the changes before
	// its start token), just after the channel is stored.
	var before []string
	waitFor(t, "the registration's sync of the drive", func() bool {
		before = append(before, e.notifier.take()...)
		return slices.Contains(before, ops)
	})
	e.fake.FlushNotifications()
	e.notifier.take() // the drive's creation, in alice's user feed
	e.fake.CreateFolder(alice, ops, "new")
	e.fake.FlushNotifications()
	if got := e.notifier.take(); !slices.Equal(got, []string{ops}) {
		t.Errorf("a change in the discovered drive notified %v, want %v", got, []string{ops})
	}
	if st, ok := svc.FeedStatus(key); !ok || st.Channel != ch.ID || st.Accepted != 2 {
		t.Errorf("status %+v, %v; want its channel, 2 accepted", st, ok)
	}

	stops := e.fake.CallCount(callStop)
	e.set.SetDiscovered(domain, nil)
	waitFor(t, "the removed drive's channel stopped and deleted", func() bool {
		_, live := e.liveOf(key)
		return !live && !e.stored(ch.ID)
	})
	if got := e.fake.CallCount(callStop) - stops; got != 1 {
		t.Errorf("%d channels.stop, want 1", got)
	}
	if got := len(e.liveIDs()); got != 2 {
		t.Errorf("%d live channels, want those of the 2 feeds left", got)
	}
	if got := e.notifier.take(); len(got) != 0 {
		t.Errorf("the removal notified %v", got)
	}
	if code := e.post(t, http.MethodPost, map[string]string{
		"X-Goog-Channel-ID": ch.ID, "X-Goog-Channel-Token": ch.Token, "X-Goog-Resource-State": "update"}); code != http.StatusNotFound {
		t.Errorf("a notification of the removed drive's channel answered %d, want 404", code)
	}
	if got := e.notifier.take(); len(got) != 0 {
		t.Errorf("a notification of the removed drive's channel notified %v", got)
	}
	if _, ok := svc.FeedStatus(key); ok {
		t.Error("the removed drive's feed still has a status")
	}
}

// TestRemovedFeedSyncsNothing: while the channel of a feed removed from the
// set is still live (Drive did not stop it), its notifications are
// answered and start nothing; it is stopped again later.
func TestRemovedFeedSyncsNothing(t *testing.T) {
	e := newEnv(t)
	failing := &failingStop{Watcher: e.watcher}
	e.watcher = failing
	e.run(t, e.libs)
	e.step(t)
	ops := e.fake.CreateSharedDrive("Ops", alice)
	e.set.SetDiscovered(domain, []fm.Library{discovered(domain, ops, "Ops")})
	e.step(t)
	ch, ok := e.liveOf("drive:" + ops)
	if !ok {
		t.Fatalf("live %+v, want a channel of the drive", e.live())
	}
	e.fake.FlushNotifications()
	e.notifier.take() // the drive's creation, in alice's user feed
	failing.fail.Store(true)
	e.set.SetDiscovered(domain, nil)
	e.step(t)
	if !e.stored(ch.ID) {
		t.Fatal("the channel Drive did not stop was deleted")
	}
	e.fake.CreateFolder(alice, ops, "new")
	e.fake.FlushNotifications()
	if d := e.fake.ChannelDeliveries(ch.ID); d.Delivered != 2 {
		t.Errorf("deliveries %+v, want the sync message and the change's accepted", d)
	}
	if got := e.notifier.take(); len(got) != 0 {
		t.Errorf("a notification of the removed drive's channel notified %v", got)
	}
	failing.fail.Store(false)
	e.step(t)
	if !e.stored(ch.ID) {
		t.Error("the channel Drive did not stop was stopped again before StoreRetryEvery")
	}
	e.clock.advance(push.StoreRetryEvery)
	e.step(t)
	if _, live := e.liveOf("drive:" + ops); live || e.stored(ch.ID) {
		t.Error("the removed drive's channel is live or stored once Drive stops it")
	}
	if got := e.notifier.take(); len(got) != 0 {
		t.Errorf("the removal notified %v", got)
	}
}

// TestLibraryChanged: a library renamed, its feed the same, changes
// nothing of the channels; its notifications still sync it.
func TestLibraryChanged(t *testing.T) {
	e := newEnv(t)
	ops := e.fake.CreateSharedDrive("Ops", alice)
	e.run(t, e.libs)
	e.set.SetDiscovered(domain, []fm.Library{discovered(domain, ops, "Ops")})
	e.step(t)
	before, watches := e.liveIDs(), e.fake.CallCount(callWatch)
	if len(before) != 3 {
		t.Fatalf("live %v, want 3 channels", before)
	}
	if c := e.set.SetDiscovered(domain, []fm.Library{discovered(domain, ops, "Operations")}); len(c.Changed) != 1 {
		t.Fatalf("the rename changed %+v", c)
	}
	e.step(t)
	if got := e.liveIDs(); !slices.Equal(got, before) {
		t.Errorf("live %v, want %v", got, before)
	}
	if got := e.storedIDs(); !slices.Equal(got, before) {
		t.Errorf("stored %v, want %v", got, before)
	}
	if got := e.fake.CallCount(callWatch); got != watches {
		t.Errorf("%d more changes.watch", got-watches)
	}
	if got := e.fake.CallCount(callStop); got != 0 {
		t.Errorf("%d channels.stop", got)
	}
	e.fake.FlushNotifications()
	e.notifier.take() // the libraries the channels' registrations had read
	e.fake.CreateFolder(alice, ops, "new")
	e.fake.FlushNotifications()
	if got := e.notifier.take(); !slices.Equal(got, []string{ops}) {
		t.Errorf("notified %v, want %v", got, []string{ops})
	}
}

// TestChangesElsewhere: a process that does not hold the lease watches
// nothing the set gains, yet shows it; once it takes the lease, it
// watches every feed of the set as it is then.
func TestChangesElsewhere(t *testing.T) {
	e := newEnv(t)
	other, err := e.leases.Replica("replica-b").Acquire(t.Context(), fm.PushLease)
	if err != nil {
		t.Fatal(err)
	}
	svc := e.run(t, e.libs)
	e.step(t)
	ops := e.fake.CreateSharedDrive("Ops", alice)
	e.set.SetDiscovered(domain, []fm.Library{discovered(domain, ops, "Ops")})
	e.step(t)
	if got := e.fake.CallCount(callWatch); got != 0 {
		t.Fatalf("%d changes.watch", got)
	}
	st, ok := svc.FeedStatus("drive:" + ops)
	if !ok || !st.Polling || !strings.Contains(st.Reason, "another process keeps the channels") {
		t.Errorf("status %+v, %v; want polling, kept by another process", st, ok)
	}
	other.Release()
	e.step(t)
	if live := e.live(); len(live) != 3 || len(live["drive:"+ops]) != 1 {
		t.Errorf("live %+v, want a channel of each of the 3 feeds", live)
	}
}

// TestSummary: the feeds counted by what covers them, in all and by
// domain; a feed's status by its key or by one of its libraries.
func TestSummary(t *testing.T) {
	e := newEnv(t)
	ops := e.fake.CreateSharedDrive("Ops", alice)
	e.watcher = &refusing{Watcher: e.watcher, feed: "drive:" + ops}
	svc := e.run(t, e.libs)
	e.set.SetDiscovered("other.org", []fm.Library{discovered("other.org", ops, "Ops")})
	e.step(t)
	want := push.FeedSummary{
		FeedCounts: push.FeedCounts{Feeds: 3, Watched: 2, Polling: 1, Failing: 1},
		Domains: map[string]push.FeedCounts{
			domain:      {Feeds: 2, Watched: 2},
			"other.org": {Feeds: 1, Polling: 1, Failing: 1},
		},
	}
	if got := svc.Summary(); !reflect.DeepEqual(got, want) {
		t.Errorf("summary %+v\nwant    %+v", got, want)
	}
	e.fake.FlushNotifications() // none changes the counts between Status and the calls below
	for _, st := range svc.Status() {
		if got, ok := svc.FeedStatus(st.Feed); !ok || !reflect.DeepEqual(got, st) {
			t.Errorf("FeedStatus(%s) = %+v, %v; want %+v", st.Feed, got, ok, st)
		}
		for _, lib := range st.Libraries {
			if got, ok := svc.LibraryFeedStatus(lib); !ok || !reflect.DeepEqual(got, st) {
				t.Errorf("LibraryFeedStatus(%s) = %+v, %v; want %+v", lib, got, ok, st)
			}
		}
	}
	if st, _ := svc.FeedStatus("drive:" + ops); !st.Polling || st.Reason != errRefused.Error() {
		t.Errorf("status %+v, want polling: %v", st, errRefused)
	}
	if _, ok := svc.FeedStatus("drive:nope"); ok {
		t.Error("a feed not in the set has a status")
	}
	if _, ok := svc.LibraryFeedStatus("nope"); ok {
		t.Error("a library not in the set has a feed")
	}
}

// errRefused is what refusing's Watch answers.
var errRefused = errors.New("changes.watch: refused")

// refusing refuses to watch one feed.
type refusing struct {
	push.Watcher
	feed string
}

func (w *refusing) Watch(ctx context.Context, f push.Feed, id, token, address string, expiration time.Time) (string, time.Time, error) {
	if f.Key == w.feed {
		return "", time.Time{}, errRefused
	}
	return w.Watcher.Watch(ctx, f, id, token, address, expiration)
}

// TestDiscoveryAccountsFeeds: the user log of a storage account whose
// drives are discovered is watched though no library reads it, and its
// notifications are told to discovery (with the account), as well as
// syncing the libraries that read it, if any.
func TestDiscoveryAccountsFeeds(t *testing.T) {
	e := newEnv(t)
	e.discoveryAccounts, e.discovery = []string{bob, alice}, &notifier{}
	e.run(t, e.libs)
	e.step(t)
	waitFor(t, "bob's user log watched", func() bool { _, ok := e.liveOf("user:" + bob); return ok })
	e.fake.FlushNotifications()
	e.notifier.take()
	e.discovery.take()

	e.fake.CreateFolder(bob, "", "in bob's My Drive")
	e.fake.FlushNotifications()
	if got := e.discovery.take(); !slices.Equal(got, []string{bob}) {
		t.Errorf("a change in bob's log told discovery of %v, want bob", got)
	}
	if got := e.notifier.take(); len(got) != 0 {
		t.Errorf("a change in bob's log, which no library reads, synced %v", got)
	}
	e.fake.CreateFolder(alice, e.folderA, "in lib-a")
	e.fake.FlushNotifications()
	if got := e.discovery.take(); !slices.Equal(got, []string{alice}) {
		t.Errorf("a change in alice's log told discovery of %v, want alice", got)
	}
	if got := e.notifier.take(); !slices.Equal(got, []string{"lib-a", "lib-b"}) {
		t.Errorf("a change in alice's log synced %v, want her My Drive libraries", got)
	}
}
