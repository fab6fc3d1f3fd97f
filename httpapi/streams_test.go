package httpapi

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/httpapi/auth"
	"github.com/foldermirror/foldermirror/index/indextest"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// nameAuth authenticates "Bearer NAME" as NAME@example.com.
type nameAuth struct{}

func (nameAuth) Authenticate(r *http.Request) (*auth.Identity, error) {
	name, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return nil, fm.Errorf(fm.ENOCREDENTIALS, "Login Required.")
	}
	return &auth.Identity{Email: name + "@example.com", Domain: "example.com", OrgDomain: "example.com", Method: auth.MethodGoogleIDToken}, nil
}

// bigServer serves a library of n folders all of example.com may list,
// whose operation 3 answer is far longer than one sent whole, on loopback.
func bigServer(t *testing.T, n int, opts Options) (addr string, s *Server) {
	t.Helper()
	db := fmtest.OpenBolt(t, t.TempDir())
	domain := []fm.Permission{{ID: "d", Type: "domain", Role: "reader", Domain: "example.com", AllowFileDiscovery: true}}
	folders := []fm.SyncedFolder{{Folder: fm.Folder{ID: "root", Name: "Big"}, Permissions: domain}}
	for i := range n {
		folders = append(folders, fm.SyncedFolder{Folder: fm.Folder{ID: fmt.Sprintf("f%06d", i), ParentID: "root",
			Name: fmt.Sprintf("A folder with a name of some length %d", i)}, Permissions: domain})
	}
	indextest.FullSync(t, db, "big", fm.LibraryState{RootID: "root"}, 5000, folders...)
	opts.Libraries = []fm.Library{{ID: "big", Name: "Big", Domain: "example.com", RootFolderID: "root"}}
	opts.Domains = []Domain{{Name: "example.com"}}
	opts.CallerRequestsPerSecond, opts.CallerBurst = 1e6, 1e6
	opts.Logger = slog.New(slog.DiscardHandler)
	opts.Metrics = NewMetrics(prometheus.NewRegistry())
	s = New(db, nameAuth{}, opts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() { s.http.Close() })
	return ln.Addr().String(), s
}

// slowRequest sends operation 3 as caller on a connection of its own, reads
// the status and headers, and leaves the body unread; it returns the status
// and the connection.
func slowRequest(t *testing.T, addr, caller string) (int, http.Header, net.Conn) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	// A small receive window: the server's writes stall as soon as it has
	// filled its own buffers.
	if err := conn.(*net.TCPConn).SetReadBuffer(4 << 10); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "GET /folder/v1/libraries/big/folders HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", caller)
	resp, err := http.ReadResponse(bufio.NewReaderSize(conn, 512), nil)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, conn
}

// 100 slow readers, ten from each of ten callers: each caller gets at most
// its streams, the others are refused at once; when the readers go, their
// streams end, and each caller is served again.
func TestSlowReadersAreBounded(t *testing.T) {
	const perCaller = 3
	addr, s := bigServer(t, 30_000, Options{StreamsPerCaller: perCaller})
	var mu sync.Mutex
	statuses := map[string]map[int]int{}
	var conns []net.Conn
	var wg sync.WaitGroup
	for c := range 10 {
		caller := fmt.Sprintf("caller%d", c)
		statuses[caller] = map[int]int{}
		for range 10 {
			wg.Go(func() {
				code, h, conn := slowRequest(t, addr, caller)
				mu.Lock()
				defer mu.Unlock()
				statuses[caller][code]++
				conns = append(conns, conn)
				if code == http.StatusTooManyRequests && h.Get("Retry-After") == "" {
					t.Error("a refused stream has no Retry-After")
				}
			})
		}
	}
	wg.Wait()
	for caller, st := range statuses {
		if st[http.StatusOK] != perCaller || st[http.StatusTooManyRequests] != 10-perCaller {
			t.Errorf("%s: statuses %v, want %d streams and %d refused", caller, st, perCaller, 10-perCaller)
		}
	}
	if n := testutil.ToFloat64(s.metrics.streams); n != 10*perCaller {
		t.Errorf("%v streams under way, want %d", n, 10*perCaller)
	}
	for _, c := range conns {
		c.Close()
	}
	waitForStreams(t, s)
	for c := range 10 {
		code, _, conn := slowRequest(t, addr, fmt.Sprintf("caller%d", c))
		conn.Close()
		if code != http.StatusOK {
			t.Errorf("caller%d after the readers went: %d", c, code)
		}
	}
}

// waitForStreams waits until no stream is under way.
func waitForStreams(t *testing.T, s *Server) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for testutil.ToFloat64(s.metrics.streams) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := testutil.ToFloat64(s.metrics.streams); n != 0 {
		t.Fatalf("%v streams still under way", n)
	}
}

// A reader too slow to take its answer by the deadline has its connection
// cut there, and the stream's memory goes with it.
func TestStreamDeadline(t *testing.T) {
	const deadline = 500 * time.Millisecond
	addr, s := bigServer(t, 30_000, Options{StreamDeadline: deadline})
	var wg, started sync.WaitGroup
	stop := make(chan struct{})
	started.Add(5)
	for c := range 5 {
		wg.Go(func() {
			code, _, conn := slowRequest(t, addr, fmt.Sprintf("reader%d", c))
			started.Done()
			defer conn.Close()
			if code != http.StatusOK {
				t.Errorf("reader%d: %d", c, code)
				return
			}
			// Read a little, slowly, until the server gives up.
			buf := make([]byte, 1024)
			for {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
				if _, err := conn.Read(buf); err != nil {
					return
				}
			}
		})
	}
	started.Wait()
	waitForStreams(t, s)
	close(stop)
	// Read at this pace, the answer would take minutes: the streams ended
	// because the deadline cut them, as the metric counts (a bound on the
	// wall time said the same, and failed on a loaded machine).
	if n := testutil.ToFloat64(s.metrics.streamsCut); n != 5 {
		t.Errorf("%v streams cut at their deadline, want 5", n)
	}
	wg.Wait()
}

// A reader that keeps up gets the whole answer, streamed.
func TestStreamedAnswerIsWhole(t *testing.T) {
	addr, _ := bigServer(t, 30_000, Options{})
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/folder/v1/libraries/big/folders", nil)
	req.Header.Set("Authorization", "Bearer reader")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.ContentLength != -1 || !strings.HasSuffix(string(body), `],"kind":"service#folderList"}`) {
		t.Errorf("streamed answer: %d bytes, length %d, %v", len(body), resp.ContentLength, err)
	}
	if n := strings.Count(string(body), `"kind":"service#folder",`); n != 30_001 {
		t.Errorf("%d folders streamed, want 30,001", n)
	}
}
