package main

import (
	"context"
	"encoding/json"
	"errors"
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
	"time"

	"github.com/foldermirror/foldermirror/index"
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
	// phases are when the child's progress entered each phase.
	phases []phaseMark
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
	fullSummary        = regexp.MustCompile(`: full sync: (\d+) folders, (\d+) permissions`)
	incrementalSummary = regexp.MustCompile(`: incremental sync: .*, (\d+) folders, \d+ Drive calls`)
)

// runSync runs `foldermirror sync --config configPath --library lib` (with
// --full when full) under the measuring wrapper, with driveLatency added to
// every Drive call, and measures it.
func (e *env) runSync(ctx context.Context, configPath, lib string, full bool) (*syncRun, error) {
	args := []string{"sync", "--config", configPath, "--library", lib}
	if full {
		args = append(args, "--full")
	}
	r, stdout, err := e.runMeasured(ctx, args)
	if err != nil {
		return nil, fmt.Errorf("foldermirror %s: %w", strings.Join(args, " "), err)
	}
	if m := fullSummary.FindStringSubmatch(stdout); m != nil {
		r.full = true
		r.folders, _ = strconv.Atoi(m[1])
		r.permissions, _ = strconv.Atoi(m[2])
	} else if m := incrementalSummary.FindStringSubmatch(stdout); m != nil {
		r.folders, _ = strconv.Atoi(m[1])
	} else {
		return nil, fmt.Errorf("foldermirror sync printed no summary: %q", tail(stdout, 500))
	}
	log.Printf("synced %s: %s", lib, strings.TrimSpace(stdout))
	log.Printf("  Drive calls the fake answered: %d %v; wall %s; peak RSS %.0f MB",
		r.calls, r.methods, r.wall.Round(time.Millisecond), float64(r.peakRSS)/1e6)
	return r, nil
}

// runMeasured runs the foldermirror binary with args under the measuring
// wrapper, with driveLatency added to every Drive call, and returns what it
// cost and its standard output.
func (e *env) runMeasured(ctx context.Context, args []string) (*syncRun, string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	out := filepath.Join(e.dir, "measure.json")
	cmd := exec.CommandContext(ctx, exe, append([]string{e.bin}, args...)...)
	cmd.Env = childEnv(envMeasure + "=" + out)
	cmd.SysProcAttr = childAttr()
	var stdout strings.Builder
	stderr := &phaseClock{}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	e.fake.ResetCalls()
	e.fake.SetLatency(driveLatency)
	stderr.start = time.Now()
	err = cmd.Run()
	e.fake.SetLatency(0)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %s", err, tail(stderr.text.String(), 1500))
	}
	var m measured
	if data, err := os.ReadFile(out); err != nil || json.Unmarshal(data, &m) != nil {
		return nil, "", fmt.Errorf("no measure from the wrapper (%v)", err)
	}
	r := &syncRun{wall: m.Wall, peakRSS: m.MaxRSS, methods: map[string]int{}, phases: stderr.phases}
	for method, n := range e.fake.Calls() {
		if strings.HasPrefix(method, "drive.") {
			r.calls += n
			r.methods[method] = n
		}
	}
	return r, stdout.String(), nil
}

// myDriveConfig writes the configuration of the My Drive library
// alone, whose index the sync and API figures share.
func (e *env) myDriveConfig() (string, error) {
	return e.world.writeConfig(e.dir, "mydrive", []library{e.world.myDrive})
}

// dataDir is the data directory of a configuration writeConfig wrote.
func dataDir(configPath string) string { return filepath.Join(filepath.Dir(configPath), "data") }

// syncFigures measures figures 1, 6, 3 and 2, in that order: the full sync
// of the My Drive library, its index, an incremental sync of it with no
// change, and full syncs of the two shared drives.
func syncFigures(ctx context.Context, e *env, t *table) error {
	cfg, err := e.myDriveConfig()
	if err != nil {
		return err
	}
	lib := e.world.myDrive
	log.Printf("figure 1: full sync of %s (%s folders)", lib.ID, thousands(float64(lib.Folders)))
	r, err := e.runSync(ctx, cfg, lib.ID, true)
	if err != nil {
		return err
	}
	e.mySynced = true
	fullSyncRows(t, lib, r)
	if err := indexFigures(cfg, lib, t); err != nil {
		return err
	}
	log.Print("figure 3: incremental sync, no change")
	if r, err = e.runSync(ctx, cfg, lib.ID, false); err != nil {
		return err
	}
	fig := fmt.Sprintf("3. incremental sync, no change, %s folders: Drive calls", thousands(float64(lib.Folders)))
	if r.full {
		return errors.New("figure 3: the sync without --full was a full one")
	}
	t.add(row{figure: fig, value: float64(r.calls), unit: unitCalls, cmp: exactly, limit: 1})
	return driveFigures(ctx, e, t)
}

// fullSyncRows adds figure 1's rows.
func fullSyncRows(t *table, lib library, r *syncRun) {
	name := fmt.Sprintf("1. full sync, My Drive %s folders", thousands(float64(lib.Folders)))
	fewest := math.Ceil(float64(lib.Folders)/1000) + 1
	t.add(row{figure: name + ": Drive calls", value: float64(r.calls), unit: unitCalls, cmp: atMost,
		limit: 1.2 * fewest, how: "1.2 × " + thousands(fewest) + " fewest"})
	t.add(row{figure: name + ": wall time", value: r.wall.Seconds(), unit: unitSeconds, cmp: atMost,
		limit: fullSyncTarget.Seconds()})
	t.add(row{figure: name + ": peak RSS", value: float64(r.peakRSS), unit: unitMB, cmp: atMost, limit: syncRSSTarget})
	checkCount(t, lib, r)
}

// checkCount notes a sync that did not find the folders the world has.
func checkCount(t *table, lib library, r *syncRun) {
	t.note("%s: synced %s folders and %s permissions (the world has %s folders); %s.", lib.ID,
		thousands(float64(r.folders)), thousands(float64(r.permissions)), thousands(float64(lib.Folders)), describePhases(r))
}

// indexFigures measures figure 6 on the index the figure 1 sync left: the
// file's size and the median time of five index.Open calls.
func indexFigures(configPath string, lib library, t *table) error {
	path := filepath.Join(dataDir(configPath), index.FileName)
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	var opens []time.Duration
	for range 5 {
		start := time.Now()
		db, err := index.Open(dataDir(configPath), logger)
		if err != nil {
			return err
		}
		opens = append(opens, time.Since(start))
		if err := db.Close(); err != nil {
			return err
		}
	}
	slices.Sort(opens)
	name := fmt.Sprintf("6. index of %s folders × 5 permissions", thousands(float64(lib.Folders)))
	t.add(row{figure: name + ": size on disk", value: float64(fi.Size()), unit: unitMB, cmp: info})
	t.add(row{figure: name + ": index.Open (median of 5)", value: ms(opens[len(opens)/2]), unit: unitMillis, cmp: info})
	return nil
}

// driveFigures measures figure 2: a full sync of each shared drive.
func driveFigures(ctx context.Context, e *env, t *table) error {
	cfg, err := e.world.writeConfig(e.dir, "drives", e.world.drives)
	if err != nil {
		return err
	}
	for _, lib := range e.world.drives {
		log.Printf("figure 2: full sync of shared drive %s (%s folders, %s with a permission of their own)",
			lib.ID, thousands(float64(lib.Folders)), thousands(float64(lib.OwnPermissions)))
		r, err := e.runSync(ctx, cfg, lib.ID, true)
		if err != nil {
			return err
		}
		pct := 100 * lib.OwnPermissions / (lib.Folders - 1)
		name := fmt.Sprintf("2. full sync, shared drive %s folders, %d %% with own permissions",
			thousands(float64(lib.Folders)), pct)
		bound := float64(lib.Folders) + math.Ceil(float64(lib.Folders)/1000) + 1
		t.add(row{figure: name + ": Drive calls", value: float64(r.calls), unit: unitCalls, cmp: atMost,
			limit: 1.05 * bound, how: "1.05 × " + thousands(bound)})
		t.add(row{figure: name + ": wall time", value: r.wall.Seconds(), unit: unitSeconds, cmp: atMost,
			limit: 1.2 * float64(r.calls) * driveLatency.Seconds() / concurrency,
			how:   fmt.Sprintf("1.2 × %s calls × 30 ms / %d", thousands(float64(r.calls)), concurrency)})
		checkCount(t, lib, r)
	}
	return nil
}

// ms converts a duration to milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
