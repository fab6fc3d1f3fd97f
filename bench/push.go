package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/foldermirror/foldermirror/internal/googlefake"
)

// pushScale sizes the push figures.
type pushScale struct {
	// changes is how many changes are timed from Drive's notification to
	// the API serving them on one daemon; pgChanges on three replicas.
	changes, pgChanges int
	// burst changes are made to burstFolders folders of one library within
	// a second.
	burst, burstFolders int
	// restDrives shared-drive libraries are watched at rest for
	// restWindow, their channels asked to live restTTL, the incremental
	// schedule at restSchedule (the safety net).
	restDrives   int
	restTTL      time.Duration
	restWindow   time.Duration
	restSchedule string
	// forged is how many forged notifications are posted.
	forged int
}

var (
	fullPush = pushScale{changes: 50, pgChanges: 50, burst: 200, burstFolders: 100,
		restDrives: 200, restTTL: 90 * time.Second, restWindow: 90 * time.Second, restSchedule: "@every 30s", forged: 50}
	quickPush = pushScale{changes: 16, pgChanges: 8, burst: 200, burstFolders: 100,
		restDrives: 40, restTTL: 20 * time.Second, restWindow: 20 * time.Second, restSchedule: "@every 10s", forged: 50}
)

// Limits of the push figures (DESIGN §9).
const (
	pushP95Limit     = 2 * time.Second // from Drive's notification to the API serving the change, p95
	pushMaxLimit     = 3 * time.Second // ... at most
	pushReplicaLimit = 3 * time.Second // ... on every replica
	burstSyncLimit   = 20              // incremental syncs of a library after 200 changes within a second
	// latencyTTL is push.channelTtl where the figures time changes: no
	// channel is renewed meanwhile.
	latencyTTL = time.Hour
	// forgedSettle is how long after the forged notifications the syncs
	// are counted: a notification starts a sync within 1 s.
	forgedSettle = 2 * time.Second
)

// The storage accounts of the push worlds' libraries.
var pushAccounts = []string{"storage1@" + domain, "storage2@" + domain, "storage3@" + domain}

// pushFigures measures Drive push notifications, each world in a fake of
// its own that posts its notifications over loopback to the daemon, every
// Drive call taking driveLatency: on one daemon (bbolt) with several My
// Drive and shared-drive libraries, the time from each notification to the
// API serving its change, a burst of changes to one library, and forged
// notifications; 200 shared-drive libraries at rest; and with a
// PostgreSQL server (pgURL not empty), the time to every one of three
// replicas, and 1,000 changes at the run's smallest size.
func (e *env) pushFigures(ctx context.Context, pgURL string, t *table) error {
	if err := e.pushDaemonFigures(ctx, t); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		t.fail("push notifications, one daemon", 0, err)
	}
	if err := e.pushRestFigures(ctx, t); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		t.fail("push notifications at rest", 0, err)
	}
	if pgURL == "" {
		log.Printf("no PostgreSQL server (-postgres URL or $%s): the push figures on replicas are left out", envPostgres)
		return nil
	}
	return e.pushReplicaFigures(ctx, pgURL, t)
}

// pushWorld is a fake of its own holding a push world: the people, and
// libraries whose notifications the fake posts through deliveries.
type pushWorld struct {
	*hosted
	dir        string
	deliveries *deliveries
	libs       []pushLib
}

// newPushWorld starts a fake that accepts http:// webhooks on loopback and
// records what it posts, with the people of a world; close closes it and
// removes the world's files.
func (e *env) newPushWorld(name string) (pw *pushWorld, closeWorld func(), err error) {
	fake := googlefake.New()
	fake.Start()
	dir := filepath.Join(e.dir, name)
	closeWorld = func() {
		fake.Close()
		_ = os.RemoveAll(dir)
	}
	defer func() {
		if err != nil {
			closeWorld()
		}
	}()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, nil, err
	}
	fake.AllowHTTPWebhooks(true)
	rec := newDeliveries(fake)
	w, err := newWorld(fake, dir)
	if err != nil {
		return nil, nil, err
	}
	return &pushWorld{hosted: &hosted{env: e, fake: fake, world: w}, dir: dir, deliveries: rec}, closeWorld, nil
}

// buildLibraries adds the libraries whose changes the figures time, in
// the order they take turns: My Drive libraries of three storage accounts
// (two of the first, which share its feed) and four shared drives, so
// that one change's feed differs from the next one's; then it spreads the
// world's times over the years.
func (pw *pushWorld) buildLibraries(ctx context.Context) error {
	for _, a := range pushAccounts {
		pw.fake.AddUser(a)
	}
	for _, s := range []struct {
		id      string
		account string
		drive   bool
		folders int
	}{
		{"push-mydrive-1a", pushAccounts[0], false, 2000},
		{"push-drive-1", pushAccounts[0], true, 1000},
		{"push-mydrive-2", pushAccounts[1], false, 2000},
		{"push-drive-2", pushAccounts[1], true, 1000},
		{"push-mydrive-1b", pushAccounts[0], false, 1000},
		{"push-drive-3", pushAccounts[2], true, 1000},
		{"push-mydrive-3", pushAccounts[2], false, 1000},
		{"push-drive-4", pushAccounts[0], true, 1000},
	} {
		build := pw.world.buildPushMyDrive
		if s.drive {
			build = pw.world.buildPushDrive
		}
		lib, err := build(ctx, s.id, s.account, s.folders)
		if err != nil {
			return err
		}
		pw.libs = append(pw.libs, lib)
	}
	pw.world.spreadTimes()
	return nil
}

// feeds counts the distinct feeds of libs.
func feeds(libs []pushLib) int {
	keys := map[string]bool{}
	for _, l := range libs {
		keys[feedKey(l)] = true
	}
	return len(keys)
}

// pushDaemonFigures runs one daemon (bbolt) with push on, and measures the
// time from each notification to the API serving its change, a burst of
// changes to one library, and forged notifications.
func (e *env) pushDaemonFigures(ctx context.Context, t *table) error {
	pw, closeWorld, err := e.newPushWorld("push-daemon")
	if err != nil {
		return err
	}
	defer closeWorld()
	if err := pw.buildLibraries(ctx); err != nil {
		return err
	}
	if pw.config, err = pw.world.writeConfig(pw.dir, "push", libraries(pw.libs)); err != nil {
		return err
	}
	pw.fake.SetResponseTime(driveLatency)
	address := "http://" + pw.world.listen + pushPath
	log.Printf("push: one daemon, %d libraries (%d feeds), push.address %s", len(pw.libs), feeds(pw.libs), address)
	srv, _, err := pw.startServe(ctx, "serve-push", pw.world.adminListen, nil, pushEnv(address, latencyTTL)...)
	if err != nil {
		return err
	}
	defer srv.stop(15 * time.Second)
	if err := waitCovered(ctx, pw.fake, pw.libs, time.Minute); err != nil {
		return fmt.Errorf("%w: %s", err, logTail(srv))
	}
	token := pw.fake.GoogleIDToken(clientID, apiUsers[0], googlefake.WithTTL(2*time.Hour))
	base := "http://" + pw.world.listen

	log.Printf("  %d changes, one at a time, each library in turn", e.sc.push.changes)
	timings, err := pw.timeChanges(ctx, pw.libs, []string{base}, token, e.sc.push.changes)
	if err != nil {
		return err
	}
	latencyRows(t, sectionPush, timings, len(pw.libs), feeds(pw.libs), nil)

	if err := pw.burstFigures(ctx, pw.libs[0], base, token, t); err != nil {
		return fmt.Errorf("burst: %w", err)
	}
	if err := pw.forgedFigures(ctx, base, t); err != nil {
		return fmt.Errorf("forged notifications: %w", err)
	}
	if st, err := pushStatus(ctx, pw.world.adminListen); err != nil {
		t.note("push notifications, one daemon: its /status had no \"push\" (%s).", err)
	} else {
		t.note("push notifications, one daemon: its /status said of push at the end: %s.", st)
	}
	return nil
}

// changeTiming is how one change went, from the fake's notification.
type changeTiming struct {
	lib string
	// notified is from the change to the fake's post of its notification.
	notified time.Duration
	// served is, for each API base, from the notification to the base
	// serving the change (negative if it served it before).
	served []time.Duration
	// target is where the notification was posted.
	target string
}

// slowest is the time until every base served the change, 0 if all served
// it before the notification.
func (c changeTiming) slowest() time.Duration { return max(slices.Max(c.served), 0) }

// timeChanges renames n folders, one at a time, of libs in turn, and
// times each from the fake's notification of it (the first "change"
// message to a channel of the library's feed posted after the change)
// until every API base serves the new name (operation 5, polled from the
// change on). Between changes, the fake posts what it has to.
func (pw *pushWorld) timeChanges(ctx context.Context, libs []pushLib, bases []string, token string, n int) ([]changeTiming, error) {
	next := map[string]int{}
	var out []changeTiming
	for i := range n {
		lib := libs[i%len(libs)]
		folder := lib.leaves[next[lib.ID]*97%len(lib.leaves)]
		next[lib.ID]++
		name := fmt.Sprintf("Pushed %d-%s", i, randomHex(3))
		channels := feedChannels(pw.fake, lib)
		if len(channels) == 0 {
			return nil, fmt.Errorf("no live channel watches %s's feed %s", lib.ID, feedKey(lib))
		}
		after, err := renameAndPoll(ctx, pw.fake, folder, name, bases, token)
		if err != nil {
			return nil, fmt.Errorf("change %d, in %s: %w", i+1, lib.ID, err)
		}
		pw.fake.FlushNotifications()
		d, ok := pw.deliveries.first(after.at, channels)
		if !ok {
			return nil, fmt.Errorf("change %d, in %s: the fake posted no notification of it to channel %v", i+1, lib.ID, channels)
		}
		c := changeTiming{lib: lib.ID, notified: d.at.Sub(after.at), target: d.target}
		for _, s := range after.served {
			c.served = append(c.served, s-c.notified)
		}
		out = append(out, c)
	}
	return out, nil
}

// renamed is when a rename was made and, for each API base, how long
// after it the base served it.
type renamed struct {
	at     time.Time
	served []time.Duration
}

// renameAndPoll renames folder in the fake and polls each base until it
// serves the new name.
func renameAndPoll(ctx context.Context, fake *googlefake.Server, folder, name string, bases []string, token string) (renamed, error) {
	pollCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r := renamed{at: time.Now(), served: make([]time.Duration, len(bases))}
	fake.Rename(folder, name)
	errs := make([]error, len(bases))
	var wg sync.WaitGroup
	for i, b := range bases {
		wg.Go(func() {
			r.served[i], _, errs[i] = pollUntilServed(pollCtx, b+"/folder/v1/files/"+folder, token, name, r.at)
		})
	}
	wg.Wait()
	return r, errors.Join(errs...)
}

// latencyRows adds the rows of timed changes: on one daemon the p95 and
// the slowest, on replicas (names set) the slowest on all of them.
func latencyRows(t *table, section string, timings []changeTiming, libs, nFeeds int, names []string) {
	all := make([]time.Duration, len(timings))
	var detect []time.Duration
	early := 0
	for i, c := range timings {
		all[i] = c.slowest()
		detect = append(detect, c.notified)
		if slices.Max(c.served) < 0 {
			early++
		}
	}
	slices.Sort(all)
	p95 := all[max((len(all)*95+99)/100-1, 0)]
	spread := fmt.Sprintf("%d changes across %d libraries (%d feeds)", len(timings), libs, nFeeds)
	if names == nil {
		t.add(row{section: section, figure: "from Drive's notification to the API serving the change, p95 of " + spread,
			value: ms(p95), unit: unitMillis, cmp: atMost, limit: ms(pushP95Limit)})
		t.add(row{section: section, figure: "from Drive's notification to the API serving the change, slowest of " + spread,
			value: ms(all[len(all)-1]), unit: unitMillis, cmp: atMost, limit: ms(pushMaxLimit)})
	} else {
		t.add(row{section: section, figure: fmt.Sprintf("from Drive's notification to all %d replicas serving the change, slowest of %s", len(names), spread),
			value: ms(all[len(all)-1]), unit: unitMillis, cmp: atMost, limit: ms(pushReplicaLimit)})
		t.add(row{section: section, figure: fmt.Sprintf("from Drive's notification to all %d replicas serving the change, p95", len(names)),
			value: ms(p95), unit: unitMillis, cmp: info})
	}
	slices.Sort(detect)
	note := fmt.Sprintf("%s, %s: renames, one at a time, each served (operation 5, polled every %s from the change on) before the next; "+
		"from the notification to the change served: median %s, p95 %s, slowest %s; the fake posted each notification %s after its change (median; slowest %s)",
		section, spread, servedPollEvery, all[len(all)/2].Round(time.Millisecond), p95.Round(time.Millisecond), all[len(all)-1].Round(time.Millisecond),
		detect[len(detect)/2].Round(100*time.Microsecond), detect[len(detect)-1].Round(100*time.Microsecond))
	if early > 0 {
		note += fmt.Sprintf("; %d changes were served before their notification (a sync already under way read them), counted as 0", early)
	}
	if names != nil {
		note += "; by replica, slowest: " + slowestByReplica(timings, names)
	}
	t.note("%s.", note)
}

// slowestByReplica says, for each replica, the slowest time it took to
// serve a change after its notification, and how many notifications it
// received.
func slowestByReplica(timings []changeTiming, names []string) string {
	var parts []string
	for i, n := range names {
		var worst time.Duration
		for _, c := range timings {
			worst = max(worst, c.served[i])
		}
		parts = append(parts, fmt.Sprintf("%s %s", n, worst.Round(time.Millisecond)))
	}
	return strings.Join(parts, ", ")
}

// burstFigures makes sc.push.burst changes to burstFolders folders of lib
// within a second (renames, then moves and renames again), waits until the
// API serves them all and the daemon is idle, and counts the incremental
// syncs of lib they caused (its /metrics), then compares the API's answer
// for the changed folders with Drive's (the fake's files.get).
func (pw *pushWorld) burstFigures(ctx context.Context, lib pushLib, base, token string, t *table) error {
	sc := pw.sc.push
	admin := pw.world.adminListen
	folders := lib.leaves[len(lib.leaves)-min(sc.burstFolders, len(lib.leaves)):]
	drive, err := newDriveReader(ctx, pw.fake, lib.account())
	if err != nil {
		return err
	}
	// What the changes make of the folders, from their state before.
	model, err := readFolders(ctx, drive, folders)
	if err != nil {
		return err
	}
	if err := waitIdle(ctx, pw.fake, admin, lib.ID); err != nil {
		return err
	}
	before, err := readMetrics(ctx, admin)
	if err != nil {
		return err
	}
	log.Printf("  %d changes to %d folders of %s within a second", sc.burst, len(folders), lib.ID)
	pw.fake.ResetCalls()
	start := time.Now()
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range sc.burst {
		time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(sc.burst))))
		f := folders[i%len(folders)]
		st := model[f]
		switch {
		case i < len(folders) || i%2 == 1:
			st.name = fmt.Sprintf("Burst %d", i)
			pw.fake.Rename(f, st.name)
		default:
			st.parent = lib.inner[rng.IntN(len(lib.inner))]
			pw.fake.Move(f, st.parent)
		}
		model[f] = st
	}
	lastChange := time.Now()
	made := lastChange.Sub(start)
	allServed, err := waitServedAsDrive(ctx, base, token, folders, model, time.Minute)
	if err != nil {
		return err
	}
	servedAfter := allServed.Sub(lastChange)
	if err := waitIdle(ctx, pw.fake, admin, lib.ID); err != nil {
		return err
	}
	calls, methods := driveCalls(pw.fake)
	after, err := readMetrics(ctx, admin)
	if err != nil {
		return err
	}
	want, err := readFolders(ctx, drive, folders)
	if err != nil {
		return err
	}
	for _, f := range folders {
		if want[f] != model[f] {
			return fmt.Errorf("folder %s: the fake has %+v, the changes made %+v", f, want[f], model[f])
		}
	}
	differ, err := countDiffering(ctx, base, token, folders, want)
	if err != nil {
		return err
	}
	b, a := syncsStarted(before, "incremental"), syncsStarted(after, "incremental")
	syncs := a[lib.ID] - b[lib.ID]
	var others []string
	for _, l := range pw.libs {
		if l.ID != lib.ID && feedKey(l) == feedKey(lib) {
			others = append(others, fmt.Sprintf("%s (the same feed) %.0f", l.ID, a[l.ID]-b[l.ID]))
		}
	}
	posted := 0
	channels := feedChannels(pw.fake, lib)
	for _, d := range pw.deliveries.since(start) {
		if channels[d.channel] && d.state == "change" {
			posted++
		}
	}
	fig := fmt.Sprintf("%d changes to one library within a second", sc.burst)
	t.add(row{section: sectionPush, figure: fig + ": incremental syncs of it", value: syncs, unit: unitCalls, cmp: atMost, limit: burstSyncLimit})
	t.add(row{section: sectionPush, figure: fig + ": changed folders the API then served unlike Drive", value: float64(differ),
		unit: unitCalls, cmp: exactly, limit: 0})
	t.add(row{section: sectionPush, figure: fig + ": from the last change to the API serving them all", value: ms(servedAfter),
		unit: unitMillis, cmp: info})
	t.note("push notifications, %s (%s, %d folders: renamed, then half moved and half renamed again; made in %s): the fake posted %d notifications to the feed's channel; "+
		"the daemon ran %.0f incremental syncs of the library (/metrics foldermirror_syncs_total and failures, kind incremental)%s; "+
		"Drive calls meanwhile %d %v; the API's name and parent of each folder (operation 5) compared with the fake's files.get once the daemon was idle.",
		fig, lib.ID, len(folders), made.Round(time.Millisecond), posted, syncs, strings.Join(append([]string{""}, others...), ", other libraries: "),
		calls, methods)
	return nil
}

// readFolders reads folders from Drive (the fake).
func readFolders(ctx context.Context, drive *driveReader, folders []string) (map[string]folderState, error) {
	out := map[string]folderState{}
	var mu sync.Mutex
	err := each(folders, func(id string) error {
		st, err := drive.folder(ctx, id)
		mu.Lock()
		defer mu.Unlock()
		out[id] = st
		return err
	})
	return out, err
}

// waitServedAsDrive polls the API until it serves each folder as want
// says, and returns when it did.
func waitServedAsDrive(ctx context.Context, base, token string, folders []string, want map[string]folderState, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		differ, err := countDiffering(ctx, base, token, folders, want)
		if err != nil {
			return time.Time{}, err
		}
		if differ == 0 {
			return time.Now(), nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("after %s, the API still serves %d of %d changed folders unlike Drive", timeout, differ, len(folders))
		}
		time.Sleep(servedPollEvery)
	}
}

// countDiffering counts the folders the API serves otherwise than want
// says.
func countDiffering(ctx context.Context, base, token string, folders []string, want map[string]folderState) (int, error) {
	var differ atomic.Int64
	err := each(folders, func(id string) error {
		got, err := servedFolder(ctx, base, id, token)
		if err != nil {
			return err
		}
		if got != want[id] {
			differ.Add(1)
		}
		return nil
	})
	return int(differ.Load()), err
}

// idleFor is how long a library must stay without a sync running, its
// count of syncs unchanged, to be taken for idle.
const idleFor = 2 * time.Second

// waitIdle waits until the fake has posted every notification due and the
// daemon has run every sync of lib they asked for: none running, and the
// count of its syncs unchanged for idleFor.
func waitIdle(ctx context.Context, fake *googlefake.Server, admin, lib string) error {
	fake.FlushNotifications()
	deadline := time.Now().Add(time.Minute)
	var last float64 = -1
	var since time.Time
	for time.Now().Before(deadline) {
		running, err := runningLibraries(ctx, admin)
		if err != nil {
			return err
		}
		m, err := readMetrics(ctx, admin)
		if err != nil {
			return err
		}
		n := syncsStarted(m, "")[lib]
		switch {
		case running[lib] || n != last:
			last, since = n, time.Now()
		case time.Since(since) >= idleFor:
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s was still syncing a minute after the changes", lib)
}

// forgedFigures posts sc.push.forged forged notifications to the daemon's
// push path, half of unknown channel IDs, half of a live channel's ID with
// a wrong token, and counts the syncs started (/metrics) and the Drive
// calls made meanwhile.
func (pw *pushWorld) forgedFigures(ctx context.Context, base string, t *table) error {
	admin := pw.world.adminListen
	live := pw.fake.PushChannels()
	if len(live) == 0 {
		return errors.New("no live channel")
	}
	before, err := readMetrics(ctx, admin)
	if err != nil {
		return err
	}
	log.Printf("  %d forged notifications", pw.sc.push.forged)
	pw.fake.ResetCalls()
	statuses := map[int]int{}
	for i := range pw.sc.push.forged {
		id, token := randomHex(16), randomHex(32)
		if i%2 == 1 {
			id = live[i%len(live)].ID
		}
		status, err := postNotification(ctx, base+pushPath, id, token, []string{"change", "update", "add", "remove", "trash"}[i%5])
		if err != nil {
			return err
		}
		statuses[status]++
	}
	time.Sleep(forgedSettle)
	calls, _ := driveCalls(pw.fake)
	after, err := readMetrics(ctx, admin)
	if err != nil {
		return err
	}
	started := total(syncsStarted(after, "")) - total(syncsStarted(before, ""))
	accepted := 0
	for code, n := range statuses {
		if code < 400 || code >= 500 {
			accepted += n
		}
	}
	fig := fmt.Sprintf("%d forged notifications (unknown channel IDs; a live channel's ID with a wrong token)", pw.sc.push.forged)
	t.add(row{section: sectionPush, figure: fig + ": syncs started", value: started, unit: unitCalls, cmp: exactly, limit: 0})
	t.add(row{section: sectionPush, figure: fig + ": answered other than 4xx", value: float64(accepted), unit: unitCalls, cmp: exactly, limit: 0})
	t.add(row{section: sectionPush, figure: fig + ": Drive calls", value: float64(calls), unit: unitCalls, cmp: exactly, limit: 0})
	var results []string
	for _, r := range []string{"unknown_channel", "bad_token", "change"} {
		d := sumMetric(after, metricPushNotes, map[string]string{"result": r}) - sumMetric(before, metricPushNotes, map[string]string{"result": r})
		results = append(results, fmt.Sprintf("%s +%.0f", r, d))
	}
	t.note("push notifications, %s: answers %v; %s %s; syncs and Drive calls counted until %s after the last (syncs of every kind, /metrics).",
		fig, statuses, metricPushNotes, strings.Join(results, ", "), forgedSettle)
	return nil
}

// postNotification posts a notification as Drive would, and returns the
// status of the answer.
func postNotification(ctx context.Context, url, id, token, state string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, http.NoBody)
	if err != nil {
		return 0, err
	}
	h := req.Header
	h["X-Goog-Channel-ID"] = []string{id}
	h["X-Goog-Channel-Token"] = []string{token}
	h["X-Goog-Resource-State"] = []string{state}
	h["X-Goog-Resource-ID"] = []string{randomHex(13)}
	h["X-Goog-Message-Number"] = []string{"2"}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
