package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/foldermirror/foldermirror/httpapi/admin"
	"github.com/foldermirror/foldermirror/internal/googlefake"
)

// Limits of the serve figures.
const (
	readyLimit = 5 * time.Second
	// incrementalCPULimit bounds the daemon's CPU for an incremental sync
	// of the mixed changes, from the POST to the commit.
	incrementalCPULimit = 50 * time.Millisecond
	servedLimit         = time.Second // from an incremental sync's end to the API serving its changes
	incrementalSlack    = time.Second // an incremental sync's wall beyond its calls' latency
	servedPollEvery     = 5 * time.Millisecond
)

// serveFigures is what one size's serve figures measured that the rows
// across sizes need.
type serveFigures struct {
	size int
	// ready is the daemon's memory once ready.
	ready memory
	// gc is what the garbage collector did under the API load.
	gc gcWindow
}

// serveFigures starts `foldermirror serve` on the index the full sync left
// and measures it: ready time and memory, the API (operations 3, 6 and 4)
// with the garbage collector meanwhile, and incremental syncs the daemon
// runs through its admin listener.
func (h *hosted) serveFigures(ctx context.Context, t *table) (*serveFigures, error) {
	if h.profileDir != "" {
		if err := h.profileServeStart(ctx); err != nil {
			return nil, err
		}
	}
	srv, readyIn, err := h.startServe(ctx, "serve", h.world.adminListen, nil)
	if err != nil {
		return nil, err
	}
	defer srv.stop(15 * time.Second)
	sf := &serveFigures{size: h.size, gc: gcWindow{scanHeap: -1}}
	if sf.ready, err = readMemory(srv.pid()); err != nil {
		return nil, err
	}
	log.Printf("  ready in %s; RSS %.1f MB (anonymous %.1f MB, file-backed %.1f MB)", readyIn.Round(time.Millisecond),
		float64(sf.ready.rss)/1e6, float64(sf.ready.anon)/1e6, float64(sf.ready.file)/1e6)
	limit, how := serveReadyLimit(h.size)
	t.add(row{section: sectionServe, figure: "ready after start (/readyz)", size: h.size, value: readyIn.Seconds(),
		unit: unitSeconds, cmp: atMost, limit: limit, rule: "≤ 0.2 s at 100k, 1 s at 1M (linear between)", how: how})
	t.add(row{section: sectionServe, figure: "RSS once ready", size: h.size, value: float64(sf.ready.rss), unit: unitMB, cmp: info})
	t.note("%s folders, serve once ready: RSS %.1f MB, of which anonymous %.1f MB and file-backed %.1f MB (the index's memory map).",
		thousands(float64(h.size)), float64(sf.ready.rss)/1e6, float64(sf.ready.anon)/1e6, float64(sf.ready.file)/1e6)

	tokens := make([]string, len(apiUsers))
	for i, u := range apiUsers {
		tokens[i] = h.fake.GoogleIDToken(clientID, u, googlefake.WithTTL(2*time.Hour))
	}
	base := "http://" + h.world.listen
	lib := h.world.myDrive
	if err := h.streamFigures(ctx, srv, base+"/folder/v1/libraries/"+lib.ID+"/folders", tokens, t); err != nil {
		return sf, fmt.Errorf("operation 3: %w", err)
	}
	var windows []gcWindow
	for _, ep := range []endpoint{
		{id: "op 6", figure: fmt.Sprintf("op 6, children (%s visible)", thousands(float64(h.sc.wideChildren))),
			path:  "/folder/v1/files/" + h.world.wide + "/children?onlyDirectChildren=true",
			route: "/folder/v1/files/:folderId/children"},
		{id: "op 4", figure: "op 4, permissions of a folder with the longest list",
			path:  "/folder/v1/folders/" + h.world.deep + "/permissions",
			route: "/folder/v1/folders/:folderId/permissions",
			note:  fmt.Sprintf("the folder has %d permissions", h.world.deepGrants)},
	} {
		w, err := h.throughputFigures(ctx, srv, base, ep, tokens, t)
		if err != nil {
			return sf, fmt.Errorf("%s: %w", ep.figure, err)
		}
		windows = append(windows, w)
	}
	sf.gc = mergeWindows(windows)
	if sf.gc.scanHeap >= 0 {
		t.add(row{section: sectionServe, figure: "heap the GC scans, under API load", size: h.size, value: sf.gc.scanHeap,
			unit: unitMB, cmp: info})
	}
	t.note("%s folders, GC under the API loads: %s.", thousands(float64(h.size)), sf.gc)
	if err := h.incrementalFigures(ctx, srv, base, tokens[0], t); err != nil {
		return sf, fmt.Errorf("incremental sync: %w", err)
	}
	return sf, nil
}

// serveReadyLimit is the longest a serve of n folders may take to be
// ready: 0.2 s up to 100,000 folders, 1 s at 1,000,000, linear between and
// beyond; how says when it is interpolated.
func serveReadyLimit(n int) (limit float64, how string) {
	const small, large, atSmall, atLarge = 100_000, 1_000_000, 0.2, 1.0
	if n <= small {
		return atSmall, ""
	}
	limit = atSmall + (atLarge-atSmall)*float64(n-small)/float64(large-small)
	if n != large {
		how = "interpolated"
	}
	return limit, how
}

// profileServeStart starts serve with its profiles asked for (-profile)
// and stops it once ready, so that its CPU profile is the start's alone,
// apart from the loads measured later.
func (h *hosted) profileServeStart(ctx context.Context) error {
	name := "serve-" + sizeName(h.size)
	args := append([]string{"serve", "--config", h.config, "--log-level", "warn"}, h.profileArgs(name)...)
	d, err := startDaemon(filepath.Join(h.dir, name+"-profiled.log"), childEnv(), h.bin, args...)
	if err != nil {
		return err
	}
	defer d.stop(time.Minute)
	admin := "http://" + h.world.adminListen
	if err := waitFor(ctx, d, 5*time.Minute, 10*time.Millisecond, func() bool { return get(admin+"/readyz") == http.StatusOK }); err != nil {
		return fmt.Errorf("foldermirror serve (profiled): %w: %s", err, d.logTail())
	}
	log.Printf("  profiled a serve start: %s.cpu, %s.mem in %s", name, name, h.profileDir)
	return nil
}

// startServe starts `foldermirror serve` of the My Drive library, named
// name in the logs, its admin listener at adminAddr, and waits until it is
// ready (catalogs loaded) and has read the directory, or, if settled is
// not nil, until settled holds. env ("NAME=VALUE") overrides the
// configuration. It returns the time from start to ready.
// The Go runtime traces each garbage collection to the daemon's log
// (GODEBUG gctrace and gcpacertrace), for the GC figures.
func (h *hosted) startServe(ctx context.Context, name, adminAddr string, settled func() bool, env ...string) (*daemonProc, time.Duration, error) {
	log.Printf("starting foldermirror serve (%s)", name)
	godebug := "gctrace=1,gcpacertrace=1"
	if v := os.Getenv("GODEBUG"); v != "" {
		godebug = v + "," + godebug
	}
	start := time.Now()
	d, err := startDaemon(filepath.Join(h.dir, fmt.Sprintf("%s-%d.log", name, h.size)), childEnv(append(env, "GODEBUG="+godebug)...),
		h.bin, "serve", "--config", h.config, "--log-level", "warn")
	if err != nil {
		return nil, 0, err
	}
	admin := "http://" + adminAddr
	var readyIn time.Duration
	err = waitFor(ctx, d, 5*time.Minute, 10*time.Millisecond, func() bool { return get(admin+"/readyz") == http.StatusOK })
	if err == nil {
		readyIn = time.Since(start)
		if settled == nil {
			settled = func() bool { return directoriesRead(admin + "/status") }
		}
		err = waitFor(ctx, d, time.Minute, 50*time.Millisecond, settled)
	}
	if err != nil {
		d.stop(5 * time.Second)
		return nil, 0, fmt.Errorf("foldermirror serve (%s): %w: %s", name, err, d.logTail())
	}
	return d, readyIn, nil
}

// directoriesRead reports whether the daemon's /status shows every
// directory synced (or failed) and none syncing.
func directoriesRead(statusURL string) bool {
	resp, err := http.Get(statusURL)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var st struct {
		Directories []struct {
			Running   bool            `json:"running"`
			LastFull  json.RawMessage `json:"lastFull"`
			LastError string          `json:"lastError"`
		} `json:"directories"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&st) != nil {
		return false
	}
	for _, d := range st.Directories {
		if d.Running || (d.LastFull == nil && d.LastError == "") {
			return false
		}
	}
	return true
}

// waitFor polls ready every interval until it holds, the child exits, ctx
// ends or timeout passes.
func waitFor(ctx context.Context, d *daemonProc, timeout, interval time.Duration, ready func() bool) error {
	deadline := time.Now().Add(timeout)
	for !ready() {
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case d.exited():
			return fmt.Errorf("exited early (%w)", d.err)
		case time.Now().After(deadline):
			return fmt.Errorf("not ready after %s", timeout)
		}
		time.Sleep(interval)
	}
	return nil
}

// get returns the status of a GET, 0 when there is no answer.
func get(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// adminSyncResult is what an incremental sync the daemon ran through its
// admin listener did, as the harness saw it.
type adminSyncResult struct {
	// committed is from the request to the sync's "done" progress line,
	// which the daemon sends once the index has committed; wall to its last
	// line (the result), which it sends once it has done what follows a
	// sync. calls are the Drive calls the fake answered meanwhile.
	committed, wall time.Duration
	calls           int
	// methods are the calls by method.
	methods map[string]int
	// The daemon's own account of the sync.
	Full             bool
	Changes, Applied int
	Calls            int64
	Duration         time.Duration
}

// adminSync asks the daemon whose admin listener is at adminAddr for an
// incremental sync of the My Drive library (POST /sync), each Drive call
// taking driveLatency, and follows its progress to the end. It calls
// onCommit, if not nil, when the sync has committed.
func (h *hosted) adminSync(ctx context.Context, adminAddr string, onCommit func()) (*adminSyncResult, error) {
	url := fmt.Sprintf("http://%s/sync?library=%s&mode=incremental", adminAddr, h.world.myDrive.ID)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set(admin.RequestHeader, "bench")
	h.fake.ResetCalls()
	h.fake.SetResponseTime(driveLatency)
	defer h.fake.SetResponseTime(0)
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 500))
		return nil, fmt.Errorf("POST %s: %s: %s", url, resp.Status, body)
	}
	var committed time.Duration
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		var ev struct {
			Progress *struct{ Phase string }
			Result   *adminSyncResult
			Error    string
		}
		if err := json.Unmarshal(lines.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("POST %s: %q: %w", url, lines.Text(), err)
		}
		switch {
		case ev.Error != "":
			return nil, fmt.Errorf("the daemon's sync failed: %s", ev.Error)
		case ev.Progress != nil && ev.Progress.Phase == "done" && committed == 0:
			committed = time.Since(start)
			if onCommit != nil {
				onCommit()
			}
		case ev.Progress == nil && ev.Result != nil:
			r := ev.Result
			r.wall = time.Since(start)
			if r.committed = committed; committed == 0 {
				// No "done" line (it may be dropped when the follower lags):
				// the result is the first sign of the commit.
				r.committed = r.wall
				if onCommit != nil {
					onCommit()
				}
			}
			r.calls, r.methods = driveCalls(h.fake)
			return r, nil
		}
	}
	if err := lines.Err(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("POST %s: the progress ended without a result", url)
}

// incrementalRuns is how many syncs of sc.changes mixed changes the
// incremental figures take: one sync's CPU swings by a third from run to
// run, with whether a collection falls within it and how much new memory
// it faults in, so the figure is their mean.
const incrementalRuns = 5

// incrementalPause is the time between two of those syncs: a daemon's
// syncs of a library are seconds apart, and what follows one (the
// catalog's update) has ended by its result.
const incrementalPause = 250 * time.Millisecond

// incrementalRun is what one incremental sync of mixed changes measured.
type incrementalRun struct {
	*adminSyncResult
	// cpu is to the commit; precise when from the threads' run times
	// rather than 10 ms ticks (usage.cpuSince).
	cpu     time.Duration
	precise bool
	faults  int64
	gc      gcWindow
	// served is the time from the commit until the API served the folder
	// the changes renamed.
	served time.Duration
}

// incrementalFigures measures incremental syncs run by the daemon: with no
// change, then incrementalRuns syncs of sc.changes mixed changes each; and
// the time from the last one's commit until the API serves a folder it
// renamed, polled from the commit on.
func (h *hosted) incrementalFigures(ctx context.Context, srv *daemonProc, base, token string, t *table) error {
	log.Print("incremental sync through the daemon, no change")
	r, err := h.adminSync(ctx, h.world.adminListen, nil)
	if err != nil {
		return err
	}
	if r.Full {
		return errors.New("the daemon's sync without changes was a full one")
	}
	t.add(row{section: sectionIncremental, figure: "no change: Drive calls", size: h.size, value: float64(r.calls),
		unit: unitCalls, cmp: exactly, limit: 1, rule: "= 1"})

	runs := make([]incrementalRun, 0, incrementalRuns)
	for i := range incrementalRuns {
		if i > 0 {
			time.Sleep(incrementalPause)
		}
		start := time.Now()
		probe, name := h.world.mixedChanges(h.sc.changes, h.size+10*i) // seeds apart from the other figures' (size+1, size+3)
		log.Printf("  %s mixed changes made in the fake in %s; incremental sync %d of %d through the daemon",
			thousands(float64(h.sc.changes)), since(start), i+1, incrementalRuns)
		run, err := h.measuredSync(ctx, srv, base+"/folder/v1/files/"+probe, token, name)
		if err != nil {
			return err
		}
		log.Printf("  committed after %s, result after %s, %d Drive calls %v (the daemon: %d changes, %d applied, %s); CPU %.1f ms, "+
			"%d collections, %d minor page faults; served %s after the commit", run.committed.Round(time.Millisecond),
			run.wall.Round(time.Millisecond), run.calls, run.methods, run.Changes, run.Applied, run.Duration.Round(time.Millisecond),
			ms(run.cpu), run.gc.cycles, run.faults, run.served.Round(time.Millisecond))
		runs = append(runs, run)
	}
	h.incrementalRows(t, runs)
	return nil
}

// changesFigure names the incremental figures of mixed changes.
func (h *hosted) changesFigure() string {
	return fmt.Sprintf("%s mixed changes", thousands(float64(h.sc.changes)))
}

// measuredSync has the daemon sync the changes made in the fake, measures
// its CPU, page faults and collections from the request to the commit,
// and polls url (a folder the changes renamed to name) from the commit
// until the API serves the name.
func (h *hosted) measuredSync(ctx context.Context, srv *daemonProc, url, token, name string) (incrementalRun, error) {
	type served struct {
		after time.Duration // since the commit
		err   error
	}
	servedc := make(chan served, 1)
	pollCtx, stopPolling := context.WithTimeout(ctx, time.Minute)
	defer stopPolling()
	pid := srv.pid()
	gcBefore := h.sampleGC(srv)
	before := processUsage(pid)
	var used usage
	var gcAfter gcSample
	onCommit := func() {
		used = processUsage(pid)
		gcAfter = h.sampleGC(srv)
		go func() {
			after, _, err := pollUntilServed(pollCtx, url, token, name, time.Now())
			servedc <- served{after, err}
		}()
	}
	r, err := h.adminSync(ctx, h.world.adminListen, onCommit)
	if err != nil {
		return incrementalRun{}, err
	}
	s := <-servedc
	if s.err != nil {
		return incrementalRun{}, fmt.Errorf("the renamed folder: %w", s.err)
	}
	run := incrementalRun{adminSyncResult: r, faults: used.faults - before.faults, gc: gcBetween(gcBefore, gcAfter, srv.stderr.Name()),
		served: s.after}
	run.cpu, run.precise = used.cpuSince(before)
	return run, nil
}

// incrementalRows adds the figures of the incremental syncs of mixed
// changes: their CPU's mean against its limit, the longest wall time to a
// commit against its own, the last one's time until served against its
// own, and the rest for the record.
func (h *hosted) incrementalRows(t *table, runs []incrementalRun) {
	fig := h.changesFigure()
	var longest *incrementalRun
	var cpu, gcCPU time.Duration
	var faults int64
	calls, cycles := 0, 0
	precise := true
	cpus := make([]string, len(runs))
	for i := range runs {
		r := &runs[i]
		if longest == nil || r.committed > longest.committed {
			longest = r
		}
		cpu, gcCPU, faults = cpu+r.cpu, gcCPU+r.gc.gcCPU, faults+r.faults
		calls, cycles = max(calls, r.calls), cycles+r.gc.cycles
		precise = precise && r.precise
		cpus[i] = fmt.Sprintf("%.1f", ms(r.cpu))
	}
	n := len(runs)
	t.add(row{section: sectionIncremental, figure: fig + ": wall time to the commit", size: h.size, value: longest.committed.Seconds(),
		unit: unitSeconds, cmp: atMost, limit: incrementalSlack.Seconds() + float64(longest.calls)*driveLatency.Seconds(),
		rule: "≤ 1 s + calls × 30 ms", how: fmt.Sprintf("the longest of %d syncs; 1 s + %d × 30 ms", n, longest.calls)})
	t.add(row{section: sectionIncremental, figure: fig + ": Drive calls", size: h.size, value: float64(calls), unit: unitCalls, cmp: info,
		how: fmt.Sprintf("the most of %d syncs", n)})
	how := fmt.Sprintf("the mean of %d syncs; its threads' run times, /proc/PID/task/*/schedstat", n)
	if !precise {
		how = fmt.Sprintf("the mean of %d syncs; /proc/PID/stat, in 10 ms ticks (for some)", n)
	}
	t.add(row{section: sectionIncremental, figure: fig + ": the daemon's CPU to the commit", size: h.size, value: ms(cpu) / float64(n),
		unit: unitMillis, cmp: atMost, limit: ms(incrementalCPULimit), rule: "≤ 50 ms", how: how})
	t.add(row{section: sectionIncremental, figure: fig + ": the daemon's minor page faults to the commit", size: h.size,
		value: float64(faults) / float64(n), unit: unitPages, cmp: info, how: fmt.Sprintf("the mean of %d syncs", n)})
	t.add(row{section: sectionIncremental, figure: fig + ": served after the commit", size: h.size, value: ms(runs[n-1].served),
		unit: unitMillis, cmp: atMost, limit: ms(servedLimit), rule: "≤ 1 s", how: "the last sync"})
	t.note("%s folders, %s mixed changes, %d syncs %s apart, each from the POST to the commit: the daemon's CPU %s ms (mean %.1f); "+
		"its collector's %.1f ms in all, in %d collections (the gctrace of collections ended meanwhile, idle mark workers included); "+
		"%.0f minor page faults a sync, each new memory's page costing about the machine line's CPU. The longest to its commit: "+
		"the daemon read %d changes and applied %d in %s (its own measure); Drive calls %v; POST /sync to its \"done\" line %s, to its result %s.",
		thousands(float64(h.size)), thousands(float64(h.sc.changes)), n, incrementalPause, strings.Join(cpus, ", "), ms(cpu)/float64(n),
		ms(gcCPU), cycles, float64(faults)/float64(n), longest.Changes, longest.Applied, longest.Duration.Round(time.Millisecond),
		longest.methods, longest.committed.Round(time.Millisecond), longest.wall.Round(time.Millisecond))
}

// pollUntilServed GETs url every servedPollEvery until its body holds the
// JSON string name, and returns the time since from and how many GETs it
// took; it gives up when ctx ends.
func pollUntilServed(ctx context.Context, url, token, name string, from time.Time) (time.Duration, int, error) {
	want := []byte(fmt.Sprintf("%q", name))
	for polls := 1; ; polls++ {
		body, err := fetch(ctx, url, token)
		if err != nil {
			return 0, polls, err
		}
		if bytes.Contains(body, want) {
			return time.Since(from), polls, nil
		}
		select {
		case <-ctx.Done():
			return 0, polls, fmt.Errorf("%s did not answer the name %q (%w): %s", url, name, ctx.Err(), tail(string(body), 300))
		case <-time.After(servedPollEvery):
		}
	}
}

// String describes what the collector did, for the notes.
func (w gcWindow) String() string {
	return strings.Join(w.describe(), "; ")
}

// The limit of the serve's memory per folder.
const servePerFolderLimit = 400 // bytes

// growthRows adds the serve figures across sizes: the resident bytes per
// folder above a fixed base, from the smallest and the largest size run
// (100,000 and 1,000,000 by default), the line through the two; and how
// the heap the collector scans grows between them. The sizes between are
// checked against that line in the notes.
func growthRows(t *table, perSize map[int]*serveFigures) {
	sizes := slices.Sorted(maps.Keys(perSize))
	if len(sizes) < 2 {
		if len(sizes) == 1 {
			t.note("serve, growth with the library: needs two sizes, the run had one.")
		}
		return
	}
	lo, hi := perSize[sizes[0]], perSize[sizes[len(sizes)-1]]
	span := float64(hi.size - lo.size)
	slope := func(a, b int64) float64 { return float64(b-a) / span }
	perFolder := slope(lo.ready.rss, hi.ready.rss)
	base := float64(lo.ready.rss) - perFolder*float64(lo.size)
	between := fmt.Sprintf("%s → %s folders", thousands(float64(lo.size)), thousands(float64(hi.size)))
	t.add(row{section: sectionGrowth, figure: "resident bytes per folder once ready, above a fixed base (" + between + ")",
		value: perFolder, unit: unitBytes, cmp: atMost, limit: servePerFolderLimit})
	t.add(row{section: sectionGrowth, figure: "the fixed base", value: base, unit: unitMB, cmp: info})
	if lo.gc.scanHeap >= 0 && hi.gc.scanHeap >= 0 {
		t.add(row{section: sectionGrowth, figure: "heap the GC scans under API load, bytes per folder (" + between + ")",
			value: (hi.gc.scanHeap - lo.gc.scanHeap) / span, unit: unitBytes, cmp: info})
	}
	t.note("serve, growth %s: anonymous memory %.0f bytes per folder, file-backed (the index's map) %.0f.",
		between, slope(lo.ready.anon, hi.ready.anon), slope(lo.ready.file, hi.ready.file))
	for _, n := range sizes[1 : len(sizes)-1] {
		t.note("serve at %s folders: RSS once ready %.1f MB, the line through %s predicts %.1f MB.", thousands(float64(n)),
			float64(perSize[n].ready.rss)/1e6, between, (base+perFolder*float64(n))/1e6)
	}
}
