package tests

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/googlefake"
)

// pushPath is where the daemons of these tests receive Drive's
// notifications.
const pushPath = "/drive/push"

// feedStatus is a feed's line in /status's "push".
type feedStatus struct {
	Feed             string    `json:"feed"`
	Libraries        []string  `json:"libraries"`
	Channel          string    `json:"channel"`
	Expiration       time.Time `json:"expiration"`
	LastNotification time.Time `json:"lastNotification"`
	Accepted         int64     `json:"accepted"`
	Refused          int64     `json:"refused"`
	Polling          bool      `json:"polling"`
	Reason           string    `json:"reason"`
}

// pushStatus returns the "push" of a daemon's /status (admin, its base
// URL), and whether /status has one.
func pushStatus(t *testing.T, admin string) ([]feedStatus, bool) {
	t.Helper()
	var st struct {
		Push *[]feedStatus `json:"push"`
	}
	getJSON(t, admin+"/status", "", http.StatusOK, &st)
	if st.Push == nil {
		return nil, false
	}
	return *st.Push, true
}

// waitPushed waits until Drive pushes every feed's changes to the daemon
// whose admin listener is at admin (no feed polling), and returns the
// feeds.
func waitPushed(t *testing.T, admin string) []feedStatus {
	t.Helper()
	var feeds []feedStatus
	waitUntil(t, 10*time.Second, "every feed pushed", func() bool {
		var on bool
		feeds, on = pushStatus(t, admin)
		if !on {
			t.Fatal("/status has no push")
		}
		for _, f := range feeds {
			if f.Polling {
				return false
			}
		}
		return len(feeds) > 0
	})
	return feeds
}

// pushConfig is the configuration of the e2e world m on backend, with
// push on (withPush).
func pushConfig(t *testing.T, fake *googlefake.Server, m *model, backend string) *config.Config {
	t.Helper()
	return withPush(t, fake, e2eConfig(t, fake, m, backend))
}

// withPush turns push on in c and returns it: its API on a port chosen
// now, and push.address on its path there; the incremental schedule is
// every hour, so that only a notification explains a change synced within
// seconds.
func withPush(t *testing.T, fake *googlefake.Server, c *config.Config) *config.Config {
	t.Helper()
	fake.AllowHTTPWebhooks(true)
	c.Listen = freePort(t)
	c.Push = config.Push{Address: "http://" + c.Listen + pushPath, ChannelTTL: time.Hour}
	c.Schedule.Incremental = "@every 1h"
	return c
}

// servesName waits until the folder id, read from the API at base as
// alice, has name.
func servesName(t *testing.T, fake *googlefake.Server, base, id, name string) {
	t.Helper()
	token := fake.GoogleIDToken(e2eClient, "alice@example.com")
	waitUntil(t, 10*time.Second, base+" serving "+name, func() bool {
		var f struct{ Name string }
		getJSON(t, base+"/folder/v1/files/"+id, token, http.StatusOK, &f)
		return f.Name == name
	})
}

// metric returns the value of the sample of a daemon's /metrics (admin,
// its base URL) named with its labels as the exposition writes them, 0 if
// there is none.
func metric(t *testing.T, admin, sample string) float64 {
	t.Helper()
	resp, err := http.Get(admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(sample) + ` (\S+)$`).FindSubmatch(body)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatalf("%s: %v", sample, err)
	}
	return v
}

// With push.address on the daemon's API listener, a change made in Drive
// is served within seconds, though the schedule syncs only every hour.
func TestPushServesAChange(t *testing.T) {
	t.Parallel()
	fake := fmtest.StartGoogle(t) // closed after the daemon
	m := buildE2EWorld(fake)
	p := startServe(t, fmtest.WriteConfig(t, pushConfig(t, fake, m, fmtest.Bolt)))
	if !strings.Contains(p.stderr.String(), `address=http://`+strings.TrimPrefix(p.api, "http://")+pushPath) {
		t.Errorf("serve did not log that push is on, and where:\n%s", p.stderr)
	}
	waitReady(t, p.admin+"/readyz")
	feeds := waitPushed(t, p.admin)
	if len(feeds) != 1 || feeds[0].Feed != "user:"+e2eStorage || feeds[0].Channel == "" || !feeds[0].Expiration.After(time.Now()) {
		t.Errorf("push status %+v; want the storage account's feed, with its channel", feeds)
	}
	folder := m.children(m.root)[0].id
	fake.Rename(folder, "Renamed in Drive")
	servesName(t, fake, p.api, folder, "Renamed in Drive")
	feeds, _ = pushStatus(t, p.admin)
	if feeds[0].Accepted < 1 || feeds[0].LastNotification.IsZero() {
		t.Errorf("push status %+v; want the notification accepted", feeds)
	}
	for _, ch := range fake.PushChannels() {
		if ch.Address != "http://"+strings.TrimPrefix(p.api, "http://")+pushPath || ch.Failed > 0 {
			t.Errorf("channel %s posts to %s, %d posts failed", ch.ID, ch.Address, ch.Failed)
		}
		if ch.Token == "" || strings.Contains(p.stderr.String(), ch.Token) {
			t.Errorf("channel %s has the token %q, which the log shows (or none)", ch.ID, ch.Token)
		}
	}
}

// A POST to the push path that is not a notification of a channel of the
// service's (headers missing, an unknown channel, a wrong token) is
// refused with a 4xx and syncs nothing: /status counts it refused, and
// /metrics by result; of the incremental syncs, only the one a real
// notification brings runs.
func TestPushForgedNotifications(t *testing.T) {
	t.Parallel()
	fake := fmtest.StartGoogle(t) // closed after the daemon
	m := buildE2EWorld(fake)
	p := startServe(t, fmtest.WriteConfig(t, pushConfig(t, fake, m, fmtest.Bolt)))
	waitReady(t, p.admin+"/readyz")
	channel := waitPushed(t, p.admin)[0].Channel
	const incremental = `foldermirror_syncs_total{kind="incremental",library="eng"}`
	// The channel's registration has the library read once (the changes
	// before its start token); the forged posts come after that sync.
	waitUntil(t, 10*time.Second, "the sync the channel's registration brings", func() bool { return metric(t, p.admin, incremental) == 1 })
	forged := []struct {
		name             string
		method           string
		id, token, state string
		want             int
		result           string
		countsForTheFeed bool
	}{
		{"no headers", http.MethodPost, "", "", "", http.StatusBadRequest, "malformed", false},
		{"no token", http.MethodPost, channel, "", "exists", http.StatusBadRequest, "malformed", false},
		{"an unknown channel", http.MethodPost, strings.Repeat("ab", 16), "guess", "exists", http.StatusNotFound, "unknown_channel", false},
		{"a channel of another form", http.MethodPost, "../../admin", "guess", "exists", http.StatusNotFound, "unknown_channel", false},
		{"a wrong token", http.MethodPost, channel, "guess", "exists", http.StatusForbidden, "bad_token", true},
		{"a GET", http.MethodGet, channel, "guess", "exists", http.StatusMethodNotAllowed, "method", false},
	}
	for _, f := range forged {
		req, _ := http.NewRequest(f.method, p.api+pushPath, nil)
		for name, v := range map[string]string{"X-Goog-Channel-ID": f.id, "X-Goog-Channel-Token": f.token, "X-Goog-Resource-State": f.state} {
			if v != "" {
				req.Header.Set(name, v)
			}
		}
		resp, body := fmtest.Do(t, req)
		if resp.StatusCode != f.want {
			t.Errorf("%s: %d, want %d: %s", f.name, resp.StatusCode, f.want, body)
		}
		if f.method == http.MethodGet && resp.Header.Get("Allow") != http.MethodPost {
			t.Errorf("%s: Allow %q, want POST", f.name, resp.Header.Get("Allow"))
		}
	}
	if feeds, _ := pushStatus(t, p.admin); feeds[0].Refused != 1 {
		t.Errorf("push status %+v; want the wrong token refused for the feed", feeds)
	}
	for result, want := range map[string]float64{"malformed": 2, "unknown_channel": 2, "bad_token": 1, "method": 1, "change": 0} {
		sample := fmt.Sprintf(`foldermirror_push_notifications_total{result=%q}`, result)
		if got := metric(t, p.admin, sample); got != want {
			t.Errorf("%s %v, want %v", sample, got, want)
		}
	}
	// Had a forged notification started a sync, the real one would bring
	// a second: the one pending after it, or one after it ended.
	folder := m.children(m.root)[0].id
	fake.Rename(folder, "Renamed for real")
	servesName(t, fake, p.api, folder, "Renamed for real")
	if got := metric(t, p.admin, incremental); got != 2 {
		t.Errorf("%s %v; want 2, the registration's and the real notification's", incremental, got)
	}
}

// When Drive refuses the watch, /status shows the feed polling with
// Drive's reason, the schedule syncs changes as before, and the watch is
// tried again at its next tick.
func TestPushRefusedByDrive(t *testing.T) {
	t.Parallel()
	fake := fmtest.StartGoogle(t) // closed after the daemon
	m := buildE2EWorld(fake)
	c := pushConfig(t, fake, m, fmtest.Bolt)
	c.Schedule.Incremental = "@every 1s"
	fake.RefuseWebhooks(c.Push.Address, true)
	p := startServe(t, fmtest.WriteConfig(t, c))
	waitReady(t, p.admin+"/readyz")
	var feeds []feedStatus
	waitUntil(t, 10*time.Second, "the refusal shown", func() bool {
		feeds, _ = pushStatus(t, p.admin)
		return len(feeds) == 1 && strings.Contains(feeds[0].Reason, "Unauthorized WebHook callback channel")
	})
	if !feeds[0].Polling || feeds[0].Channel != "" || !strings.Contains(feeds[0].Reason, "push.webhookUrlUnauthorized") {
		t.Errorf("push status %+v; want the feed polling, with Drive's reason", feeds)
	}
	folder := m.children(m.root)[0].id
	fake.Rename(folder, "Renamed, polled")
	servesName(t, fake, p.api, folder, "Renamed, polled")
	if n := len(fake.PushChannels()); n != 0 {
		t.Errorf("%d channels live; want none", n)
	}

	fake.RefuseWebhooks(c.Push.Address, false)
	waitPushed(t, p.admin)
}

// config check refuses a push.address that is not an http(s) URL, naming
// the key.
func TestPushAddressChecked(t *testing.T) {
	t.Parallel()
	fake := fmtest.StartGoogle(t)
	c := pushConfig(t, fake, buildE2EWorld(fake), fmtest.Bolt)
	c.Push.Address = "ftp://127.0.0.1" + pushPath
	path := fmtest.WriteConfig(t, c)
	r := runBinary(t, "config", "check", "--config", path)
	if r.code != 1 || !strings.Contains(r.stderr, filepath.Base(path)+": push.address: ") {
		t.Errorf("config check: status %d, said %s; want 1 naming push.address", r.code, r.said())
	}
}

// Replicas on one PostgreSQL database keep one set of channels, whose
// notifications Drive posts to one replica's address (push.address is the
// service's): a change made in Drive is served by every replica within
// seconds, though each schedule syncs only every hour.
func TestPushReplicas(t *testing.T) {
	t.Parallel()
	fake := fmtest.StartGoogle(t) // closed after the replicas
	m := buildE2EWorld(fake)
	c := pushConfig(t, fake, m, fmtest.Postgres)
	replicas := make([]*process, 3)
	for i := range replicas {
		r := *c
		if i > 0 { // the others listen elsewhere, and are posted nothing
			r.Listen = "127.0.0.1:0"
		}
		r.DataDir = filepath.Join(t.TempDir(), "data")
		r.Path = filepath.Join(t.TempDir(), "config.yaml")
		replicas[i] = startServe(t, fmtest.WriteConfig(t, &r))
	}
	for _, p := range replicas {
		waitReady(t, p.admin+"/readyz")
	}
	waitPushed(t, replicas[0].admin)
	if n := len(fake.PushChannels()); n != 1 {
		t.Errorf("%d channels live; want one for the service's one feed", n)
	}
	folder := m.children(m.root)[0].id
	fake.Rename(folder, "Renamed for every replica")
	for _, p := range replicas {
		servesName(t, fake, p.api, folder, "Renamed for every replica")
	}
	if feeds, _ := pushStatus(t, replicas[0].admin); feeds[0].Accepted < 1 {
		t.Errorf("replica 0's push status %+v; want the notification accepted there", feeds)
	}
}
