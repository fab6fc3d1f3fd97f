package push_test

import (
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/foldermirror/foldermirror/push"
	"google.golang.org/api/googleapi"
)

// TestDriveWatcher registers channels with the real Drive client on the
// fake: on the change log the syncer reads for each kind of feed, with
// the syncer's parameters.
func TestDriveWatcher(t *testing.T) {
	e := newEnv(t)
	feeds := push.Feeds(e.libs)
	expiration := time.Now().Add(ttl).Truncate(time.Millisecond)
	tests := []struct {
		feed      push.Feed
		wantQuery url.Values // the changes.list the channel watches, as the fake says
	}{
		{feed: feeds[0], wantQuery: url.Values{"driveId": {e.team}, "includeItemsFromAllDrives": {"true"},
			"includeRemoved": {"true"}, "supportsAllDrives": {"true"}}},
		{feed: feeds[1], wantQuery: url.Values{"includeRemoved": {"true"}, "supportsAllDrives": {"true"}}},
	}
	for _, tt := range tests {
		t.Run(tt.feed.Key, func(t *testing.T) {
			id := "watcher-" + tt.feed.DriveID
			resourceID, expires, err := e.watcher.Watch(t.Context(), tt.feed, id, "secret", e.address, expiration)
			if err != nil {
				t.Fatal(err)
			}
			if !expires.Equal(expiration) {
				t.Errorf("expires %v, want %v", expires, expiration)
			}
			live := e.live()[tt.feed.Key]
			if len(live) != 1 || live[0].ID != id || live[0].ResourceID != resourceID || live[0].Token != "secret" ||
				live[0].Address != e.address || live[0].User != alice {
				t.Fatalf("live channels of the feed %+v, want %s on resource %s", live, id, resourceID)
			}
			u, err := url.Parse(live[0].ResourceURI)
			if err != nil {
				t.Fatal(err)
			}
			q := u.Query()
			if q.Get("pageToken") == "" {
				t.Errorf("watched %s, without a page token", q.Encode())
			}
			q.Del("alt")
			q.Del("pageToken")
			if q.Encode() != tt.wantQuery.Encode() {
				t.Errorf("watched %s, want %s", q.Encode(), tt.wantQuery.Encode())
			}
			if err := e.watcher.Stop(t.Context(), tt.feed, id, resourceID); err != nil {
				t.Fatal(err)
			}
			if live := e.live()[tt.feed.Key]; len(live) != 0 {
				t.Errorf("after Stop, live %+v", live)
			}
			if err := e.watcher.Stop(t.Context(), tt.feed, id, resourceID); err != nil {
				t.Errorf("Stop of a channel stopped already: %v", err)
			}
		})
	}
}

// TestDriveWatcherRefusal: Drive's refusals come back saying its reason and
// message.
func TestDriveWatcherRefusal(t *testing.T) {
	e := newEnv(t)
	feed := push.Feeds(e.libs)[1]
	tests := []struct {
		name, address, want string
		setup               func()
	}{
		{name: "unverified domain", address: e.address, setup: func() { e.fake.RefuseWebhooks(e.address, true) },
			want: "push.webhookUrlUnauthorized: Unauthorized WebHook callback channel: " + e.address},
		{name: "not https", address: "http://example.com/hook", setup: func() {},
			want: "push.webhookUrlNotHttps: WebHook callback must be HTTPS: http://example.com/hook"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.setup()
			_, _, err := e.watcher.Watch(t.Context(), feed, "refused", "secret", tt.address, time.Now().Add(ttl))
			var gerr *googleapi.Error
			if err == nil || err.Error() != tt.want || !errors.As(err, &gerr) {
				t.Fatalf("Watch: %v, want %q wrapping a *googleapi.Error", err, tt.want)
			}
			if live := e.fake.PushChannels(); len(live) != 0 {
				t.Errorf("live channels %+v", live)
			}
		})
	}
}
