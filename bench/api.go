package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/gin-gonic/gin"
)

// The environment that makes this binary a bare Gin server (see serveBare).
const (
	envBareServer = "BENCH_BARE_SERVER" // the address to listen on
	envBareBody   = "BENCH_BARE_BODY"   // a JSON file: Authorization header → answer
	envBareRoute  = "BENCH_BARE_ROUTE"  // the Gin route pattern answered
)

// Limits of the API figures.
const (
	throughputShare = 0.7 // of the bare handler's
	p99Share        = 1.5 // of the bare handler's
	firstByteLimit  = 50 * time.Millisecond
	streamRSSLimit  = 64e6 // bytes
	rssSampleEvery  = 20 * time.Millisecond
)

// endpoint is an API operation loaded by the throughput figures.
type endpoint struct {
	id, figure string
	path       string // with the query
	route      string // the Gin pattern, for the bare server
	note       string // for the notes, optional
}

// streamFigures measures operation 3: the first byte of the full library
// listing, and the server's RSS growth while sc.streams listings run at once.
func (h *hosted) streamFigures(ctx context.Context, srv *daemonProc, url string, tokens []string, t *table) error {
	log.Printf("op 3: %d sequential full listings, then %d at once", h.sc.firstByteSamples, h.sc.streams)
	firsts, sizes, err := sequentialListings(ctx, url, tokens, max(h.sc.firstByteSamples, len(tokens)))
	if err != nil {
		return err
	}
	before, err := readMemory(srv.pid())
	if err != nil {
		return err
	}
	stop := make(chan struct{})
	peakc := make(chan memory, 1)
	go func() { peakc <- samplePeak(srv.pid(), stop) }()
	results, err := listingsAtOnce(ctx, url, tokens, h.sc.streams)
	close(stop)
	peak := <-peakc
	if err != nil {
		return err
	}
	var slowest, longest time.Duration
	for i, r := range results {
		slowest, longest = max(slowest, r.firstByte), max(longest, r.total)
		if want := sizes[tokens[i%len(tokens)]]; r.bytes != want {
			return fmt.Errorf("a concurrent listing had %d bytes, a sequential one of the same user %d", r.bytes, want)
		}
	}
	const name = "op 3, all folders streamed"
	t.add(row{section: sectionAPI, figure: fmt.Sprintf("%s: first byte (median of %d)", name, len(firsts)), size: h.size,
		value: ms(median(firsts)), unit: unitMillis, cmp: under, limit: ms(firstByteLimit), rule: "< 50 ms"})
	t.add(row{section: sectionAPI, figure: fmt.Sprintf("%s: first byte, slowest of %d at once", name, h.sc.streams), size: h.size,
		value: ms(slowest), unit: unitMillis, cmp: info})
	t.add(row{section: sectionAPI, figure: fmt.Sprintf("%s: RSS growth, %d at once", name, h.sc.streams), size: h.size,
		value: float64(peak.rss - before.rss), unit: unitMB, cmp: under, limit: streamRSSLimit, rule: "< 64 MB"})
	t.note("%s folders, op 3: a listing is %s bytes; the first after /readyz had its first byte in %.1f ms; %d at once took %s; "+
		"server RSS %.1f → %.1f MB (anonymous %.1f → %.1f MB, file-backed %.1f → %.1f MB; peaks sampled every 20 ms).",
		thousands(float64(h.size)), thousands(float64(sizes[tokens[0]])), ms(firsts[0]), h.sc.streams, longest.Round(time.Millisecond),
		float64(before.rss)/1e6, float64(peak.rss)/1e6, float64(before.anon)/1e6, float64(peak.anon)/1e6,
		float64(before.file)/1e6, float64(peak.file)/1e6)
	return nil
}

// sequentialListings reads n listings one after the other, the users in
// turn, and returns their first-byte times in order and each user's listing
// size (by token: each user's has its own permitted operations).
func sequentialListings(ctx context.Context, url string, tokens []string, n int) ([]time.Duration, map[string]int64, error) {
	var firsts []time.Duration
	sizes := map[string]int64{}
	for i := range n {
		token := tokens[i%len(tokens)]
		s, err := stream(ctx, url, token)
		if err != nil {
			return nil, nil, err
		}
		firsts = append(firsts, s.firstByte)
		sizes[token] = s.bytes
		log.Printf("  listing %d: first byte %.1f ms, %s bytes in %s", i+1, ms(s.firstByte), thousands(float64(s.bytes)), s.total.Round(time.Millisecond))
	}
	return firsts, sizes, nil
}

// median returns the median of durations, without reordering them.
func median(d []time.Duration) time.Duration {
	sorted := slices.Sorted(slices.Values(d))
	return sorted[len(sorted)/2]
}

// streamResult is one listing read to its end.
type streamResult struct {
	firstByte, total time.Duration
	bytes            int64
}

// stream GETs url on a new connection and reads the whole body, timing its
// first byte.
func stream(ctx context.Context, url, token string) (streamResult, error) {
	tr := &http.Transport{DisableCompression: true}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return streamResult{}, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	start := time.Now()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return streamResult{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 500))
		return streamResult{}, fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	var first [1]byte
	if _, err := io.ReadFull(resp.Body, first[:]); err != nil {
		return streamResult{}, err
	}
	r := streamResult{firstByte: time.Since(start)}
	n, err := io.Copy(io.Discard, resp.Body)
	r.total, r.bytes = time.Since(start), n+1
	return r, err
}

// listingsAtOnce runs n listings concurrently, the users in turn.
func listingsAtOnce(ctx context.Context, url string, tokens []string, n int) ([]streamResult, error) {
	results := make([]streamResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results[i], errs[i] = stream(ctx, url, tokens[i%len(tokens)]) })
	}
	wg.Wait()
	return results, errors.Join(errs...)
}

// samplePeak samples a process's memory every rssSampleEvery until stop is
// closed and returns the peaks.
func samplePeak(pid int, stop <-chan struct{}) memory {
	var peak memory
	tick := time.NewTicker(rssSampleEvery)
	defer tick.Stop()
	for {
		if m, err := readMemory(pid); err == nil {
			peak = memory{rss: max(peak.rss, m.rss), anon: max(peak.anon, m.anon), file: max(peak.file, m.file)}
		}
		select {
		case <-stop:
			return peak
		case <-tick.C:
		}
	}
}

// throughputFigures loads one operation of the real server, then a bare Gin
// handler answering the same bytes (each user's own), and adds the
// operation's rows. It returns what the daemon's garbage collector did
// during the real server's load.
func (h *hosted) throughputFigures(ctx context.Context, srv *daemonProc, base string, ep endpoint, tokens []string, t *table) (gcWindow, error) {
	bodies := map[string][]byte{}
	for _, tok := range tokens {
		body, err := fetch(ctx, base+ep.path, tok)
		if err != nil {
			return gcWindow{}, err
		}
		bodies["Bearer "+tok] = body
	}
	body := bodies["Bearer "+tokens[0]]
	log.Printf("%s: %d clients, %s bytes an answer", ep.figure, h.sc.clients, thousands(float64(len(body))))
	before := h.sampleGC(srv)
	measured, err := load(ctx, base+ep.path, tokens, h.sc)
	if err != nil {
		return gcWindow{}, err
	}
	gc := gcBetween(before, h.sampleGC(srv), srv.stderr.Name())
	bareURL, stopBare, err := startBare(ctx, h.env, ep, bodies)
	if err != nil {
		return gcWindow{}, err
	}
	bare, err := load(ctx, bareURL, tokens, h.sc)
	stopBare()
	if err != nil {
		return gcWindow{}, fmt.Errorf("bare handler: %w", err)
	}
	log.Printf("  foldermirror %s; bare handler %s; GC %.1f %% of the daemon's CPU", measured, bare, 100*gc.share())
	t.add(row{section: sectionAPI, figure: ep.figure + ": throughput", size: h.size, value: measured.rps(), unit: unitRPS, cmp: atLeast,
		limit: throughputShare * bare.rps(), rule: "≥ 0.7 × bare Gin", how: fmt.Sprintf("0.7 × bare %s", thousands(bare.rps()))})
	t.add(row{section: sectionAPI, figure: ep.figure + ": p99 latency", size: h.size, value: ms(measured.percentile(99)), unit: unitMillis,
		cmp: atMost, limit: p99Share * ms(bare.percentile(99)), rule: "≤ 1.5 × bare Gin's p99",
		how: fmt.Sprintf("1.5 × bare %.1f ms", ms(bare.percentile(99)))})
	t.add(row{section: sectionServe, figure: "GC share of the daemon's CPU under " + ep.id + " load", size: h.size,
		value: gc.share(), unit: unitPercent, cmp: info})
	t.note("%s folders, %s: %s bytes an answer; foldermirror %s; bare handler %s.",
		thousands(float64(h.size)), ep.id, thousands(float64(len(body))), measured, bare)
	if ep.note != "" {
		t.note("%s folders, %s: %s.", thousands(float64(h.size)), ep.id, ep.note)
	}
	return gc, nil
}

// fetch GETs url once and returns the body of its 200 answer.
func fetch(ctx context.Context, url, token string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s: %s", url, resp.Status, tail(string(body), 500))
	}
	return body, err
}

// loadResult is what a load run measured.
type loadResult struct {
	latencies []time.Duration // sorted
	window    time.Duration
}

func (r *loadResult) rps() float64 { return float64(len(r.latencies)) / r.window.Seconds() }

// percentile returns the p-th percentile latency (nearest rank).
func (r *loadResult) percentile(p float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	i := int(float64(len(r.latencies))*p/100+0.5) - 1
	return r.latencies[min(max(i, 0), len(r.latencies)-1)]
}

func (r *loadResult) String() string {
	return fmt.Sprintf("%s req/s, p50 %.1f ms, p99 %.1f ms", thousands(r.rps()), ms(r.percentile(50)), ms(r.percentile(99)))
}

// load runs sc.clients clients against url, each on its own keep-alive
// connection, requesting one after the other and reading whole answers, for
// sc.warmup then sc.measure. The requests that end during the measure
// count. Client i sends tokens[i%len(tokens)].
func load(ctx context.Context, url string, tokens []string, sc scale) (*loadResult, error) {
	// The harness's heap holds the fake world: collecting it while loading
	// would take CPU from the server measured. Collect before, and rarely.
	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	from := time.Now().Add(sc.warmup)
	end := from.Add(sc.measure)
	lat := make([][]time.Duration, sc.clients)
	errs := make([]error, sc.clients)
	var wg sync.WaitGroup
	for i := range sc.clients {
		wg.Go(func() { lat[i], errs[i] = client(ctx, url, tokens[i%len(tokens)], from, end) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	r := &loadResult{latencies: slices.Concat(lat...), window: sc.measure}
	slices.Sort(r.latencies)
	return r, nil
}

// client requests url until end and returns the latencies of the requests
// that ended between from and end.
func client(ctx context.Context, url, token string, from, end time.Time) ([]time.Duration, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	var lat []time.Duration
	for start := time.Now(); start.Before(end); start = time.Now() {
		resp, err := c.Do(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 500))
			resp.Body.Close()
			return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		if done := time.Now(); !done.Before(from) && !done.After(end) {
			lat = append(lat, done.Sub(start))
		}
	}
	return lat, nil
}

// startBare starts this binary as a bare Gin server of ep's route answering
// bodies (by Authorization header), and returns the URL to load and how to
// stop it.
func startBare(ctx context.Context, e *env, ep endpoint, bodies map[string][]byte) (string, func(), error) {
	data, err := json.Marshal(bodies)
	if err != nil {
		return "", nil, err
	}
	file := filepath.Join(e.dir, "bare-bodies.json")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		return "", nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return "", nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	d, err := startDaemon(filepath.Join(e.dir, "bare.log"),
		childEnv(envBareServer+"="+addr, envBareBody+"="+file, envBareRoute+"="+ep.route), exe)
	if err != nil {
		return "", nil, err
	}
	url := "http://" + addr + ep.path
	if err := waitFor(ctx, d, 30*time.Second, 20*time.Millisecond, func() bool { return get(url) != 0 }); err != nil {
		d.stop(5 * time.Second)
		return "", nil, fmt.Errorf("bare server: %w: %s", err, d.logTail())
	}
	return url, func() { d.stop(5 * time.Second) }, nil
}

// serveBare is the bare server's whole program: one Gin route answering
// pre-encoded bytes, those of the request's Authorization header in
// bodiesFile (401 for another), until SIGTERM or SIGINT.
func serveBare(addr, bodiesFile, route string) error {
	data, err := os.ReadFile(bodiesFile)
	if err != nil {
		return err
	}
	var bodies map[string][]byte
	if err := json.Unmarshal(data, &bodies); err != nil {
		return err
	}
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.GET(route, func(c *gin.Context) {
		body, ok := bodies[c.GetHeader("Authorization")]
		if !ok {
			c.Status(http.StatusUnauthorized)
			return
		}
		c.Data(http.StatusOK, "application/json; charset=utf-8", body)
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: r}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
