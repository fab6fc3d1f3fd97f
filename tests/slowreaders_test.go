//go:build long

package tests

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/googlefake"
)

// TestSlowReadersOfOneCaller: one caller opens 500 connections, asks each
// for an answer of about 820 KB and reads none of them. The daemon's RSS
// plus the kernel's memory for the daemon's sockets grows by less than
// 64 MB (DESIGN §4), and another caller is served meanwhile.
func TestSlowReadersOfOneCaller(t *testing.T) {
	const readers = 500
	fake, m := slowReadersWorld(t)
	path := writeE2EConfig(t, fake, m, "bolt")
	if r := runBinary(t, "sync", "--config", path); r.code != 0 {
		t.Fatalf("sync: %d %s", r.code, r.stderr)
	}
	p := startServe(t, path)
	alice, bob := fake.GoogleIDToken(e2eClient, "alice@example.com"), fake.GoogleIDToken(e2eClient, "bob@example.com")
	addr := strings.TrimPrefix(p.api, "http://")
	answer := getJSON(t, p.api+"/folder/v1/libraries/eng/folders", alice, 200, nil)
	if len(answer) < 800_000 || len(answer) > 1<<20 {
		t.Fatalf("operation 3 for alice: %d bytes, want about 820 KB", len(answer))
	}
	before := daemonMemory(t, p, addr)

	statuses := map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	conns := make(chan net.Conn, readers)
	for range readers {
		wg.Go(func() {
			code, conn := unreadRequest(t, addr, alice)
			conns <- conn
			mu.Lock()
			statuses[code]++
			mu.Unlock()
		})
	}
	wg.Wait()
	close(conns)
	defer func() {
		for c := range conns {
			c.Close()
		}
	}()
	if statuses[http.StatusOK]+statuses[http.StatusTooManyRequests] != readers || statuses[http.StatusOK] > 32 {
		t.Errorf("statuses %v: want at most 32 answered (limits.callerConcurrent), the others 429", statuses)
	}
	// Another caller is served meanwhile, whole.
	getJSON(t, p.api+"/folder/v1/libraries/eng/folders", bob, 200, nil)
	getJSON(t, p.api+"/folder/v1/files/"+m.root+"/children", bob, 200, nil)

	// Let the daemon write all it can.
	time.Sleep(2 * time.Second)
	after := daemonMemory(t, p, addr)
	grew := (after.rss - before.rss) + (after.sockets - before.sockets)
	t.Logf("%d slow readers (%v): the daemon's RSS %d → %d MB, its sockets' kernel memory %d → %d MB, the machine's TCP memory %d → %d MB",
		readers, statuses, before.rss>>20, after.rss>>20, before.sockets>>20, after.sockets>>20, before.tcp>>20, after.tcp>>20)
	if grew >= 64<<20 {
		t.Errorf("the daemon's RSS plus its sockets' memory grew by %d MB, want under 64 MB", grew>>20)
	}
}

// slowReadersWorld is a library of about 1,470 folders all shared with alice (bob
// sees a Handbook of 20).
func slowReadersWorld(t *testing.T) (*googlefake.Server, *model) {
	t.Helper()
	fake := fmtest.StartGoogle(t)
	for _, u := range []string{e2eStorage, "alice@example.com", "bob@example.com", "carol@example.com"} {
		fake.AddUser(u)
	}
	m := newModel(fake, "Engineering")
	m.share(m.root, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: "alice@example.com"})
	handbook := m.add(m.root, "Handbook")
	m.share(handbook, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: "bob@example.com"})
	for i := range 20 {
		m.add(handbook, fmt.Sprintf("Chapter %02d", i))
	}
	for i := range 25 {
		p := m.add(m.root, fmt.Sprintf("Project %02d", i))
		for j := range 57 {
			m.add(p, fmt.Sprintf("Work package %02d of project %02d", j, i))
		}
	}
	return fake, m
}

// unreadRequest asks for operation 3 on a connection of its own with a
// small receive window, reads the status line, and reads nothing more.
func unreadRequest(t *testing.T, addr, token string) (int, net.Conn) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Error(err)
		return 0, nil
	}
	_ = conn.(*net.TCPConn).SetReadBuffer(4 << 10)
	fmt.Fprintf(conn, "GET /folder/v1/libraries/eng/folders HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", token)
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
	line, err := bufio.NewReaderSize(conn, 64).ReadString('\n')
	if err != nil {
		t.Errorf("status line: %v", err)
		return 0, conn
	}
	var proto string
	var code int
	fmt.Sscanf(line, "%s %d", &proto, &code)
	return code, conn
}

// memory is what the daemon holds: its RSS, the kernel's memory for its
// API sockets, and the machine's TCP memory, in bytes.
type memory struct{ rss, sockets, tcp int64 }

func daemonMemory(t *testing.T, p *process, apiAddr string) memory {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	var m memory
	if f := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(status); f != nil {
		kb, _ := strconv.ParseInt(string(f[1]), 10, 64)
		m.rss = kb << 10
	}
	m.sockets = socketMemory(t, apiAddr)
	if stat, err := os.ReadFile("/proc/net/sockstat"); err == nil {
		if f := regexp.MustCompile(`TCP: .* mem (\d+)`).FindSubmatch(stat); f != nil {
			pages, _ := strconv.ParseInt(string(f[1]), 10, 64)
			m.tcp = pages * int64(os.Getpagesize())
		}
	}
	return m
}

// skmem are the memory figures ss gives of a socket: what its receive and
// send queues hold, what it reserved ahead, its options.
var skmem = regexp.MustCompile(`skmem:\(r(\d+),rb\d+,t\d+,tb\d+,f(\d+),w(\d+),o(\d+)`)

// socketMemory sums the kernel's memory of the sockets whose local address
// is addr (the daemon's side of its API connections), from ss.
func socketMemory(t *testing.T, addr string) int64 {
	t.Helper()
	u, err := url.Parse("tcp://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ss", "-tmnH", "state", "all", "sport = :"+u.Port()).Output()
	if err != nil {
		t.Fatalf("ss (iproute2), to read the sockets' memory: %v", err)
	}
	var sum int64
	for _, f := range skmem.FindAllSubmatch(out, -1) {
		for _, n := range f[1:] {
			v, _ := strconv.ParseInt(string(n), 10, 64)
			sum += v
		}
	}
	return sum
}
