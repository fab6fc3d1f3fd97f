package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/foldermirror/foldermirror/index"
	"github.com/foldermirror/foldermirror/internal/googlefake"
)

// syncRun is one run of `foldermirror sync` and what it cost.
type syncRun struct {
	wall    time.Duration
	peakRSS int64 // bytes, the child's maximum resident set
	calls   int   // Drive calls the fake answered
	// methods counts the Drive calls by method.
	methods map[string]int
	// folders and permissions are what the child reported having synced;
	// full whether the sync was a full one.
	folders, permissions int
	full                 bool
	// ranges is the number of createdTime ranges a full sync listed.
	ranges int
	// phases are when the child's progress entered each phase.
	phases []phaseMark
	// fakeCPU is the CPU the harness, the fake answering, used meanwhile;
	// cpu the child's own.
	fakeCPU, cpu time.Duration
}

// phaseMark is when a sync entered a phase, counted from the child's start.
type phaseMark struct {
	name string
	at   time.Duration
}

// phaseClock is the writer of a sync's standard error: it keeps the text
// and notes when each phase ("LIBRARY: PHASE: ..." lines) first appears.
type phaseClock struct {
	start  time.Time
	text   strings.Builder
	line   []byte
	phases []phaseMark
}

func (p *phaseClock) Write(b []byte) (int, error) {
	p.text.Write(b)
	p.line = append(p.line, b...)
	for {
		i := slices.Index(p.line, '\n')
		if i < 0 {
			return len(b), nil
		}
		// "LIBRARY: PHASE: n folders, PHASE: n/m, ..."
		if _, rest, ok := strings.Cut(string(p.line[:i]), ": "); ok {
			for _, part := range strings.Split(rest, ", ") {
				if name, _, ok := strings.Cut(part, ": "); ok && !p.seen(name) {
					p.phases = append(p.phases, phaseMark{name: name, at: time.Since(p.start)})
				}
			}
		}
		p.line = p.line[i+1:]
	}
}

// seen tells whether a phase was noted already (phases may interleave:
// permissions are read while folders are listed).
func (p *phaseClock) seen(name string) bool {
	for _, ph := range p.phases {
		if ph.name == name {
			return true
		}
	}
	return false
}

// describePhases says when each phase began and when the run ended.
func describePhases(r *syncRun) string {
	var parts []string
	for _, ph := range r.phases {
		parts = append(parts, fmt.Sprintf("%s from %.2f s", ph.name, ph.at.Seconds()))
	}
	return strings.Join(append(parts, fmt.Sprintf("exit at %.2f s", r.wall.Seconds())), ", ")
}

// The lines `foldermirror sync` prints per library.
var (
	fullSummary        = regexp.MustCompile(`: full sync(?: \([^)]*\))?: (\d+) folders?, (\d+) permissions?`)
	incrementalSummary = regexp.MustCompile(`: incremental sync: .*, (\d+) folders?, \d+ Drive calls?`)
	rangesSummary      = regexp.MustCompile(`Drive calls? in (\d+) createdTime ranges`)
)

// runSync runs `foldermirror sync --config configPath --library lib` (with
// --full when full) under the measuring wrapper, each Drive call taking
// latency, and measures it; with -profile, its profiles are named profile
// (none when ""). env ("NAME=VALUE") overrides the configuration.
func (h *hosted) runSync(ctx context.Context, latency time.Duration, configPath, lib string, full bool, profile string, env ...string) (*syncRun, error) {
	args := []string{"sync", "--config", configPath, "--library", lib}
	if full {
		args = append(args, "--full")
	}
	args = append(args, h.profileArgs(profile)...)
	r, stdout, err := h.runMeasured(ctx, latency, args, env...)
	if err != nil {
		return nil, fmt.Errorf("foldermirror %s: %w", strings.Join(args, " "), err)
	}
	if m := fullSummary.FindStringSubmatch(stdout); m != nil {
		r.full = true
		r.folders, _ = strconv.Atoi(m[1])
		r.permissions, _ = strconv.Atoi(m[2])
		r.ranges = 1
		if m := rangesSummary.FindStringSubmatch(stdout); m != nil {
			r.ranges, _ = strconv.Atoi(m[1])
		}
	} else if m := incrementalSummary.FindStringSubmatch(stdout); m != nil {
		r.folders, _ = strconv.Atoi(m[1])
	} else {
		return nil, fmt.Errorf("foldermirror sync printed no summary: %q", tail(stdout, 500))
	}
	log.Printf("synced %s: %s", lib, strings.TrimSpace(stdout))
	log.Printf("  Drive calls the fake answered: %d %v; wall %s; peak RSS %.0f MB; CPU %.1f s, the fake's %.1f s",
		r.calls, r.methods, r.wall.Round(time.Millisecond), float64(r.peakRSS)/1e6, r.cpu.Seconds(), r.fakeCPU.Seconds())
	return r, nil
}

// runMeasured runs the foldermirror binary with args (and env added to its
// environment) under the measuring wrapper, each Drive call taking
// latency, and returns what it cost and its standard output.
func (h *hosted) runMeasured(ctx context.Context, latency time.Duration, args []string, env ...string) (*syncRun, string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	out := filepath.Join(h.dir, "measure.json")
	cmd := exec.CommandContext(ctx, exe, append([]string{h.bin}, args...)...)
	cmd.Env = childEnv(append(env, envMeasure+"="+out)...)
	cmd.SysProcAttr = childAttr()
	var stdout strings.Builder
	stderr := &phaseClock{}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	h.fake.ResetCalls()
	h.fake.SetResponseTime(latency)
	cpu := selfCPU()
	stderr.start = time.Now()
	err = cmd.Run()
	fakeCPU := selfCPU() - cpu
	h.fake.SetResponseTime(0)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %s", err, tail(stderr.text.String(), 1500))
	}
	var m measured
	if data, err := os.ReadFile(out); err != nil || json.Unmarshal(data, &m) != nil {
		return nil, "", fmt.Errorf("no measure from the wrapper (%w)", err)
	}
	r := &syncRun{wall: m.Wall, peakRSS: m.MaxRSS, methods: map[string]int{}, phases: stderr.phases, fakeCPU: fakeCPU, cpu: m.CPU}
	r.calls, r.methods = driveCalls(h.fake)
	return r, stdout.String(), nil
}

// driveCalls returns how many Drive calls the fake answered since its
// counts were reset, in all and by method.
func driveCalls(fake *googlefake.Server) (int, map[string]int) {
	n, methods := 0, map[string]int{}
	for method, c := range fake.Calls() {
		if strings.HasPrefix(method, "drive.") {
			n += c
			methods[method] = c
		}
	}
	return n, methods
}

// selfCPU is the CPU time the harness has used, the fake's included.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// dataDir is the data directory of a configuration writeConfig wrote.
func dataDir(configPath string) string { return filepath.Join(filepath.Dir(configPath), "data") }

// The limits of the full sync of the My Drive library of n folders, from
// the fewest calls possible (a page of 1,000 folders each, and one for the
// changes token) and the K createdTime ranges the sync listed side by side:
// Drive calls at most 1.1 × the fewest + 2 × K (each range's last page is
// partial, and a cut range's lister read a page ahead); peak RSS 150 MB at
// 100,000 folders and 250 MB at 1,000,000, linear between (and flat
// beyond). Wall time: from a latency of 100 ms a call (Drive's own is half
// a second to seconds), at most 0.35 × the fewest × the latency (one listing
// page after page cannot go below the fewest × the latency) plus the CPU
// the fake used, which a real Drive does not take from the machine; below,
// the sync is bound by the machine's CPU rather than by Drive, and the
// limit stays the one it had: 2 × the fewest × the latency.
const (
	fullSyncCallShare  = 1.1
	fullSyncCallsRange = 2
	fullSyncWallShare  = 0.35
	driveLikeLatency   = 100 * time.Millisecond
	cpuBoundWallShare  = 2.0
)

// fullSyncWall returns the wall time limit of a full sync and its rule.
func fullSyncWall(fewest float64, latency, fakeCPU time.Duration) (limit float64, rule, how string) {
	if latency < driveLikeLatency {
		return cpuBoundWallShare * fewest * latency.Seconds(), "≤ 2 × (⌈N/1000⌉+1) × " + latencyText(latency) + " (CPU-bound below 100 ms)",
			fmt.Sprintf("2 × %s × %s", thousands(fewest), latencyText(latency))
	}
	return fullSyncWallShare*fewest*latency.Seconds() + fakeCPU.Seconds(), "≤ 0.35 × (⌈N/1000⌉+1) × " + latencyText(latency) + " + the fake's CPU",
		fmt.Sprintf("0.35 × %s × %s + %.1f s", thousands(fewest), latencyText(latency), fakeCPU.Seconds())
}

func fewestCalls(n int) float64 { return math.Ceil(float64(n)/1000) + 1 }

func syncRSSLimit(n int) float64 {
	const lo, hi = 100_000, 1_000_000
	f := min(max(float64(n-lo)/(hi-lo), 0), 1)
	return 150e6 + f*100e6
}

// syncFigures measures the full sync of the My Drive library at each of
// the run's latencies, each on an empty index, and the index the last left;
// up to 100,000 folders, the same library's once its folders all share
// one createdTime too.
func (h *hosted) syncFigures(ctx context.Context, t *table) error {
	for _, latency := range h.latencies {
		if err := h.syncFiguresAt(ctx, latency, t); err != nil {
			return fmt.Errorf("at %s a Drive call: %w", latencyText(latency), err)
		}
	}
	if err := indexFigures(h.size, h.config, t); err != nil {
		return err
	}
	if h.size > oneTimeMaxSize {
		return nil
	}
	return h.oneTimeFigures(ctx, h.latencies[len(h.latencies)-1], t)
}

// oneTimeMaxSize is the largest size oneTimeFigures runs at: it runs two
// more full syncs.
const oneTimeMaxSize = 100_000

// oneTimeFigures measures the full sync of the My Drive library, its
// folders all created in the same millisecond (one createdTime range), at
// latency, against one listing page after page (storage.concurrency 1,
// the full sync before the ranges): it must be as fast, within 10 %, with
// one call more (the newest folder's createdTime). The world's times are
// spread again after.
func (h *hosted) oneTimeFigures(ctx context.Context, latency time.Duration, t *table) error {
	lib := h.world.myDrive
	h.fake.SpreadTimes(timesFrom, timesFrom.Add(time.Millisecond))
	defer h.world.spreadTimes()
	runs := map[string]*syncRun{}
	for _, how := range []string{"ranges", "sequential"} {
		if err := os.RemoveAll(dataDir(h.config)); err != nil {
			return err
		}
		var env []string
		if how == "sequential" {
			env = append(env, "FOLDERMIRROR_STORAGE_CONCURRENCY=1")
		}
		log.Printf("full sync of %s, its folders all of one createdTime, %s a Drive call, %s", lib.ID, latencyText(latency), how)
		r, err := h.runSync(ctx, latency, h.config, lib.ID, true, "", env...)
		if err != nil {
			return err
		}
		runs[how] = r
	}
	r, seq := runs["ranges"], runs["sequential"]
	at := ", one createdTime, " + latencyText(latency) + " a call"
	t.add(row{section: sectionSync, figure: "wall time" + at, size: h.size, value: r.wall.Seconds(), unit: unitSeconds, cmp: atMost,
		limit: 1.1 * seq.wall.Seconds(), rule: "≤ 1.1 × one listing's (storage.concurrency 1)", how: fmt.Sprintf("1.1 × %.2f s", seq.wall.Seconds())})
	t.add(row{section: sectionSync, figure: "Drive calls" + at, size: h.size, value: float64(r.calls), unit: unitCalls, cmp: atMost,
		limit: float64(seq.calls + 1), rule: "≤ one listing's + 1", how: fmt.Sprintf("%d + 1", seq.calls)})
	t.note("%s folders, one createdTime, %s a Drive call: %d range(s), %d calls, %s; one listing (storage.concurrency 1): %d calls, %s.",
		thousands(float64(h.size)), latencyText(latency), r.ranges, r.calls, describePhases(r), seq.calls, describePhases(seq))
	return nil
}

// syncFiguresAt measures a full sync of the My Drive library, on an empty
// index, each Drive call taking latency; its rows say the latency.
func (h *hosted) syncFiguresAt(ctx context.Context, latency time.Duration, t *table) error {
	lib := h.world.myDrive
	if err := os.RemoveAll(dataDir(h.config)); err != nil {
		return err
	}
	h.synced = false
	log.Printf("full sync of %s (%s folders), %s a Drive call", lib.ID, thousands(float64(lib.Folders)), latencyText(latency))
	r, err := h.runSync(ctx, latency, h.config, lib.ID, true, fmt.Sprintf("sync-%s-%s", sizeName(h.size), latency))
	if err != nil {
		return err
	}
	h.synced = true
	at := ", " + latencyText(latency) + " a call"
	fewest := fewestCalls(lib.Folders)
	t.add(row{section: sectionSync, figure: "Drive calls" + at, size: h.size, value: float64(r.calls), unit: unitCalls, cmp: atMost,
		limit: fullSyncCallShare*fewest + fullSyncCallsRange*float64(r.ranges), rule: "≤ 1.1 × (⌈N/1000⌉+1) + 2 × K ranges",
		how: fmt.Sprintf("1.1 × %s fewest + 2 × %d", thousands(fewest), r.ranges)})
	wall, rule, how := fullSyncWall(fewest, latency, r.fakeCPU)
	t.add(row{section: sectionSync, figure: "wall time" + at, size: h.size, value: r.wall.Seconds(), unit: unitSeconds, cmp: atMost,
		limit: wall, rule: rule, how: how})
	rss := row{section: sectionSync, figure: "peak RSS" + at, size: h.size, value: float64(r.peakRSS), unit: unitMB, cmp: atMost,
		limit: syncRSSLimit(lib.Folders), rule: "≤ 150 MB at 100k, 250 MB at 1M (linear between)"}
	if lib.Folders != 100_000 && lib.Folders != 1_000_000 {
		rss.how = "interpolated"
	}
	t.add(rss)
	t.add(row{section: sectionSync, figure: "CPU a folder" + at, size: h.size, value: cpuPerFolder(r), unit: unitMicros, cmp: atMost,
		limit: syncCPULimit.Seconds() * 1e6, rule: "≤ 12 µs", how: fmt.Sprintf("%.2f s of CPU (user + system)", r.cpu.Seconds())})
	t.note("%s folders, full sync at %s a Drive call: synced %s folders and %s permissions (the world has %s folders) in %d createdTime ranges; Drive calls %v; %s; it used %.1f s of CPU, the fake %.1f s (%.1f ms a call).",
		thousands(float64(h.size)), latencyText(latency), thousands(float64(r.folders)), thousands(float64(r.permissions)), thousands(float64(lib.Folders)),
		r.ranges, r.methods, describePhases(r), r.cpu.Seconds(), r.fakeCPU.Seconds(), ms(r.fakeCPU)/float64(max(r.calls, 1)))
	return nil
}

// Full sync CPU (the process's user and system time, from rusage) a
// folder: on bbolt, and on PostgreSQL (its server's CPU not counted).
const (
	syncCPULimit   = 12 * time.Microsecond
	pgSyncCPULimit = 20 * time.Microsecond
)

// cpuPerFolder is the CPU a sync used a folder, in µs.
func cpuPerFolder(r *syncRun) float64 {
	return float64(r.cpu) / float64(time.Microsecond) / float64(max(r.folders, 1))
}

// latencyText says a latency in milliseconds, e.g. "30 ms".
func latencyText(d time.Duration) string { return strconv.FormatFloat(ms(d), 'f', -1, 64) + " ms" }

// indexFigures adds the size of the index the full sync left and the
// median time of five index.Open calls.
func indexFigures(size int, configPath string, t *table) error {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	var opens []time.Duration
	var sizeBytes int64
	for range 5 {
		start := time.Now()
		db, err := index.Open(index.Options{DataDir: dataDir(configPath), Logger: logger})
		if err != nil {
			return err
		}
		opens = append(opens, time.Since(start))
		sizeBytes = db.Info(context.Background()).SizeBytes
		if err := db.Close(); err != nil {
			return err
		}
	}
	t.add(row{section: sectionSync, figure: "index: size on disk", size: size, value: float64(sizeBytes), unit: unitMB, cmp: info})
	t.add(row{section: sectionSync, figure: "index: index.Open (median of 5)", size: size, value: ms(median(opens)), unit: unitMillis, cmp: info})
	return nil
}

// driveFigures measures full syncs of two shared drives of driveFolders
// folders, in a world of their own: one where one folder in ten has a
// permission of its own (the target), one where all have (for the record).
func (e *env) driveFigures(ctx context.Context, t *table) error {
	fake := googlefake.New()
	fake.Start()
	defer fake.Close()
	w, err := newWorld(fake, e.dir)
	if err != nil {
		return err
	}
	h := &hosted{env: e, fake: fake, world: w}
	for _, every := range []int{10, 1} {
		start := time.Now()
		lib, err := w.buildSharedDrive(ctx, e.sc.driveFolders, every)
		if err != nil {
			return err
		}
		w.drives = append(w.drives, lib)
		log.Printf("built shared drive %s: %s folders in %s", lib.ID, thousands(float64(lib.Folders)), since(start))
	}
	w.spreadTimes()
	cfg, err := w.writeConfig(e.dir, "drives", w.drives)
	if err != nil {
		return err
	}
	for _, lib := range w.drives {
		log.Printf("full sync of shared drive %s (%s folders, %s with a permission of their own)",
			lib.ID, thousands(float64(lib.Folders)), thousands(float64(lib.OwnPermissions)))
		r, err := h.runSync(ctx, driveLatency, cfg, lib.ID, true, "")
		if err != nil {
			return err
		}
		pct := 100 * lib.OwnPermissions / (lib.Folders - 1)
		name := fmt.Sprintf("full sync, shared drive of %s folders, %d %% with their own permissions",
			thousands(float64(lib.Folders)), pct)
		bound := float64(lib.Folders) + math.Ceil(float64(lib.Folders)/1000) + 1
		calls := row{section: sectionDrives, figure: name + ": Drive calls", value: float64(r.calls), unit: unitCalls, cmp: atMost,
			limit: 1.05 * bound, how: "1.05 × " + thousands(bound)}
		wall := row{section: sectionDrives, figure: name + ": wall time", value: r.wall.Seconds(), unit: unitSeconds, cmp: atMost,
			limit: 1.2 * float64(r.calls) * driveLatency.Seconds() / concurrency,
			how:   fmt.Sprintf("1.2 × %s calls × 30 ms / %d", thousands(float64(r.calls)), concurrency)}
		if lib.OwnPermissions == lib.Folders-1 {
			calls.cmp, wall.cmp = info, info // every folder has its own: for the record
		}
		t.add(calls)
		t.add(wall)
		t.note("%s: synced %s folders and %s permissions (the drive has %s folders); %s.", lib.ID,
			thousands(float64(r.folders)), thousands(float64(r.permissions)), thousands(float64(lib.Folders)), describePhases(r))
	}
	return nil
}

// ms converts a duration to milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
