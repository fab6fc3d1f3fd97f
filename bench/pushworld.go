package main

import (
	"bufio"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	"google.golang.org/api/drive/v3"

	"github.com/foldermirror/foldermirror/internal/googlefake"
)

// pushPath is the path of push.address: where the API listener takes
// Drive's notifications.
const pushPath = "/drive/notifications"

// pushLib is a library of a push world, with the folders its figures
// change: leaves, the deepest level's, and inner, the level above.
type pushLib struct {
	library
	leaves, inner []string
}

// account is the storage account the library is read as.
func (l pushLib) account() string {
	if l.StorageAccount != "" {
		return l.StorageAccount
	}
	return storageAccount
}

// rootID is the ID of the library's root: its folder, or its shared drive.
func (l pushLib) rootID() string { return cmp.Or(l.RootFolderID, l.SharedDriveID) }

// pushDepth is how many levels below its root a push world's library has.
const pushDepth = 3

// buildPushMyDrive makes a My Drive library of n folders (its root
// included) in account's My Drive, shared as the size worlds' root is.
func (w *world) buildPushMyDrive(ctx context.Context, id, account string, n int) (pushLib, error) {
	name := "Push " + id
	root := w.fake.CreateFolder(account, "", name)
	for _, p := range rootGrants {
		w.fake.Share(root, p)
	}
	lib := pushLib{library: library{ID: id, Name: name, RootFolderID: root, StorageAccount: account, Folders: n}}
	err := lib.grow(ctx, w.fake, account, root, n-1)
	return lib, err
}

// buildPushDrive makes a shared-drive library of n folders (the drive
// included) organised by account, whose members are the staff group.
func (w *world) buildPushDrive(ctx context.Context, id, account string, n int) (pushLib, error) {
	name := "Push " + id
	d := w.fake.CreateSharedDrive(name, account)
	w.fake.Share(d, googlefake.Permission{Type: "group", Role: "reader", EmailAddress: staffGroup, DisplayName: "Staff"})
	lib := pushLib{library: library{ID: id, Name: name, SharedDriveID: d, StorageAccount: account, Folders: n}}
	err := lib.grow(ctx, w.fake, account, d, n-1)
	return lib, err
}

// grow adds n folders under root, pushDepth levels deep, noting the two
// deepest levels' folders.
func (l *pushLib) grow(ctx context.Context, fake *googlefake.Server, account, root string, n int) error {
	leaves, err := growLevels(ctx, root, n, pushDepth, func(parent string, level, i int) string {
		f := fake.CreateFolder(account, parent, folderName(level, i))
		if level == pushDepth-1 {
			l.inner = append(l.inner, f)
		}
		return f
	})
	l.leaves = leaves
	if len(l.inner) == 0 {
		l.inner = []string{root}
	}
	return err
}

// libraries returns the libraries of libs, for a configuration.
func libraries(libs []pushLib) []library {
	out := make([]library, len(libs))
	for i, l := range libs {
		out[i] = l.library
	}
	return out
}

// pushEnv is the environment that turns push on in a daemon: Drive posts
// to address, each channel asked to live ttl.
func pushEnv(address string, ttl time.Duration) []string {
	return []string{"FOLDERMIRROR_PUSH_ADDRESS=" + address, "FOLDERMIRROR_PUSH_CHANNELTTL=" + ttl.String()}
}

// delivery is one notification the fake posted.
type delivery struct {
	channel, state string
	// at is when the fake began to post it; took how long until the
	// receiver's answer (status, 0 if none).
	at     time.Time
	took   time.Duration
	status int
	// target is the host it was posted to.
	target string
}

// deliveries is the fake's webhook transport: it records each notification
// and, with targets set, sends each to the next of them in turn, as a load
// balancer in front of replicas would.
type deliveries struct {
	next http.RoundTripper

	mu      sync.Mutex
	all     []delivery
	targets []string
	turn    int
}

// newDeliveries makes fake post its notifications through a recorder.
func newDeliveries(fake *googlefake.Server) *deliveries {
	d := &deliveries{next: &http.Transport{MaxIdleConnsPerHost: 16, IdleConnTimeout: 30 * time.Second}}
	fake.SetWebhookClient(&http.Client{Transport: d})
	return d
}

// RoundTrip posts a notification, timing it.
func (d *deliveries) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := delivery{channel: headerValue(req.Header, "X-Goog-Channel-ID"), state: headerValue(req.Header, "X-Goog-Resource-State"),
		at: time.Now()}
	d.mu.Lock()
	if len(d.targets) > 0 {
		req = req.Clone(req.Context())
		req.URL.Host, req.Host = d.targets[d.turn%len(d.targets)], ""
		d.turn++
	}
	d.mu.Unlock()
	rec.target = req.URL.Host
	resp, err := d.next.RoundTrip(req)
	rec.took = time.Since(rec.at)
	if err == nil {
		rec.status = resp.StatusCode
	}
	d.mu.Lock()
	d.all = append(d.all, rec)
	d.mu.Unlock()
	return resp, err
}

// spread sends the notifications to hosts in turn.
func (d *deliveries) spread(hosts []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.targets = hosts
}

// first returns the first "change" notification to one of channels that
// the fake began to post at or after from.
func (d *deliveries) first(from time.Time, channels map[string]bool) (delivery, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var best delivery
	found := false
	for _, n := range d.all {
		if n.state == "change" && channels[n.channel] && !n.at.Before(from) && (!found || n.at.Before(best.at)) {
			best, found = n, true
		}
	}
	return best, found
}

// since returns the notifications the fake began to post at or after from.
func (d *deliveries) since(from time.Time) []delivery {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(d.all), func(n delivery) bool { return n.at.Before(from) })
}

// headerValue reads a header whatever the case of its name in the map
// (the fake writes Google's spelling, X-Goog-Channel-ID, not Go's).
func headerValue(h http.Header, name string) string {
	for k, v := range h {
		if strings.EqualFold(k, name) && len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

// feedChannels returns the IDs of the fake's live channels that watch
// lib's feed: its shared drive's change log, or its storage account's.
func feedChannels(fake *googlefake.Server, lib pushLib) map[string]bool {
	out := map[string]bool{}
	for _, ch := range fake.PushChannels() {
		if ch.DriveID == lib.SharedDriveID && (ch.DriveID != "" || strings.EqualFold(ch.User, lib.account())) {
			out[ch.ID] = true
		}
	}
	return out
}

// feedKey names lib's feed as the daemon does: "drive:ID" or "user:EMAIL".
func feedKey(lib pushLib) string {
	if lib.SharedDriveID != "" {
		return "drive:" + lib.SharedDriveID
	}
	return "user:" + strings.ToLower(lib.account())
}

// coveredFeeds returns the feeds (their keys) a live channel of the fake
// watches.
func coveredFeeds(fake *googlefake.Server) map[string]bool {
	out := map[string]bool{}
	for _, ch := range fake.PushChannels() {
		if ch.DriveID != "" {
			out["drive:"+ch.DriveID] = true
		} else {
			out["user:"+strings.ToLower(ch.User)] = true
		}
	}
	return out
}

// waitCovered waits until a live channel of the fake watches each of libs'
// feeds, and every channel has posted its sync message. It gives up after
// timeout, or after firstWithin if no channel at all was made by then.
func waitCovered(ctx context.Context, fake *googlefake.Server, libs []pushLib, timeout time.Duration) error {
	const firstWithin = 30 * time.Second
	start := time.Now()
	for {
		covered := coveredFeeds(fake)
		var missing []string
		for _, l := range libs {
			if !covered[feedKey(l)] {
				missing = append(missing, feedKey(l))
			}
		}
		if len(missing) == 0 {
			fake.FlushNotifications()
			return nil
		}
		waited := time.Since(start)
		if waited > timeout || len(covered) == 0 && waited > firstWithin || ctx.Err() != nil {
			return fmt.Errorf("after %s, no live channel watches %d of %d feeds, such as %s", waited.Round(time.Second),
				len(missing), feeds(libs), missing[0])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// logTail is the end of a daemon's log without the runtime's garbage
// collector traces (startServe turns them on), for error messages.
func logTail(d *daemonProc) string {
	data, _ := os.ReadFile(d.stderr.Name())
	var kept []string
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "gc ") && !strings.HasPrefix(line, "pacer:") {
			kept = append(kept, line)
		}
	}
	return tail(strings.Join(kept, "\n"), 2000)
}

// metricSeries matches a series line of Prometheus' text format.
var (
	metricSeries = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)`)
	metricLabel  = regexp.MustCompile(`(\w+)="((?:[^"\\]|\\.)*)"`)
)

// metricSample is a labelled series' value.
type metricSample struct {
	name   string
	labels map[string]string
	value  float64
}

// readMetrics reads the daemon's /metrics at the admin listener adminAddr.
func readMetrics(ctx context.Context, adminAddr string) ([]metricSample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+adminAddr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	var out []metricSample
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		m := metricSeries.FindStringSubmatch(lines.Text())
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			continue
		}
		s := metricSample{name: m[1], labels: map[string]string{}, value: v}
		for _, l := range metricLabel.FindAllStringSubmatch(m[2], -1) {
			s.labels[l[1]] = l[2]
		}
		out = append(out, s)
	}
	return out, lines.Err()
}

// sumMetric adds up the series of a name whose labels include want.
func sumMetric(samples []metricSample, name string, want map[string]string) float64 {
	total := 0.0
	for _, s := range samples {
		if s.name != name {
			continue
		}
		ok := true
		for k, v := range want {
			ok = ok && s.labels[k] == v
		}
		if ok {
			total += s.value
		}
	}
	return total
}

// The scheduler's series, which count syncs.
const (
	metricSyncs        = "foldermirror_syncs_total" // succeeded
	metricSyncFailures = "foldermirror_sync_failures_total"
	metricPushNotes    = "foldermirror_push_notifications_total"
)

// syncsStarted counts the syncs of libraries that ended (succeeded or
// failed), by library; directories are left out.
func syncsStarted(samples []metricSample, kind string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range samples {
		if (s.name == metricSyncs || s.name == metricSyncFailures) && !strings.HasPrefix(s.labels["library"], "directory:") &&
			(kind == "" || s.labels["kind"] == kind) {
			out[s.labels["library"]] += s.value
		}
	}
	return out
}

// total adds up a map's values.
func total(m map[string]float64) float64 {
	t := 0.0
	for _, v := range m {
		t += v
	}
	return t
}

// runningLibraries returns, by library, whether the daemon's /status
// shows a sync of it running.
func runningLibraries(ctx context.Context, adminAddr string) (map[string]bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+adminAddr+"/status", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var st struct {
		Libraries []struct {
			Name    string `json:"name"`
			Running bool   `json:"running"`
		} `json:"libraries"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return nil, fmt.Errorf("GET /status: %w", err)
	}
	out := map[string]bool{}
	for _, l := range st.Libraries {
		out[l.Name] = l.Running
	}
	return out, nil
}

// pushStatus sums up the "push" part of the daemon's /status: the feeds,
// those polling, and the notifications accepted and refused.
func pushStatus(ctx context.Context, adminAddr string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+adminAddr+"/status", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var st struct {
		Push *[]struct {
			Polling  bool  `json:"polling"`
			Accepted int64 `json:"accepted"`
			Refused  int64 `json:"refused"`
		} `json:"push"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return "", err
	}
	if st.Push == nil {
		return "", errors.New("no push member")
	}
	polling, accepted, refused := 0, int64(0), int64(0)
	for _, f := range *st.Push {
		if f.Polling {
			polling++
		}
		accepted += f.Accepted
		refused += f.Refused
	}
	return fmt.Sprintf("%d feeds, %d polling; notifications accepted %d, refused %d (by feed, added up)", len(*st.Push), polling, accepted, refused), nil
}

// folderState is what matters of a folder to the figures that compare the
// API with Drive: its name and parent.
type folderState struct{ name, parent string }

// servedFolder reads a folder from the API (operation 5).
func servedFolder(ctx context.Context, base, id, token string) (folderState, error) {
	body, err := fetch(ctx, base+"/folder/v1/files/"+id, token)
	if err != nil {
		return folderState{}, err
	}
	var f struct {
		Name   string `json:"name"`
		Parent string `json:"parentFolderServiceId"`
	}
	if err := json.Unmarshal(body, &f); err != nil {
		return folderState{}, fmt.Errorf("folder %s: %w", id, err)
	}
	return folderState{f.Name, f.Parent}, nil
}

// driveReader reads folders from the fake's Drive API as a storage
// account.
type driveReader struct {
	endpoint string
	tokens   oauth2.TokenSource
}

// newDriveReader reads as account, through the world's service account.
func newDriveReader(ctx context.Context, fake *googlefake.Server, account string) (*driveReader, error) {
	creds, err := google.CredentialsFromJSONWithTypeAndParams(ctx, fake.ServiceAccountKey(serviceAccount), google.ServiceAccount,
		google.CredentialsParams{Scopes: []string{drive.DriveReadonlyScope}, Subject: account})
	if err != nil {
		return nil, err
	}
	return &driveReader{endpoint: fake.DriveEndpoint(), tokens: creds.TokenSource}, nil
}

// folder is files.get of a folder: its name and first parent.
func (r *driveReader) folder(ctx context.Context, id string) (folderState, error) {
	tok, err := r.tokens.Token()
	if err != nil {
		return folderState{}, err
	}
	q := url.Values{"fields": {"name,parents"}, "supportsAllDrives": {"true"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.endpoint+"files/"+url.PathEscape(id)+"?"+q.Encode(), nil)
	if err != nil {
		return folderState{}, err
	}
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return folderState{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return folderState{}, fmt.Errorf("files.get %s of the fake: %s %w: %s", id, resp.Status, err, tail(string(body), 300))
	}
	var f struct {
		Name    string
		Parents []string
	}
	if err := json.Unmarshal(body, &f); err != nil {
		return folderState{}, err
	}
	st := folderState{name: f.Name}
	if len(f.Parents) > 0 {
		st.parent = f.Parents[0]
	}
	return st, nil
}

// each runs fn for every ID, 8 at a time, and returns the first error.
func each(ids []string, fn func(id string) error) error {
	errs := make(chan error, len(ids))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs <- fn(id)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
