//go:build long

package tests

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/googlefake"
)

var soakFor = flag.Duration("soak", 60*time.Second, "how long the soak test loads the daemon")

// TestSoak loads the built daemon at full throughput for -soak (60 s) while
// it syncs every two seconds and the tree keeps changing: no answer is a 5xx,
// the stable part of the tree is answered exactly as the model says, no
// answer names a folder kept secret from its caller, and neither p99 nor the
// daemon's RSS grows over the run.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of load")
	}
	bin := buildBinary(t)
	fake := fmtest.StartGoogle(t)
	fake.Seed(8)
	m := buildE2EWorld(fake)
	churn := m.add(m.root, "Churn") // only this subtree changes
	var churned []string
	for i := range 200 {
		churned = append(churned, fake.CreateFolder(e2eStorage, churn, fmt.Sprint("c", i)))
	}
	secret := m.add(m.root, "Top secret") // alice's only, all along
	for i := range 20 {
		m.add(secret, fmt.Sprint("s", i))
	}
	c := e2eConfig(t, fake, m, fmtest.Bolt)
	listen, adminAddr := freePort(t), freePort(t)
	c.Listen, c.AdminListen = listen, adminAddr
	c.Schedule = config.Schedule{Incremental: "@every 2s", Full: "@every 20s"}
	c.Limits = config.Limits{CallerRequestsPerSecond: 1000000, CallerBurst: 1000000}
	path := fmtest.WriteConfig(t, c)

	cmd := exec.Command(bin, "serve", "--config", path, "--log-level", "error")
	var logs strings.Builder
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
	waitReady(t, "http://"+adminAddr+"/readyz")

	stop := make(chan struct{})
	go churnTree(fake, churn, churned, stop)
	load := newSoakLoad(t, fake, m, "http://"+listen, secret)
	samples := sampleRSS(cmd.Process.Pid, stop)
	load.run(*soakFor)
	close(stop)

	windows, rss := load.windows(), <-samples
	t.Logf("%d requests; per %v window p99: %v; RSS samples (MB): %v", load.total.Load(), soakWindow, windows, rss)
	if len(rss) > 2 && rss[len(rss)-1] > rss[0]*3/2+32 {
		t.Errorf("the daemon's RSS grew from %d MB to %d MB", rss[0], rss[len(rss)-1])
	}
	checkSyncsRan(t, "http://"+adminAddr+"/status")
	if n := load.serverErrors.Load(); n > 0 {
		t.Errorf("%d answers were 5xx\n%s", n, logs.String())
	}
	if n := load.wrong.Load(); n > 0 {
		t.Errorf("%d wrong answers", n)
	}
	if first, last := windows[0], windows[len(windows)-1]; last > 3*first+20*time.Millisecond {
		t.Errorf("p99 grew from %v to %v", first, last)
	}
}

// checkSyncsRan asks the daemon's status whether syncs ran, and all well.
func checkSyncsRan(t *testing.T, url string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var status struct {
		Libraries []struct {
			Name            string
			LastError       string
			LastIncremental *struct{ Changes int }
		}
	}
	json.NewDecoder(resp.Body).Decode(&status)
	for _, lib := range status.Libraries {
		if lib.LastError != "" || lib.LastIncremental == nil {
			t.Errorf("library %s during the soak: last error %q, last incremental sync %+v", lib.Name, lib.LastError, lib.LastIncremental)
		}
	}
}

// soakWindow is the span p99 is computed over.
const soakWindow = 10 * time.Second

// churnTree renames, shares and moves folders of the churn subtree until stop.
func churnTree(fake *googlefake.Server, churn string, ids []string, stop <-chan struct{}) {
	rng := rand.New(rand.NewPCG(1, 1))
	for {
		select {
		case <-stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
		id := ids[rng.IntN(len(ids))]
		switch rng.IntN(3) {
		case 0:
			fake.Rename(id, fmt.Sprint("renamed ", rng.Int()))
		case 1:
			fake.Share(id, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: "bob@example.com"})
		default:
			func() {
				defer func() { recover() }() // into its own subtree: skip
				fake.Move(id, []string{churn, ids[rng.IntN(len(ids))]}[rng.IntN(2)])
			}()
		}
	}
}

// soakLoad is the load and what it found.
type soakLoad struct {
	t        *testing.T
	base     string
	requests []soakRequest
	start    time.Time

	total, serverErrors, wrong atomic.Int64
	mu                         sync.Mutex
	latencies                  map[int][]time.Duration // by window
}

type soakRequest struct {
	path, token string
	// want, if set, is the exact list of folder IDs the answer must hold.
	want []string
	// never are IDs the answer must not name.
	never map[string]bool
}

func newSoakLoad(t *testing.T, fake *googlefake.Server, m *model, base, secret string) *soakLoad {
	l := &soakLoad{t: t, base: base, latencies: map[int][]time.Duration{}}
	secrets := map[string]bool{secret: true}
	for id, f := range m.folders {
		if f.parent == secret {
			secrets[id] = true
		}
	}
	stable := m.folders[m.root]
	for _, f := range m.children(m.root) {
		if f.name == "Handbook" {
			stable = f
		}
	}
	for _, user := range []string{"bob@example.com", "carol@example.com", "pat@partner.org"} {
		token := fake.GoogleIDToken(e2eClient, user, googlefake.WithTTL(time.Hour))
		var handbook []string
		for _, it := range m.nested(stable.id, user) {
			handbook = append(handbook, it.ID)
		}
		l.requests = append(l.requests,
			soakRequest{path: "/folder/v1/libraries/eng/folders", token: token, never: secrets},
			soakRequest{path: "/folder/v1/libraries/eng/folders/children", token: token, never: secrets},
			soakRequest{path: "/folder/v1/files/" + stable.id + "/children?onlyDirectChildren=true", token: token, want: handbook, never: secrets},
			soakRequest{path: "/folder/v1/folders/" + m.root + "/permissions", token: token},
		)
	}
	return l
}

// run loads the daemon with 16 clients for d.
func (l *soakLoad) run(d time.Duration) {
	l.start = time.Now()
	deadline := l.start.Add(d)
	var wg sync.WaitGroup
	for c := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Transport: &http.Transport{}}
			for i := c; time.Now().Before(deadline); i++ {
				l.do(client, l.requests[i%len(l.requests)])
			}
		}()
	}
	wg.Wait()
}

func (l *soakLoad) do(client *http.Client, r soakRequest) {
	req, _ := http.NewRequest(http.MethodGet, l.base+r.path, nil)
	req.Header.Set("Authorization", "Bearer "+r.token)
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		l.t.Errorf("GET %s: %v", r.path, err)
		l.serverErrors.Add(1)
		return
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	l.total.Add(1)
	l.mu.Lock()
	w := int(start.Sub(l.start) / soakWindow)
	l.latencies[w] = append(l.latencies[w], took)
	l.mu.Unlock()
	if resp.StatusCode >= 500 || err != nil {
		l.serverErrors.Add(1)
		return
	}
	l.check(r, resp.StatusCode, body)
}

func (l *soakLoad) check(r soakRequest, status int, body []byte) {
	if status != http.StatusOK && status != http.StatusNotFound {
		l.wrong.Add(1)
		l.t.Errorf("GET %s: status %d", r.path, status)
		return
	}
	var v any
	json.Unmarshal(body, &v)
	got := topLevelIDs(v)
	for _, id := range fmtest.FileIDs(v) {
		if r.never[id] {
			l.wrong.Add(1)
			l.t.Errorf("GET %s names a secret folder %s", r.path, id)
		}
	}
	if r.want != nil && !slices.Equal(got, r.want) {
		l.wrong.Add(1)
		l.t.Errorf("GET %s: %v, want %v", r.path, got, r.want)
	}
}

func topLevelIDs(v any) []string {
	m, _ := v.(map[string]any)
	items, _ := m["items"].([]any)
	var out []string
	for _, it := range items {
		if f, ok := it.(map[string]any); ok {
			out = append(out, fmt.Sprint(f["fileId"]))
		}
	}
	return out
}

// windows returns the p99 of each full window.
func (l *soakLoad) windows() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []time.Duration
	for w := 0; ; w++ {
		lat, ok := l.latencies[w]
		if !ok || len(lat) < 100 {
			if len(out) == 0 {
				out = append(out, 0)
			}
			return out
		}
		slices.Sort(lat)
		out = append(out, lat[len(lat)*99/100])
	}
}

// sampleRSS reads a process's RSS every second until stop, and sends the
// samples in MB.
func sampleRSS(pid int, stop <-chan struct{}) <-chan []int {
	out := make(chan []int, 1)
	go func() {
		var samples []int
		for {
			select {
			case <-stop:
				out <- samples
				return
			case <-time.After(time.Second):
			}
			status, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
			for _, line := range strings.Split(string(status), "\n") {
				if kb, ok := strings.CutPrefix(line, "VmRSS:"); ok {
					n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(kb), "kB")))
					samples = append(samples, n/1024)
				}
			}
		}
	}()
	return out
}
