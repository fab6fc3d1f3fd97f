package googlefake_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/foldermirror/foldermirror/internal/googlefake"
	"google.golang.org/api/drive/v3"
)

// message is a notification a receiver got.
type message struct {
	method, path, body string
	header             http.Header
}

func (m message) state() string  { return m.header.Get("X-Goog-Resource-State") }
func (m message) number() string { return m.header.Get("X-Goog-Message-Number") }

// receiver is a webhook on 127.0.0.1 that records the notifications it gets
// and answers each with what answer returns (200 by default).
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	got    []message
	answer func(message) int
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	r := &receiver{answer: func(message) int { return http.StatusOK }}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		m := message{method: req.Method, path: req.URL.Path, body: string(body), header: req.Header.Clone()}
		r.mu.Lock()
		r.got = append(r.got, m)
		answer := r.answer
		r.mu.Unlock()
		w.WriteHeader(answer(m))
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// setAnswer sets how the receiver answers from now on.
func (r *receiver) setAnswer(answer func(message) int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answer = answer
}

// messages returns what the channel's ID got, in order.
func (r *receiver) messages(channelID string) []message {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []message
	for _, m := range r.got {
		if m.header.Get("X-Goog-Channel-ID") == channelID {
			out = append(out, m)
		}
	}
	return out
}

// states returns the resource states of the channel's messages, in order.
func (r *receiver) states(channelID string) []string {
	var out []string
	for _, m := range r.messages(channelID) {
		out = append(out, m.state())
	}
	return out
}

// changes counts the channel's "change" messages.
func (r *receiver) changes(channelID string) int {
	n := 0
	for _, s := range r.states(channelID) {
		if s == "change" {
			n++
		}
	}
	return n
}

// pushFake starts a fake with alice, bob and carol that accepts http
// webhooks on loopback, and a receiver.
func pushFake(t *testing.T) (*googlefake.Server, *receiver) {
	t.Helper()
	s := newFake(t)
	s.AllowHTTPWebhooks(true)
	return s, newReceiver(t)
}

// webhook is a channel to the receiver's /hook.
func webhook(r *receiver, id string) *drive.Channel {
	return &drive.Channel{Id: id, Type: "web_hook", Address: r.srv.URL + "/hook"}
}

// startToken returns a change page token of svc's user (of the drive, if given).
func startToken(t *testing.T, svc *drive.Service, driveID string) string {
	t.Helper()
	call := svc.Changes.GetStartPageToken()
	if driveID != "" {
		call.DriveId(driveID).SupportsAllDrives(true)
	}
	tok, err := call.Do()
	if err != nil {
		t.Fatal(err)
	}
	return tok.StartPageToken
}

// watch opens a channel on the user's change log, or the drive's.
func watch(t *testing.T, svc *drive.Service, driveID string, ch *drive.Channel) *drive.Channel {
	t.Helper()
	call := svc.Changes.Watch(startToken(t, svc, driveID), ch)
	if driveID != "" {
		call.DriveId(driveID).SupportsAllDrives(true).IncludeItemsFromAllDrives(true)
	}
	got, err := call.Do()
	if err != nil {
		t.Fatalf("changes.watch: %v", err)
	}
	return got
}

func TestWatchAnswersChannelAndPostsSync(t *testing.T) {
	s, rcv := pushFake(t)
	team := s.CreateSharedDrive("Team", alice)
	svc := driveAs(t, s, alice)
	token := startToken(t, svc, "")
	expiration := time.Now().Add(2 * time.Hour).UnixMilli()
	asked := webhook(rcv, "c1")
	asked.Token, asked.Expiration = "secret", expiration
	got, err := svc.Changes.Watch(token, asked).Do()
	if err != nil {
		t.Fatal(err)
	}
	if got.Kind != "api#channel" || got.Id != "c1" || got.ResourceId == "" || got.Token != "secret" || got.Expiration != expiration {
		t.Errorf("channel %+v", got)
	}
	if !strings.Contains(got.ResourceUri, "/drive/v3/changes?") || !strings.Contains(got.ResourceUri, "pageToken="+token) {
		t.Errorf("resourceUri %q", got.ResourceUri)
	}
	s.FlushNotifications()

	msgs := rcv.messages("c1")
	if len(msgs) != 1 {
		t.Fatalf("messages %v, want the sync message", rcv.states("c1"))
	}
	m := msgs[0]
	want := map[string]string{
		"X-Goog-Channel-Id": "c1", "X-Goog-Channel-Token": "secret",
		"X-Goog-Channel-Expiration": time.UnixMilli(expiration).UTC().Format(http.TimeFormat),
		"X-Goog-Resource-Id":        got.ResourceId, "X-Goog-Resource-Uri": got.ResourceUri,
		"X-Goog-Resource-State": "sync", "X-Goog-Message-Number": "1",
	}
	for k, v := range want {
		if m.header.Get(k) != v {
			t.Errorf("%s: %q, want %q", k, m.header.Get(k), v)
		}
	}
	if m.method != http.MethodPost || m.path != "/hook" || m.body != "" {
		t.Errorf("%s %s with body %q, want POST /hook with none", m.method, m.path, m.body)
	}

	// The same feed has the same resource ID; a channel without a token
	// posts no token header; a shared drive's feed is another resource.
	again := watch(t, svc, "", webhook(rcv, "c2"))
	other := watch(t, svc, team, webhook(rcv, "c3"))
	s.FlushNotifications()
	if again.ResourceId != got.ResourceId || other.ResourceId == got.ResourceId {
		t.Errorf("resource IDs %q, %q (same feed), %q (the drive's)", got.ResourceId, again.ResourceId, other.ResourceId)
	}
	if h := rcv.messages("c2")[0].header; h.Values("X-Goog-Channel-Token") != nil {
		t.Errorf("a channel without a token posts X-Goog-Channel-Token %q", h.Values("X-Goog-Channel-Token"))
	}
	var live []string
	for _, c := range s.PushChannels() {
		live = append(live, c.ID+":"+c.User+":"+c.DriveID)
	}
	if w := []string{"c1:" + alice + ":", "c2:" + alice + ":", "c3:" + alice + ":" + team}; !slices.Equal(live, w) {
		t.Errorf("PushChannels %v, want %v", live, w)
	}
	if n := s.CallCount("drive.changes.watch"); n != 3 {
		t.Errorf("drive.changes.watch counted %d times, want 3", n)
	}
}

func TestWatchNotifiesChangesOfItsFeedOnly(t *testing.T) {
	// Each world has shared drives "team" (alice organizer, bob member)
	// and "other" (carol's), and a file of alice's shared with bob.
	type world struct {
		s                          *googlefake.Server
		team, other, shared, share string
	}
	tests := []struct {
		name    string
		as      string
		driveID func(w world) string // the watched drive, "" for the user's log
		tweak   func(c *drive.ChangesWatchCall)
		change  func(w world)
		notify  bool
	}{
		{name: "own file created", as: alice, change: func(w world) { w.s.CreateFile(alice, "", "new", "text/plain") }, notify: true},
		{name: "file of another user, private", as: bob, change: func(w world) { w.s.CreateFile(alice, "", "new", "text/plain") }},
		{name: "file shared with the watcher renamed", as: bob, change: func(w world) { w.s.Rename(w.shared, "renamed") }, notify: true},
		{name: "access lost: removed", as: bob, change: func(w world) { w.s.Unshare(w.shared, w.share) }, notify: true},
		{name: "file of the watched drive", as: bob, driveID: func(w world) string { return w.team },
			change: func(w world) { w.s.CreateFile("", w.team, "new", "text/plain") }, notify: true},
		{name: "file of another drive", as: alice, driveID: func(w world) string { return w.team },
			change: func(w world) { w.s.CreateFile("", w.other, "new", "text/plain") }},
		{name: "My Drive file, drive watched", as: alice, driveID: func(w world) string { return w.team },
			change: func(w world) { w.s.CreateFile(alice, "", "new", "text/plain") }},
		{name: "shared drive file, user's log without all drives", as: alice,
			change: func(w world) { w.s.CreateFile("", w.team, "new", "text/plain") }},
		{name: "shared drive file, user's log with all drives", as: alice,
			tweak:  func(c *drive.ChangesWatchCall) { c.IncludeItemsFromAllDrives(true).SupportsAllDrives(true) },
			change: func(w world) { w.s.CreateFile("", w.team, "new", "text/plain") }, notify: true},
		{name: "shared drive renamed, member's log", as: bob, change: func(w world) { w.s.Rename(w.team, "Team 2") }, notify: true},
		{name: "shared drive renamed, not a member", as: alice, change: func(w world) { w.s.Rename(w.other, "Other 2") }},
		{name: "appDataFolder space only", as: alice, tweak: func(c *drive.ChangesWatchCall) { c.Spaces("appDataFolder") },
			change: func(w world) { w.s.CreateFile(alice, "", "new", "text/plain") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, rcv := pushFake(t)
			w := world{s: s, team: s.CreateSharedDrive("Team", alice), other: s.CreateSharedDrive("Other", carol)}
			w.s.Share(w.team, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: bob})
			w.shared = s.CreateFile(alice, "", "shared", "text/plain")
			w.share = s.Share(w.shared, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: bob})
			svc := driveAs(t, s, tt.as)
			driveID := ""
			if tt.driveID != nil {
				driveID = tt.driveID(w)
			}
			call := svc.Changes.Watch(startToken(t, svc, driveID), webhook(rcv, "c"))
			if driveID != "" {
				call.DriveId(driveID).SupportsAllDrives(true).IncludeItemsFromAllDrives(true)
			}
			if tt.tweak != nil {
				tt.tweak(call)
			}
			if _, err := call.Do(); err != nil {
				t.Fatal(err)
			}
			s.FlushNotifications()
			tt.change(w)
			s.FlushNotifications()

			states := rcv.states("c")
			switch {
			case tt.notify && (len(states) != 2 || states[1] != "change" || rcv.messages("c")[1].number() != "2"):
				t.Errorf("messages %v, want sync then change (number 2)", states)
			case !tt.notify && !slices.Equal(states, []string{"sync"}):
				t.Errorf("messages %v, want the sync message alone", states)
			}
		})
	}
}

func TestMessageNumbersIncrease(t *testing.T) {
	s, rcv := pushFake(t)
	svc := driveAs(t, s, alice)
	watch(t, svc, "", webhook(rcv, "c"))
	s.FlushNotifications()
	for i := range 3 {
		s.CreateFile(alice, "", "f"+string(rune('0'+i)), "text/plain")
		s.FlushNotifications()
	}
	var got []string
	for _, m := range rcv.messages("c") {
		got = append(got, m.state()+" "+m.number())
	}
	if want := []string{"sync 1", "change 2", "change 3", "change 4"}; !slices.Equal(got, want) {
		t.Errorf("messages %v, want %v", got, want)
	}
	if d := s.ChannelDeliveries("c"); d != (googlefake.Deliveries{Delivered: 4}) {
		t.Errorf("deliveries %+v", d)
	}
}

func TestNotificationsCoalesceNeverMissingTheLast(t *testing.T) {
	s, rcv := pushFake(t)
	svc := driveAs(t, s, alice)
	entered, release := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	var once sync.Once
	rcv.setAnswer(func(m message) int {
		if m.state() == "change" {
			once.Do(func() { close(entered); <-release })
		}
		return http.StatusOK
	})
	watch(t, svc, "", webhook(rcv, "c"))
	s.FlushNotifications()

	// While the first change message is being posted, twenty more
	// changes come: they make one message, posted after them.
	s.CreateFile(alice, "", "first", "text/plain")
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the first change was not notified")
	}
	for i := range 20 {
		s.CreateFile(alice, "", "more"+string(rune('a'+i)), "text/plain")
	}
	close(release)
	s.FlushNotifications()
	if got := rcv.states("c"); !slices.Equal(got, []string{"sync", "change", "change"}) {
		t.Errorf("messages %v, want sync and two changes", got)
	}
}

func TestNotificationDelayStillNotifies(t *testing.T) {
	s, rcv := pushFake(t)
	s.SetNotificationDelay(20 * time.Millisecond)
	svc := driveAs(t, s, alice)
	watch(t, svc, "", webhook(rcv, "c"))
	for i := range 10 {
		s.CreateFile(alice, "", "f"+string(rune('a'+i)), "text/plain")
	}
	s.FlushNotifications()
	if n := rcv.changes("c"); n < 1 || n > 10 {
		t.Errorf("%d change messages for 10 changes", n)
	}
}

func TestStopEndsNotifications(t *testing.T) {
	s, rcv := pushFake(t)
	svc := driveAs(t, s, alice)
	c := watch(t, svc, "", webhook(rcv, "c"))
	s.FlushNotifications()

	err := svc.Channels.Stop(&drive.Channel{Id: "c", ResourceId: "wrong"}).Do()
	wantAPIError(t, err, http.StatusNotFound, "notFound")
	if err := svc.Channels.Stop(&drive.Channel{Id: c.Id, ResourceId: c.ResourceId}).Do(); err != nil {
		t.Fatalf("channels.stop: %v", err)
	}
	s.CreateFile(alice, "", "after", "text/plain")
	s.FlushNotifications()
	if got := rcv.states("c"); !slices.Equal(got, []string{"sync"}) {
		t.Errorf("messages %v after stop, want the sync message alone", got)
	}
	if len(s.PushChannels()) != 0 {
		t.Errorf("live channels %+v after stop", s.PushChannels())
	}
	err = svc.Channels.Stop(&drive.Channel{Id: c.Id, ResourceId: c.ResourceId}).Do()
	if gerr := wantAPIError(t, err, http.StatusNotFound, "notFound"); !strings.Contains(gerr.Message, "Channel 'c' not found") {
		t.Errorf("message %q", gerr.Message)
	}

	// The ID is free again.
	watch(t, svc, "", webhook(rcv, "c"))
	s.FlushNotifications()
	if d := s.ChannelDeliveries("c"); d.Delivered != 2 {
		t.Errorf("deliveries %+v, want the two sync messages", d)
	}
	if n := s.CallCount("drive.channels.stop"); n != 3 {
		t.Errorf("drive.channels.stop counted %d times, want 3", n)
	}
}

func TestExpiredChannelsPostNothing(t *testing.T) {
	t.Run("ExpireChannel", func(t *testing.T) {
		s, rcv := pushFake(t)
		svc := driveAs(t, s, alice)
		c := watch(t, svc, "", webhook(rcv, "c"))
		s.FlushNotifications()
		if !s.ExpireChannel("c") || s.ExpireChannel("c") {
			t.Fatal("ExpireChannel: want true for a live channel, then false")
		}
		s.CreateFile(alice, "", "after", "text/plain")
		s.FlushNotifications()
		if got := rcv.states("c"); !slices.Equal(got, []string{"sync"}) {
			t.Errorf("messages %v after expiry", got)
		}
		err := svc.Channels.Stop(&drive.Channel{Id: c.Id, ResourceId: c.ResourceId}).Do()
		wantAPIError(t, err, http.StatusNotFound, "notFound")
	})
	t.Run("at its expiration", func(t *testing.T) {
		s, rcv := pushFake(t)
		svc := driveAs(t, s, alice)
		asked := webhook(rcv, "c")
		asked.Expiration = time.Now().Add(300 * time.Millisecond).UnixMilli()
		watch(t, svc, "", asked)
		for deadline := time.Now().Add(10 * time.Second); len(s.PushChannels()) > 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the channel is still live 10 s after its expiration")
			}
		}
		s.CreateFile(alice, "", "after", "text/plain")
		s.FlushNotifications()
		if n := rcv.changes("c"); n != 0 {
			t.Errorf("%d change messages after expiry", n)
		}
	})
}

func TestWatchExpiration(t *testing.T) {
	const hour, week = time.Hour, 7 * 24 * time.Hour
	tests := []struct {
		name  string
		asked time.Duration // from now; 0: not asked
		want  time.Duration
	}{
		{"default", 0, hour},
		{"as asked", 2 * hour, 2 * hour},
		{"capped at a week", 30 * 24 * hour, week},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, rcv := pushFake(t)
			svc := driveAs(t, s, alice)
			asked := webhook(rcv, "c")
			before := time.Now().Truncate(time.Millisecond)
			if tt.asked != 0 {
				asked.Expiration = before.Add(tt.asked).UnixMilli()
			}
			got := time.UnixMilli(watch(t, svc, "", asked).Expiration)
			after := time.Now()
			if got.Before(before.Add(tt.want)) || got.After(after.Add(tt.want)) {
				t.Errorf("expiration %v, want %v from the call (%v to %v)", got, tt.want, before, after)
			}
		})
	}
}

// pushEnv is a refusal test's fake, receiver and alice's client.
type pushEnv struct {
	t   *testing.T
	s   *googlefake.Server
	svc *drive.Service
	rcv *receiver
}

func TestWatchRefusals(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(e pushEnv)
		call   func(svc *drive.Service, token string, ch *drive.Channel) *drive.ChangesWatchCall
		edit   func(ch *drive.Channel)
		code   int
		reason string
	}{
		{name: "http without AllowHTTPWebhooks", setup: func(e pushEnv) { e.s.AllowHTTPWebhooks(false) },
			code: 400, reason: "push.webhookUrlNotHttps"},
		{name: "http off loopback", edit: func(ch *drive.Channel) { ch.Address = "http://example.com/hook" },
			code: 400, reason: "push.webhookUrlNotHttps"},
		{name: "no host", edit: func(ch *drive.Channel) { ch.Address = "https:///hook" },
			code: 400, reason: "push.webhookUrlNoHostOrAddress"},
		{name: "unverified domain", setup: func(e pushEnv) { e.s.RefuseWebhooks(e.rcv.srv.URL, true) },
			code: 401, reason: "push.webhookUrlUnauthorized"},
		{name: "type", edit: func(ch *drive.Channel) { ch.Type = "email" }, code: 400, reason: "push.channelTypeNotSupported"},
		{name: "no ID", edit: func(ch *drive.Channel) { ch.Id = "" }, code: 400, reason: "required"},
		{name: "ID too long", edit: func(ch *drive.Channel) { ch.Id = strings.Repeat("x", 65) }, code: 400, reason: "push.channelIdInvalid"},
		{name: "ID not unique", setup: func(e pushEnv) { watch(e.t, e.svc, "", webhook(e.rcv, "c")) },
			code: 400, reason: "channelIdNotUnique"},
		{name: "expiration past", edit: func(ch *drive.Channel) { ch.Expiration = time.Now().Add(-time.Minute).UnixMilli() },
			code: 400, reason: "invalid"},
		{name: "no page token", call: func(svc *drive.Service, _ string, ch *drive.Channel) *drive.ChangesWatchCall {
			return svc.Changes.Watch("", ch)
		}, code: 400, reason: "required"},
		{name: "bad page token", call: func(svc *drive.Service, _ string, ch *drive.Channel) *drive.ChangesWatchCall {
			return svc.Changes.Watch("x", ch)
		}, code: 400, reason: "invalid"},
		{name: "driveId without includeItemsFromAllDrives", call: func(svc *drive.Service, token string, ch *drive.Channel) *drive.ChangesWatchCall {
			return svc.Changes.Watch(token, ch).DriveId("0AnyDriveUk9PVA").SupportsAllDrives(true)
		}, code: 403, reason: "teamDriveIncludeItemsRequired"},
		{name: "driveId not a member's", call: func(svc *drive.Service, token string, ch *drive.Channel) *drive.ChangesWatchCall {
			return svc.Changes.Watch(token, ch).DriveId("0AnyDriveUk9PVA").SupportsAllDrives(true).IncludeItemsFromAllDrives(true)
		}, code: 404, reason: "notFound"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, rcv := pushFake(t)
			svc := driveAs(t, s, alice)
			if tt.setup != nil {
				tt.setup(pushEnv{t, s, svc, rcv})
			}
			live := len(s.PushChannels())
			ch := webhook(rcv, "c")
			if tt.edit != nil {
				tt.edit(ch)
			}
			token := startToken(t, svc, "")
			call := svc.Changes.Watch(token, ch)
			if tt.call != nil {
				call = tt.call(svc, token, ch)
			}
			_, err := call.Do()
			gerr := wantAPIError(t, err, tt.code, tt.reason)
			if tt.code == http.StatusUnauthorized && gerr.Header.Get("WWW-Authenticate") != "" {
				t.Errorf("a refused webhook answers WWW-Authenticate %q", gerr.Header.Get("WWW-Authenticate"))
			}
			if n := len(s.PushChannels()); n != live {
				t.Errorf("%d live channels after a refused watch, want %d", n, live)
			}
		})
	}
}

func TestRefusedWebhooksAcceptedAgain(t *testing.T) {
	s, rcv := pushFake(t)
	svc := driveAs(t, s, alice)
	s.RefuseWebhooks(rcv.srv.URL+"/elsewhere", true)
	_, err := svc.Changes.Watch(startToken(t, svc, ""), webhook(rcv, "c")).Do()
	wantAPIError(t, err, http.StatusUnauthorized, "push.webhookUrlUnauthorized")
	s.RefuseWebhooks(rcv.srv.URL, false)
	watch(t, svc, "", webhook(rcv, "c"))
}

func TestFailedDeliveries(t *testing.T) {
	tests := []struct {
		code     int
		attempts int
		want     googlefake.Deliveries
	}{
		{http.StatusNoContent, 1, googlefake.Deliveries{Delivered: 1}},
		{http.StatusAccepted, 1, googlefake.Deliveries{Delivered: 1}},
		{http.StatusServiceUnavailable, 3, googlefake.Deliveries{Failed: 1}},
		{http.StatusInternalServerError, 3, googlefake.Deliveries{Failed: 1}},
		{http.StatusNotFound, 1, googlefake.Deliveries{Failed: 1}},
		{http.StatusUnauthorized, 1, googlefake.Deliveries{Failed: 1}},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.code), func(t *testing.T) {
			s, rcv := pushFake(t)
			rcv.setAnswer(func(message) int { return tt.code })
			watch(t, driveAs(t, s, alice), "", webhook(rcv, "c"))
			s.FlushNotifications()
			if n := len(rcv.messages("c")); n != tt.attempts {
				t.Errorf("%d posts, want %d", n, tt.attempts)
			}
			if d := s.ChannelDeliveries("c"); d != tt.want {
				t.Errorf("deliveries %+v, want %+v", d, tt.want)
			}
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		s := newFake(t)
		dead := httptest.NewServer(http.NotFoundHandler())
		dead.Close()
		watch(t, driveAs(t, s, alice), "", &drive.Channel{Id: "c", Type: "web_hook",
			Address: strings.Replace(dead.URL, "http:", "https:", 1) + "/hook"})
		s.FlushNotifications()
		if d := s.ChannelDeliveries("c"); d != (googlefake.Deliveries{Failed: 1}) {
			t.Errorf("deliveries %+v, want one failed", d)
		}
	})
}

func TestDropNotifications(t *testing.T) {
	s, rcv := pushFake(t)
	svc := driveAs(t, s, alice)
	s.DropNotifications(true)
	watch(t, svc, "", webhook(rcv, "c"))
	s.CreateFile(alice, "", "dropped", "text/plain")
	s.FlushNotifications()
	if got := rcv.states("c"); len(got) != 0 {
		t.Errorf("messages %v while dropping", got)
	}
	s.DropNotifications(false)
	s.CreateFile(alice, "", "posted", "text/plain")
	s.FlushNotifications()
	msgs := rcv.messages("c")
	if len(msgs) != 1 || msgs[0].state() != "change" || msgs[0].number() != "3" {
		t.Errorf("messages %v, want one change, number 3", rcv.states("c"))
	}
	if d := s.ChannelDeliveries("c"); d != (googlefake.Deliveries{Delivered: 1, Dropped: 2}) {
		t.Errorf("deliveries %+v", d)
	}
}

func TestHTTPSWebhookWithItsClient(t *testing.T) {
	s := newFake(t)
	var got sync.Map
	tls := httptest.NewTLSServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Get("X-Goog-Resource-State"), true)
	}))
	t.Cleanup(tls.Close)
	s.SetWebhookClient(tls.Client())
	watch(t, driveAs(t, s, alice), "", &drive.Channel{Id: "c", Type: "web_hook", Address: tls.URL + "/hook"})
	s.FlushNotifications()
	if _, ok := got.Load("sync"); !ok {
		t.Errorf("no sync message over https; deliveries %+v", s.ChannelDeliveries("c"))
	}
}

func TestWatchFaultsMakeNoChannel(t *testing.T) {
	s, rcv := pushFake(t)
	svc := driveAs(t, s, alice)
	token := startToken(t, svc, "")
	s.SetFaults(1, 1, googlefake.Fault500)
	_, err := svc.Changes.Watch(token, webhook(rcv, "c")).Do()
	wantAPIError(t, err, http.StatusInternalServerError, "backendError")
	s.SetFaults(0, 1)
	if n := len(s.PushChannels()); n != 0 {
		t.Errorf("%d live channels after a failed watch", n)
	}
}

func TestCloseEndsDeliveries(t *testing.T) {
	baseline := runtime.NumGoroutine()
	s := googlefake.New()
	s.Start()
	s.AddUser(alice)
	s.AllowHTTPWebhooks(true)
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	rcv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/stuck") {
			once.Do(func() { close(entered) })
			<-release
		}
	}))
	svc := driveAs(t, s, alice)
	for _, id := range []string{"a", "b", "c", "stuck"} {
		watch(t, svc, "", &drive.Channel{Id: id, Type: "web_hook", Address: rcv.URL + "/" + id})
	}
	for i := range 5 {
		s.CreateFile(alice, "", "f"+string(rune('a'+i)), "text/plain")
	}
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the stuck channel never posted")
	}

	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waits for a webhook that does not answer")
	}
	close(release)
	rcv.Close()
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > baseline; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			var stacks bytes.Buffer
			_ = pprof.Lookup("goroutine").WriteTo(&stacks, 1)
			t.Fatalf("%d goroutines after Close, %d before:\n%s", runtime.NumGoroutine(), baseline, stacks.String())
		}
	}
	if n := len(s.PushChannels()); n != 0 {
		t.Errorf("%d live channels after Close", n)
	}
}

func TestExpiredChangeTokensNotifyNothing(t *testing.T) {
	s, rcv := pushFake(t)
	watch(t, driveAs(t, s, alice), "", webhook(rcv, "c"))
	s.FlushNotifications()
	s.ExpireChangeTokens()
	s.FlushNotifications()
	if got := rcv.states("c"); !slices.Equal(got, []string{"sync"}) {
		t.Errorf("messages %v, want the sync message alone", got)
	}
}
