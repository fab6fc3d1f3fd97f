package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"path/filepath"
	"time"

	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/internal/googlefake"
)

// discoveryScale sizes the figures of the shared drives found by
// themselves (DESIGN §10).
type discoveryScale struct {
	// drives is how many shared drives of discFolders folders the storage
	// account is a member of.
	drives int
	// changes is how many changes are timed while safety-net polls run.
	changes int
}

var (
	fullDiscovery  = discoveryScale{drives: 10_000, changes: 20}
	quickDiscovery = discoveryScale{drives: 200, changes: 10}
)

// minDiscoveryDrives is the fewest drives -drives takes: more than a round
// of polls the scheduler makes at once (schedule's spreadAbove, 64), so
// that the safety-net polls are spread.
const minDiscoveryDrives = 100

// The world and the configuration of the discovery figures.
const (
	discFolders = 100 // each drive's folders, its root excepted
	discDepth   = 2   // levels below a drive's root: 10 folders of 9
	// discRequestsPerSecond is storage.requestsPerSecond: the safety-net
	// polls may take half of it, the push channels' calls a quarter.
	discRequestsPerSecond = 500
	// drivesPage is the pageSize of discovery's drives.list.
	drivesPage = 100
	// discReadyEvery is how often a starting daemon is asked whether it is
	// ready: /readyz reads the state of every library not yet prepared.
	discReadyEvery = 50 * time.Millisecond
	// discIdle is how long a daemon is left idle, once ready, before its
	// memory is read.
	discIdle = 10 * time.Second
)

// Limits of the discovery figures (DESIGN §10).
const (
	discWallShare      = 1.2  // discovery and first full sync: × the calls' floor, + the fake's CPU
	discRSSShare       = 1.25 // idle RSS: × that of the same folders in one library ...
	discRSSPerLibrary  = 2048 // ... + this many bytes a library
	discAddedLimit     = 10 * time.Second
	discReplicaLimit   = 12 * time.Second
	discChangeP95Limit = 2 * time.Second
)

// discoveryFigures measures DESIGN §10's targets with sc.discovery.drives
// shared drives of discFolders folders each, the storage account a member
// of every one, each Drive call taking driveLatency: the same folders in
// one library first (its idle RSS, which the drives' is held to); then, in
// a world of the drives, discovery and the first full sync of all of them,
// ready time and idle RSS on the index that made, push on at rest and a
// change in a random drive while safety-net polls run, a drive the
// account is added to; and with a PostgreSQL server (pgURL not empty), the
// time until three replicas serve a drive the account is added to.
func (e *env) discoveryFigures(ctx context.Context, pgURL string, t *table) error {
	one, err := e.oneLibraryMemory(ctx, e.sc.discovery.drives, t)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		t.fail("shared drives found by themselves: the same folders in one library", 0, err)
	}
	dw, closeWorld, err := e.newDrivesWorld(ctx)
	if err != nil {
		return err
	}
	defer closeWorld()
	cfg, err := dw.firstSyncFigures(ctx, t)
	if err != nil {
		return fmt.Errorf("discovery and first full sync: %w", err)
	}
	for _, phase := range []struct {
		name string
		run  func() error
	}{
		{"serve", func() error { return dw.serveFigures(ctx, cfg, one, t) }},
		{"push", func() error { return dw.pushFigures(ctx, cfg, t) }},
		{"replicas", func() error {
			if pgURL == "" {
				log.Printf("no PostgreSQL server (-postgres URL or $%s): the discovery figures on replicas are left out", envPostgres)
				return nil
			}
			return dw.replicaFigures(ctx, pgURL, t)
		}},
	} {
		if err := phase.run(); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			t.fail("shared drives found by themselves: "+phase.name, 0, err)
		}
	}
	return nil
}

// drivesWorld is a push world (a fake of its own posting its
// notifications over loopback) of shared drives whose member the storage
// account is.
type drivesWorld struct {
	*pushWorld
	drives []discDrive
	// added are drives of the same shape the account is not a member of:
	// the figures add it to them.
	added []discDrive
}

// discDrive is a shared drive of the world, and a folder of its deepest
// level.
type discDrive struct{ id, leaf string }

// lib is the drive as the discovered library of a push world.
func (d discDrive) lib() pushLib {
	return pushLib{library: library{ID: d.id, Name: d.id, SharedDriveID: d.id, StorageAccount: storageAccount},
		leaves: []string{d.leaf}}
}

// userFeed is the feed of the storage account's user change log, which
// tells discovery of drives added and removed.
var userFeed = pushLib{library: library{ID: "user log", StorageAccount: storageAccount}}

// newDrivesWorld builds the drives world: sc.discovery.drives drives of
// the storage account, and two the account is not a member of yet.
func (e *env) newDrivesWorld(ctx context.Context) (*drivesWorld, func(), error) {
	pw, closeWorld, err := e.newPushWorld("discovery")
	if err != nil {
		return nil, nil, err
	}
	dw := &drivesWorld{pushWorld: pw}
	n := e.sc.discovery.drives
	log.Printf("building %s shared drives of %d folders", thousands(float64(n)), discFolders)
	start := time.Now()
	for i := range n + 2 {
		name, organizer := fmt.Sprintf("Drive %05d", i+1), storageAccount
		if i >= n {
			name, organizer = fmt.Sprintf("Added %d", i-n+1), adminAccount
		}
		d, err := dw.buildDrive(ctx, name, organizer)
		if err != nil {
			closeWorld()
			return nil, nil, err
		}
		if i < n {
			dw.drives = append(dw.drives, d)
		} else {
			dw.added = append(dw.added, d)
		}
	}
	dw.world.spreadTimes()
	log.Printf("  built in %s", since(start))
	return dw, closeWorld, nil
}

// buildDrive makes a shared drive organised by organizer, the staff group
// a member too, of discFolders folders discDepth levels deep.
func (dw *drivesWorld) buildDrive(ctx context.Context, name, organizer string) (discDrive, error) {
	fake := dw.fake
	id := fake.CreateSharedDrive(name, organizer)
	fake.Share(id, googlefake.Permission{Type: "group", Role: "reader", EmailAddress: staffGroup, DisplayName: "Staff"})
	leaves, err := growLevels(ctx, id, discFolders, discDepth, func(parent string, level, i int) string {
		return fake.CreateFolder(organizer, parent, folderName(level, i))
	})
	if err != nil {
		return discDrive{}, err
	}
	return discDrive{id: id, leaf: leaves[len(leaves)-1]}, nil
}

// driveIDs are the IDs of the drives the account is a member of.
func (dw *drivesWorld) driveIDs() []string {
	ids := make([]string, len(dw.drives))
	for i, d := range dw.drives {
		ids[i] = d.id
	}
	return ids
}

// writeDiscoveryConfig writes, under name, a configuration of no library
// whose domain discovers the storage account's shared drives, at
// discRequestsPerSecond; the daemons' environment sets the rest.
func (w *world) writeDiscoveryConfig(dir, name string) (string, error) {
	return w.writeConfigWith(dir, name, nil, func(c *config.Config) {
		c.Storage.RequestsPerSecond = discRequestsPerSecond
		c.Domains[0].SharedDrives = &config.SharedDrives{StorageAccount: storageAccount, FolderDefinitionID: "standard"}
	})
}

// firstSyncFigures starts a daemon (push off) with the discovery
// configuration on an empty index, and measures the time from its start
// until every drive has had its first full sync, against the floor the
// Drive calls make: the calls at storage.requestsPerSecond, or each taking
// driveLatency, storage.concurrency at once. It returns the configuration,
// whose index now holds every drive.
func (dw *drivesWorld) firstSyncFigures(ctx context.Context, t *table) (string, error) {
	cfg, err := dw.world.writeDiscoveryConfig(dw.dir, "discovered")
	if err != nil {
		return "", err
	}
	n := len(dw.drives)
	log.Printf("discovery and first full sync of %s shared drives (push off)", thousands(float64(n)))
	dw.fake.ResetCalls()
	dw.fake.SetResponseTime(driveLatency)
	cpu := selfCPU()
	start := time.Now()
	d, err := startDaemon(filepath.Join(dw.dir, "serve-first-sync.log"), childEnv(), dw.bin, "serve", "--config", cfg, "--log-level", "warn")
	if err != nil {
		return "", err
	}
	defer d.stop(15 * time.Second)
	s, err := waitAllSynced(ctx, []*daemonProc{d}, dw.fake, []string{dw.world.adminListen}, dw.driveIDs(), syncTimeout(n))
	if err != nil {
		return "", err
	}
	wall, fakeCPU := s.end.Sub(start), s.cpu-cpu
	calls, methods := driveCalls(dw.fake)
	byRate := float64(calls) / discRequestsPerSecond
	byLatency := float64(calls) * driveLatency.Seconds() / concurrency
	fig := fmt.Sprintf("%s drives of %d folders: discovery and first full sync of all", thousands(float64(n)), discFolders)
	t.add(row{section: sectionDiscovery, figure: fig + ": wall time", value: wall.Seconds(), unit: unitSeconds, cmp: atMost,
		limit: discWallShare*max(byRate, byLatency) + fakeCPU.Seconds(),
		how: fmt.Sprintf("1.2 × max(%s calls / %d a s, %s × 30 ms / %d) + the fake's %.1f s", thousands(float64(calls)),
			discRequestsPerSecond, thousands(float64(calls)), concurrency, fakeCPU.Seconds())})
	t.add(row{section: sectionDiscovery, figure: fig + ": Drive calls", value: float64(calls), unit: unitCalls, cmp: info})
	t.note("%s: from the daemon's start (an empty index, push off) to the end of the last drive's first full sync (the latest "+
		"foldermirror_sync_last_success_timestamp_seconds{kind=\"full\"} of its /metrics) %s; Drive calls %v (%.1f a drive); "+
		"the floor: %.1f s at %d calls a second, %.1f s at 30 ms a call and %d at once; the fake used %.1f s of CPU (%.1f ms a call).",
		fig, wall.Round(time.Millisecond), methods, float64(calls)/float64(n), byRate, discRequestsPerSecond, byLatency, concurrency,
		fakeCPU.Seconds(), ms(fakeCPU)/float64(max(calls, 1)))
	return cfg, nil
}

// syncTimeout bounds the wait for the first full sync of n drives.
func syncTimeout(n int) time.Duration { return 2*time.Minute + time.Duration(n)*100*time.Millisecond }

// startReady starts `foldermirror serve` of configPath, its log in
// logFile, its admin listener at admin, with env ("NAME=VALUE") added,
// and waits until it is ready: its /status counts want discovered
// libraries or more, and then /readyz answers 200 (before the discovered
// libraries are read from the index at start, /readyz waits for none). It
// returns the time from start to ready.
func (e *env) startReady(ctx context.Context, logFile, configPath, admin string, want int, env ...string) (*daemonProc, time.Duration, error) {
	log.Printf("starting foldermirror serve (%s)", filepath.Base(logFile))
	start := time.Now()
	d, err := startDaemon(logFile, childEnv(env...), e.bin, "serve", "--config", configPath, "--log-level", "warn")
	if err != nil {
		return nil, 0, err
	}
	ready := func() bool {
		st, err := discoveryStatus(ctx, admin)
		return err == nil && st.Included >= want && get("http://"+admin+"/readyz") == http.StatusOK
	}
	if err := waitFor(ctx, d, 5*time.Minute, discReadyEvery, ready); err != nil {
		d.stop(5 * time.Second)
		return nil, 0, fmt.Errorf("foldermirror serve (%s): %w: %s", filepath.Base(logFile), err, d.logTail())
	}
	return d, time.Since(start), nil
}

// domainDiscovery is what the harness reads of /status's "discovery": the
// first domain's.
type domainDiscovery struct {
	Included      int       `json:"included"`
	LastDiscovery time.Time `json:"lastDiscovery"`
}

// discoveryStatus reads the first discovering domain's status from the
// daemon's /status (a zero one if none discovers).
func discoveryStatus(ctx context.Context, admin string) (domainDiscovery, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+admin+"/status", nil)
	if err != nil {
		return domainDiscovery{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return domainDiscovery{}, err
	}
	defer resp.Body.Close()
	var st struct {
		Discovery []domainDiscovery `json:"discovery"`
	}
	if resp.StatusCode != http.StatusOK {
		return domainDiscovery{}, fmt.Errorf("GET /status: %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return domainDiscovery{}, fmt.Errorf("GET /status: %w", err)
	}
	if len(st.Discovery) == 0 {
		return domainDiscovery{}, nil
	}
	return st.Discovery[0], nil
}

// synced is when the daemons had run a full sync of every library asked
// for: the end of the last (the daemons' clock), and the harness's CPU
// time when the fake last answered files.list.
type synced struct {
	end time.Time
	cpu time.Duration
}

// quietFor is how long files.list must go unasked before the daemons'
// /metrics are read to see if every first full sync has ended.
const quietFor = 3 * time.Second

// waitAllSynced waits until the daemons procs, whose admin listeners are
// admins, have between them run a full sync of each of ids, and returns
// when the last ended. Their /metrics (large with thousands of libraries)
// are read once the fake has answered no files.list for quietFor.
func waitAllSynced(ctx context.Context, procs []*daemonProc, fake *googlefake.Server, admins, ids []string, timeout time.Duration) (synced, error) {
	deadline := time.Now().Add(timeout)
	var s synced
	lists, quietSince := -1, time.Now()
	for {
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-time.After(time.Second):
		}
		for _, d := range procs {
			if d.exited() {
				return s, fmt.Errorf("a daemon exited (%w): %s", d.err, d.logTail())
			}
		}
		if n := fake.CallCount("drive.files.list"); n != lists {
			lists, quietSince, s.cpu = n, time.Now(), selfCPU()
		}
		if time.Now().After(deadline) {
			return s, fmt.Errorf("not every library had its first full sync after %s: %s", timeout, procs[0].logTail())
		}
		if lists <= 0 || time.Since(quietSince) < quietFor {
			continue
		}
		end, done, failed, err := fullSyncs(ctx, admins, ids)
		switch {
		case err != nil:
			return s, err
		case done == len(ids):
			s.end = end
			return s, nil
		case failed > 0:
			return s, fmt.Errorf("%d of %d libraries had their first full sync, %d failed: %s", done, len(ids), failed, procs[0].logTail())
		}
		quietSince = time.Now() // read /metrics again after another quiet spell
	}
}

// The scheduler's series of the time each kind of sync last succeeded.
const metricLastSuccess = "foldermirror_sync_last_success_timestamp_seconds"

// fullSyncs reads the daemons' /metrics and returns how many of ids had a
// full sync that succeeded, when the last of those ended, and how many
// full syncs of ids failed.
func fullSyncs(ctx context.Context, admins, ids []string) (last time.Time, done, failed int, err error) {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	seen := map[string]bool{}
	for _, a := range admins {
		samples, err := readMetrics(ctx, a)
		if err != nil {
			return last, 0, 0, err
		}
		for _, s := range samples {
			lib := s.labels["library"]
			if !want[lib] || s.labels["kind"] != "full" {
				continue
			}
			switch s.name {
			case metricLastSuccess:
				seen[lib] = true
				if at := time.Unix(0, int64(s.value*1e9)); at.After(last) {
					last = at
				}
			case metricSyncFailures:
				failed += int(s.value)
			}
		}
	}
	return last, len(seen), failed, nil
}

// serveFigures starts a daemon (push off) on the index the first sync
// made, and measures the time until it is ready, and its RSS once idle
// against one's, the same folders in one library's; it checks that it
// serves drives.
func (dw *drivesWorld) serveFigures(ctx context.Context, configPath string, one *memory, t *table) error {
	n := len(dw.drives)
	d, readyIn, err := dw.startReady(ctx, filepath.Join(dw.dir, "serve-discovered.log"), configPath, dw.world.adminListen, n)
	if err != nil {
		return err
	}
	defer d.stop(15 * time.Second)
	atReady, err := readMemory(d.pid())
	if err != nil {
		return err
	}
	fig := fmt.Sprintf("%s drives of %d folders", thousands(float64(n)), discFolders)
	t.add(row{section: sectionDiscovery, figure: fig + ": ready after start (/readyz), on an index holding them all", value: readyIn.Seconds(),
		unit: unitSeconds, cmp: atMost, limit: readyLimit.Seconds()})
	idle, err := idleMemory(ctx, d)
	if err != nil {
		return err
	}
	log.Printf("  ready in %s; RSS %.1f MB once ready, %.1f MB idle", readyIn.Round(time.Millisecond), float64(atReady.rss)/1e6, float64(idle.rss)/1e6)
	if err := dw.servesDrives(ctx, "http://"+dw.world.listen); err != nil {
		return err
	}
	t.note("%s, serve on the index the first sync made: ready (its /status counting every drive, then /readyz 200, polled every %s) %s after start; "+
		"RSS once ready %.1f MB, %s later %.1f MB (anonymous %.1f MB, file-backed %.1f MB).", fig, discReadyEvery, readyIn.Round(time.Millisecond),
		float64(atReady.rss)/1e6, discIdle, float64(idle.rss)/1e6, float64(idle.anon)/1e6, float64(idle.file)/1e6)
	if one == nil {
		return errors.New("no idle RSS of the same folders in one library to hold the drives' to")
	}
	t.add(row{section: sectionDiscovery, figure: fig + ": serve, idle RSS", value: float64(idle.rss), unit: unitMB, cmp: atMost,
		limit: discRSSShare*float64(one.rss) + discRSSPerLibrary*float64(n),
		how:   fmt.Sprintf("1.25 × one library's %.1f MB + 2 KB × %s", float64(one.rss)/1e6, thousands(float64(n)))})
	return nil
}

// idleMemory leaves a daemon idle for discIdle and reads its memory.
func idleMemory(ctx context.Context, d *daemonProc) (memory, error) {
	select {
	case <-ctx.Done():
		return memory{}, ctx.Err()
	case <-time.After(discIdle):
	}
	return readMemory(d.pid())
}

// servesDrives checks that the API at base answers operation 2 (the
// library root's children) of a few drives, the last made among them.
func (dw *drivesWorld) servesDrives(ctx context.Context, base string) error {
	token := dw.fake.GoogleIDToken(clientID, apiUsers[0], googlefake.WithTTL(time.Hour))
	for _, d := range []discDrive{dw.drives[0], dw.drives[len(dw.drives)/2], dw.drives[len(dw.drives)-1]} {
		body, err := fetch(ctx, rootChildrenURL(base, d.id), token)
		if err != nil {
			return err
		}
		if want := fmt.Sprintf("%q", folderName(1, 0)); !bytes.Contains(body, []byte(want)) {
			return fmt.Errorf("drive %s: its root's children lack %s: %s", d.id, want, tail(string(body), 300))
		}
	}
	return nil
}

// rootChildrenURL is operation 2 of a library: its root's children.
func rootChildrenURL(base, libraryID string) string {
	return base + "/folder/v1/libraries/" + libraryID + "/folders/children"
}
