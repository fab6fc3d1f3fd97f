// Command bench measures foldermirror's performance figures in one run and
// prints them as a table: each figure, the value measured, its limit (fixed,
// or measured in the same run), their ratio and PASS or FAIL.
//
//	go run ./bench                   every figure (about 3 minutes)
//	go run ./bench -quick            everything scaled down, a smoke test (about a minute)
//	go run ./bench -only api         one group: sync, api or auth
//	go run ./bench -md FILE          also write the table as Markdown
//
// The harness hosts one googlefake (the Google side of the world) and runs
// the real foldermirror binary, built once into a temporary directory, as
// child processes: `foldermirror sync` for the sync figures (with 30 ms of
// latency added to every Drive call) and `foldermirror serve` for the API
// figures, which its own load generator drives. The API's limits come from a
// bare Gin handler serving the same bytes, run as a child process too (this
// binary, re-executed with BENCH_BARE_SERVER set). Authentication is measured
// in-process with testing.Benchmark. Everything listens on 127.0.0.1;
// temporary files and child processes go away at the end, also on Ctrl-C.
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
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/foldermirror/foldermirror/googlefake"
)

// Figure groups, as -only names them.
const (
	groupSync = "sync"
	groupAPI  = "api"
	groupAuth = "auth"
)

var allGroups = []string{groupSync, groupAPI, groupAuth}

// scale sizes a run.
type scale struct {
	// myDriveFolders is the My Drive library's size, its root included.
	myDriveFolders int
	// myDriveDepth is how many levels the tree has below its root.
	myDriveDepth int
	// wideChildren is the number of children of the folder "wide".
	wideChildren int
	// driveFolders is each shared drive's size, its root excluded.
	driveFolders int
	// clients is the number of concurrent API clients; streams the number
	// of concurrent full-library listings.
	clients, streams int
	// warmup and measure bound each throughput run.
	warmup, measure time.Duration
	// firstByteSamples is how many sequential listings time the first byte.
	firstByteSamples int
}

var (
	fullScale = scale{myDriveFolders: 100_000, myDriveDepth: 6, wideChildren: 1000, driveFolders: 20_000,
		clients: 64, streams: 8, warmup: 2 * time.Second, measure: 10 * time.Second, firstByteSamples: 5}
	quickScale = scale{myDriveFolders: 5_000, myDriveDepth: 6, wideChildren: 1000, driveFolders: 1_000,
		clients: 64, streams: 8, warmup: 500 * time.Millisecond, measure: 2 * time.Second, firstByteSamples: 3}
)

// Fixed parameters of the sync figures.
const (
	driveLatency   = 30 * time.Millisecond
	concurrency    = 8 // storage.concurrency
	fullSyncTarget = 15 * time.Second
	syncRSSTarget  = 300e6 // bytes
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
	quick := flag.Bool("quick", false, "scale everything down: a smoke test of about a minute")
	only := flag.String("only", "", "run one group of figures: sync, api or auth")
	mdFile := flag.String("md", "", "also write the table as Markdown to this file")
	flag.Parse()
	groups := allGroups
	if *only != "" {
		if !slices.Contains(allGroups, *only) {
			fmt.Fprintf(os.Stderr, "bench: -only %q: want one of %s\n", *only, strings.Join(allGroups, ", "))
			return 2
		}
		groups = []string{*only}
	}
	sc := fullScale
	if *quick {
		sc = quickScale
	}
	log.SetFlags(log.Ltime)
	log.SetPrefix("bench: ")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	t := &table{}
	err := measure(ctx, sc, groups, t)
	if ctx.Err() != nil {
		log.Print("interrupted")
		return 1
	}
	if err != nil {
		log.Print(err)
	}
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

// env is what the figures share: the temporary directory, the binary, the
// fake and the world in it.
type env struct {
	sc    scale
	dir   string
	bin   string // the foldermirror binary; "" when no group needs it
	fake  *googlefake.Server
	world *world
	// mySynced: the My Drive library's index is there (figure 1 ran).
	mySynced bool
}

// measure builds the world and runs the figure groups, adding rows to t.
func measure(ctx context.Context, sc scale, groups []string, t *table) error {
	dir, err := os.MkdirTemp("", "foldermirror-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	e := &env{sc: sc, dir: dir, fake: googlefake.New()}
	if slices.Contains(groups, groupSync) || slices.Contains(groups, groupAPI) {
		if e.bin, err = buildBinary(ctx, dir); err != nil {
			return err
		}
	}
	e.fake.Start()
	defer e.fake.Close()
	if e.world, err = buildWorld(ctx, e.fake, sc, slices.Contains(groups, groupSync), dir); err != nil {
		return err
	}
	for _, g := range groups {
		switch g {
		case groupSync:
			err = syncFigures(ctx, e, t)
		case groupAPI:
			err = apiFigures(ctx, e, t)
		case groupAuth:
			err = authFigures(e, t)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			t.fail(g, err)
		}
	}
	return nil
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
