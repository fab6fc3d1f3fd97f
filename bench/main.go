// Command bench measures foldermirror's performance figures in one run and
// prints them beside their limits (fixed, or measured in the same run) with
// PASS or FAIL: a table with a column per library size, for the figures
// that grow with the library, and a table of the others.
//
//	go run ./bench                     every figure at 100,000, 300,000 and 1,000,000 folders (about 10 minutes)
//	go run ./bench -quick              everything scaled down, a smoke test (about a minute)
//	go run ./bench -sizes 50k,200k     other library sizes
//	go run ./bench -only sync,serve    some groups of figures: sync, serve, drives, postgres, push, discovery, auth
//	go run ./bench -drives 1k          the discovery figures with 1,000 shared drives (default 10,000)
//	go run ./bench -latency 30ms,100ms the full-sync figures at each Drive latency (default 30ms)
//	go run ./bench -grants uniform     a handful of permission lists shared by all folders, the bench's earlier world
//	go run ./bench -md FILE            also write the tables as Markdown
//	go run ./bench -postgres URL       the postgres figures on that server (default $FOLDERMIRROR_TEST_POSTGRES)
//
// The harness runs the real foldermirror binary, built once into a
// temporary directory, as child processes, against googlefake (the Google
// side of the world) hosted in the harness, where every Drive call the
// figures time takes 30 ms, the fake's own time to answer included (its
// SetResponseTime; -latency times the full syncs of the My Drive library at
// other latencies too), so that a sync can reach the latency floor the
// limits are made of. For each size it builds a fresh fake world, a My Drive
// library of that many folders, and measures:
//
//   - sync: `foldermirror sync --full` under a measuring wrapper (its wall
//     time and peak RSS), the Drive calls the fake answered, at each
//     latency, each on an empty index; the index left;
//   - serve: `foldermirror serve` on that index: time to ready (/readyz,
//     catalogs loaded) and RSS then; the whole library streamed (operation
//     3), first byte and RSS growth with 8 listings at once; children of a
//     folder (operation 6) and permissions (operation 4) under 64
//     keep-alive clients, against a bare Gin handler serving the same bytes
//     in the same run, and the garbage collector's share of the daemon's CPU
//     meanwhile; then incremental syncs run by the daemon itself through its
//     admin listener (no change, then 1,000 mixed changes) and the time
//     until the API serves a folder those changes renamed.
//
// Then, once: full syncs of two shared drives (drives); with a PostgreSQL
// server, a database of its own holding the index of the smallest size's
// library, beside bbolt (postgres: full sync wall time on each, the API's
// throughput of one of three replicas against a daemon on bbolt, and the
// time from a sync's commit through one replica until all three serve
// it); Drive push notifications in worlds of their own (push: from a
// notification to the API serving the change, on one daemon and, with a
// PostgreSQL server, on three replicas; a burst of changes; forged
// notifications; the Drive calls of 200 shared-drive libraries at rest);
// and authentication in-process with testing.Benchmark (auth). The serve figures per folder
// come from the smallest and the largest size. Everything listens on
// 127.0.0.1; temporary files and child processes go away at the end, also
// on Ctrl-C.
//
// The harness reads /proc and uses Linux's parent-death signal: it runs on
// Linux only.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/foldermirror/foldermirror/internal/googlefake"
)

// Figure groups, as -only names them.
const (
	groupSync     = "sync"
	groupServe    = "serve"
	groupDrives   = "drives"
	groupAuth     = "auth"
	groupPostgres = "postgres"
	groupPush     = "push"
	groupFound    = "discovery"
)

var allGroups = []string{groupSync, groupServe, groupDrives, groupPostgres, groupPush, groupFound, groupAuth}

// scale sizes a run.
type scale struct {
	// sizes are the My Drive library's sizes, its root included.
	sizes []int
	// wideChildren is the number of children of the folder "wide".
	wideChildren int
	// driveFolders is each shared drive's size, its root excluded.
	driveFolders int
	// changes is how many changes the incremental figure makes.
	changes int
	// clients is the number of concurrent API clients; streams the number
	// of concurrent full-library listings.
	clients, streams int
	// warmup and measure bound each throughput run.
	warmup, measure time.Duration
	// firstByteSamples is how many sequential listings time the first byte.
	firstByteSamples int
	// push sizes the push figures; discovery those of the shared drives
	// found by themselves.
	push      pushScale
	discovery discoveryScale
}

var (
	fullScale = scale{sizes: []int{100_000, 300_000, 1_000_000}, wideChildren: 1000, driveFolders: 20_000,
		changes: 1000, clients: 64, streams: 8, warmup: 2 * time.Second, measure: 10 * time.Second, firstByteSamples: 5,
		push: fullPush, discovery: fullDiscovery}
	quickScale = scale{sizes: []int{5_000, 20_000}, wideChildren: 1000, driveFolders: 1_000,
		changes: 1000, clients: 64, streams: 8, warmup: 500 * time.Millisecond, measure: 2 * time.Second, firstByteSamples: 3,
		push: quickPush, discovery: quickDiscovery}
)

// envPostgres names the PostgreSQL server the postgres figures use unless
// -postgres names one: the tests' own variable.
const envPostgres = "FOLDERMIRROR_TEST_POSTGRES"

// Fixed parameters of the sync figures.
const (
	// driveLatency is how long each Drive call takes, the fake's work
	// included, in every figure but the full syncs' (see -latency).
	driveLatency = 30 * time.Millisecond
	concurrency  = 8 // storage.concurrency
)

func main() {
	if out := os.Getenv(envMeasure); out != "" {
		os.Exit(runMeasured(out, os.Args[1:]))
	}
	if addr := os.Getenv(envBareServer); addr != "" {
		if err := serveBare(addr, os.Getenv(envBareBody), os.Getenv(envBareRoute)); err != nil {
			fmt.Fprintln(os.Stderr, "bench bare server:", err)
			os.Exit(1)
		}
		return
	}
	os.Exit(run())
}

// run runs the benchmark and returns the exit status: 0 when every figure
// passes, 1 when one fails or cannot be measured, 2 on bad flags.
func run() int {
	testing.Init() // testing.Benchmark reads the test flags
	quick := flag.Bool("quick", false, "scale everything down: a smoke test of about a minute (sizes 5k,20k unless -sizes)")
	sizes := flag.String("sizes", "", "comma-separated My Drive library sizes, e.g. 100k,300k,1m (default 100k,300k,1m)")
	drives := flag.String("drives", "", "how many shared drives of 100 folders the discovery figures find, e.g. 1k (default 10k; -quick 200)")
	only := flag.String("only", "", "run some groups of figures, comma-separated: "+strings.Join(allGroups, ", "))
	grants := flag.String("grants", grantsVaried, "how the library's folders are shared: varied (the targets' world) or uniform")
	mdFile := flag.String("md", "", "also write the tables as Markdown to this file")
	latency := flag.String("latency", "30ms", "comma-separated Drive latencies the full-sync figures run at, e.g. 30ms,100ms")
	profileDir := flag.String("profile", "", "write CPU and allocation profiles of each size's full syncs and of a serve start to this directory")
	pgURL := flag.String("postgres", os.Getenv(envPostgres), "a PostgreSQL server's URL, for the postgres figures (default $"+envPostgres+")")
	flag.Parse()
	log.SetFlags(log.Ltime)
	log.SetPrefix("bench: ")
	groups := allGroups
	if *only != "" {
		groups = strings.Split(*only, ",")
		for _, g := range groups {
			if !slices.Contains(allGroups, g) {
				fmt.Fprintf(os.Stderr, "bench: -only %q: want some of %s\n", g, strings.Join(allGroups, ", "))
				return 2
			}
		}
	}
	if *pgURL == "" && slices.Contains(groups, groupPostgres) {
		if *only != "" {
			fmt.Fprintf(os.Stderr, "bench: the postgres figures need a server: -postgres URL or $%s\n", envPostgres)
			return 2
		}
		log.Printf("no PostgreSQL server (-postgres URL or $%s): the postgres figures are left out", envPostgres)
		groups = slices.DeleteFunc(slices.Clone(groups), func(g string) bool { return g == groupPostgres })
	}
	if *grants != grantsVaried && *grants != grantsUniform {
		fmt.Fprintf(os.Stderr, "bench: -grants %q: want %s or %s\n", *grants, grantsVaried, grantsUniform)
		return 2
	}
	sc := fullScale
	if *quick {
		sc = quickScale
	}
	if *sizes != "" {
		var err error
		if sc.sizes, err = parseSizes(*sizes, sc.wideChildren); err != nil {
			fmt.Fprintln(os.Stderr, "bench: -sizes:", err)
			return 2
		}
	}

	if *drives != "" {
		n, err := parseCount(*drives)
		if err != nil || n < minDiscoveryDrives {
			fmt.Fprintf(os.Stderr, "bench: -drives %q: want at least %d drives, such as 1k or 10k\n", *drives, minDiscoveryDrives)
			return 2
		}
		sc.discovery.drives = n
	}

	latencies, err := parseLatencies(*latency)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: -latency:", err)
		return 2
	}

	if *profileDir != "" {
		if err := os.MkdirAll(*profileDir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "bench: -profile:", err)
			return 2
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	t := &table{}
	start := time.Now()
	err = measure(ctx, &env{sc: sc, grants: *grants, latencies: latencies, profileDir: *profileDir}, groups, *pgURL, t)
	if ctx.Err() != nil {
		log.Print("interrupted")
		return 1
	}
	if err != nil {
		log.Print(err)
	}
	log.Printf("the run took %s", time.Since(start).Round(time.Second))
	m := currentMachine()
	fmt.Println()
	fmt.Println(m)
	t.printText(os.Stdout)
	if *mdFile != "" {
		if werr := os.WriteFile(*mdFile, []byte(t.markdown(m, *quick)), 0o644); werr != nil {
			log.Print(werr)
			return 1
		}
		log.Printf("wrote %s", *mdFile)
	}
	if err != nil || !t.allPass() {
		return 1
	}
	return 0
}

// parseSizes reads -sizes: numbers with an optional k (thousand) or m
// (million) suffix, returned in increasing order. A library needs room for
// its root, "wide" and wide's children.
func parseSizes(s string, wideChildren int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		size, err := parseCount(f)
		if err != nil || size < wideChildren+100 {
			return nil, fmt.Errorf("%q: want a size of at least %d folders, such as 100k or 1m", f, wideChildren+100)
		}
		if !slices.Contains(out, size) {
			out = append(out, size)
		}
	}
	slices.Sort(out)
	return out, nil
}

// parseCount reads a number with an optional k (thousand) or m (million)
// suffix, such as 1k or 1.5m.
func parseCount(s string) (int, error) {
	f := strings.ToLower(strings.TrimSpace(s))
	mult := 1
	switch {
	case strings.HasSuffix(f, "k"):
		f, mult = strings.TrimSuffix(f, "k"), 1_000
	case strings.HasSuffix(f, "m"):
		f, mult = strings.TrimSuffix(f, "m"), 1_000_000
	}
	n, err := strconv.ParseFloat(f, 64)
	if err != nil {
		return 0, err
	}
	return int(n * float64(mult)), nil
}

// parseLatencies reads -latency: positive durations, such as 30ms,100ms,
// returned in increasing order.
func parseLatencies(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%q: want positive durations, such as 30ms,100ms", f)
		}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out, nil
}

// env is what every figure shares: the run's temporary directory and the
// binary.
type env struct {
	sc     scale
	dir    string
	bin    string // the foldermirror binary; "" when no group needs it
	grants string
	// latencies are the Drive latencies the full-sync figures run at.
	latencies []time.Duration
	// profileDir, when not "", receives CPU and allocation profiles of the
	// My Drive library's full syncs and of a serve start (-profile).
	profileDir string
}

// profileArgs are the flags that have a foldermirror command write its
// profiles as name.cpu and name.mem in the profile directory; none without
// -profile or name.
func (e *env) profileArgs(name string) []string {
	if e.profileDir == "" || name == "" {
		return nil
	}
	stem := filepath.Join(e.profileDir, name)
	return []string{"--cpuprofile", stem + ".cpu", "--memprofile", stem + ".mem"}
}

// sizeName says a library size as -sizes does: 100k, 1m, 5000.
func sizeName(n int) string {
	switch {
	case n%1_000_000 == 0:
		return strconv.Itoa(n/1_000_000) + "m"
	case n%1_000 == 0:
		return strconv.Itoa(n/1_000) + "k"
	}
	return strconv.Itoa(n)
}

// hosted is a world in a fake of its own, and what the figures run on it
// share: a My Drive library of one size, or (size 0) the shared drives.
type hosted struct {
	*env
	size  int
	fake  *googlefake.Server
	world *world
	// config is the configuration of the My Drive library alone; synced
	// tells whether its index is there (the sync figures ran).
	config string
	synced bool
}

// measure runs the figure groups in e, adding rows to t: those of the
// library's size for each size in turn, each in a world of its own, then
// the others.
func measure(ctx context.Context, e *env, groups []string, pgURL string, t *table) error {
	dir, err := os.MkdirTemp("", "foldermirror-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	e.dir = dir
	sc := e.sc
	if slices.ContainsFunc(groups, func(g string) bool { return g != groupAuth }) {
		if e.bin, err = buildBinary(ctx, dir); err != nil {
			return err
		}
	}
	perSize := map[int]*serveFigures{}
	if slices.Contains(groups, groupSync) || slices.Contains(groups, groupServe) {
		for _, size := range sc.sizes {
			sf, err := e.sizeFigures(ctx, size, groups, t)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil {
				t.fail(fmt.Sprintf("library of %s folders", thousands(float64(size))), size, err)
			}
			if sf != nil {
				perSize[size] = sf
			}
		}
		growthRows(t, perSize)
	}
	for _, g := range groups {
		switch g {
		case groupDrives:
			err = e.driveFigures(ctx, t)
		case groupAuth:
			err = e.authFigures(t)
		case groupPostgres:
			err = e.postgresFigures(ctx, pgURL, t)
		case groupPush:
			err = e.pushFigures(ctx, pgURL, t)
		case groupFound:
			err = e.discoveryFigures(ctx, pgURL, t)
		default:
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			t.fail(g, 0, err)
		}
	}
	return nil
}

// sizeFigures builds the world of one library size and runs the sync and
// serve figures on it; it returns what the serve figures measured, nil if
// they did not run.
func (e *env) sizeFigures(ctx context.Context, size int, groups []string, t *table) (*serveFigures, error) {
	s, closeWorld, err := e.host(ctx, size, t)
	if err != nil {
		return nil, err
	}
	defer closeWorld()
	if slices.Contains(groups, groupSync) {
		if err := s.syncFigures(ctx, t); err != nil {
			t.fail("full sync", size, err)
		}
	}
	if !slices.Contains(groups, groupServe) {
		return nil, nil
	}
	if !s.synced {
		log.Printf("syncing %s for the serve figures", s.world.myDrive.ID)
		if _, err := s.runSync(ctx, driveLatency, s.config, s.world.myDrive.ID, true, ""); err != nil {
			return nil, err
		}
		s.synced = true
	}
	return s.serveFigures(ctx, t)
}

// host builds a world with a My Drive library of size folders in a fake of
// its own, and its configuration; closeWorld closes the fake and removes
// the world's files.
func (e *env) host(ctx context.Context, size int, t *table) (h *hosted, closeWorld func(), err error) {
	fake := googlefake.New()
	fake.Start()
	dir := filepath.Join(e.dir, fmt.Sprintf("size-%d", size))
	closeWorld = func() {
		fake.Close()
		_ = os.RemoveAll(dir) // indexes of a million folders take room
		// The next world should not pay for this one's garbage.
		runtime.GC()
		debug.FreeOSMemory()
	}
	defer func() {
		if err != nil {
			closeWorld()
		}
	}()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, nil, err
	}
	w, err := newWorld(fake, dir)
	if err != nil {
		return nil, nil, err
	}
	log.Printf("building a My Drive library of %s folders (%s grants)", thousands(float64(size)), e.grants)
	start := time.Now()
	if err := w.buildMyDrive(ctx, size, e.sc.wideChildren, e.grants); err != nil {
		return nil, nil, err
	}
	w.spreadTimes()
	built := time.Since(start)
	// Collect the building's garbage now, not while the fake answers the
	// figures' calls.
	runtime.GC()
	h = &hosted{env: e, size: size, fake: fake, world: w}
	if h.config, err = w.writeConfig(dir, "mydrive", []library{w.myDrive}); err != nil {
		return nil, nil, err
	}
	fp, err := h.fakeFigures(ctx, built)
	if err != nil {
		return nil, nil, err
	}
	log.Printf("  %s distinct permission lists; the fake %s", thousands(float64(w.lists)), fp)
	t.note("%s folders: %s distinct permission lists (%s grants), the longest %d permissions; the fake %s.",
		thousands(float64(size)), thousands(float64(w.lists)), e.grants, w.deepGrants, fp)
	return h, closeWorld, nil
}

// buildBinary builds cmd/foldermirror of the module the working directory
// is in, into dir.
func buildBinary(ctx context.Context, dir string) (string, error) {
	out, err := commandOutput(ctx, "", "go", "env", "GOMOD")
	if err != nil {
		return "", err
	}
	gomod := strings.TrimSpace(out)
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside the foldermirror module (go env GOMOD is empty)")
	}
	bin := filepath.Join(dir, "foldermirror")
	log.Print("building ./cmd/foldermirror")
	if _, err := commandOutput(ctx, filepath.Dir(gomod), "go", "build", "-o", bin, "./cmd/foldermirror"); err != nil {
		return "", err
	}
	return bin, nil
}
