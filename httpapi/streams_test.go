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
	"github.com/foldermirror/foldermirror/internal/wait"
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
	opts.Libraries = fm.NewLibrarySet([]fm.Library{{ID: "big", Name: "Big", Domain: "example.com", RootFolderID: "root"}})
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
// the status and headers, and leaves the body unread; it returns the
// response (its body unread) and the connection.
func slowRequest(t *testing.T, addr, caller string) (*http.Response, net.Conn) {
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
	return resp, conn
}

// answeredRequest sends operation 3 as caller as slowRequest does, fails
// the test (saying what the request was) unless it is answered 200, and
// closes the connection when the test ends.
func answeredRequest(t *testing.T, addr, caller, what string) *http.Response {
	t.Helper()
	resp, conn := slowRequest(t, addr, caller)
	t.Cleanup(func() { conn.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d, want 200", what, resp.StatusCode)
	}
	return resp
}

// requestStatus sends operation 3 as caller on a connection of its own,
// which it closes at once, and returns the answer's status.
func requestStatus(t *testing.T, addr, caller string) int {
	t.Helper()
	resp, conn := slowRequest(t, addr, caller)
	conn.Close()
	return resp.StatusCode
}

// 100 slow readers, ten from each of ten callers: each caller is answered
// at most CallerConcurrent at once, the others refused at once with
// Retry-After; another caller is served meanwhile; when the readers go,
// their slots are released, and each caller is served again.
func TestSlowReadersHoldTheirCallersSlots(t *testing.T) {
	const perCaller = 3
	addr, s := bigServer(t, 3_000, Options{CallerConcurrent: perCaller})
	var mu sync.Mutex
	statuses := map[string]map[int]int{}
	var conns []net.Conn
	var wg sync.WaitGroup
	for c := range 10 {
		caller := fmt.Sprintf("caller%d", c)
		statuses[caller] = map[int]int{}
		for range 10 {
			wg.Go(func() {
				resp, conn := slowRequest(t, addr, caller)
				mu.Lock()
				defer mu.Unlock()
				statuses[caller][resp.StatusCode]++
				conns = append(conns, conn)
				if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
					t.Error("a refused request has no Retry-After")
				}
			})
		}
	}
	wait.Group(t, &wg, "the slow readers' answers")
	for caller, st := range statuses {
		if st[http.StatusOK] != perCaller || st[http.StatusTooManyRequests] != 10-perCaller {
			t.Errorf("%s: statuses %v, want %d answered and %d refused", caller, st, perCaller, 10-perCaller)
		}
	}
	if n := testutil.ToFloat64(s.metrics.answersInFlight); n != 10*perCaller {
		t.Errorf("%v answers in flight, want %d", n, 10*perCaller)
	}
	if body := readAll(t, addr, "another"); !strings.HasSuffix(body, `],"kind":"service#folderList"}`) {
		t.Errorf("another caller, meanwhile: %d bytes", len(body))
	}
	for _, c := range conns {
		c.Close()
	}
	waitForSlots(t, s)
	for c := range 10 {
		if status := requestStatus(t, addr, fmt.Sprintf("caller%d", c)); status != http.StatusOK {
			t.Errorf("caller%d after the readers went: %d", c, status)
		}
	}
}

// An answer that fits in the kernel's buffers holds its slot until its
// reader has taken it, not merely until it was written: else a caller's
// slow readers, one after the other, would fill the kernel's memory.
func TestSlotHeldUntilTheAnswerLeaves(t *testing.T) {
	addr, s := bigServer(t, 120, Options{CallerConcurrent: 1})
	resp := answeredRequest(t, addr, "reader", "first request")
	// The whole answer (about 40 KB) is written, into the kernel's buffers;
	// its reader has read nothing.
	waitForAnswered(t, s, 1)
	if status := requestStatus(t, addr, "reader"); status != http.StatusTooManyRequests {
		t.Errorf("a second request while the first answer waits in the kernel: %d, want 429", status)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil || !strings.HasSuffix(string(body), `],"kind":"service#folderList"}`) {
		t.Fatalf("first answer: %d bytes, %v", len(body), err)
	}
	waitForSlots(t, s)
	if status := requestStatus(t, addr, "reader"); status != http.StatusOK {
		t.Errorf("once the first answer was read: %d, want 200", status)
	}
	// Answers read as they come hold no slot past their reading, though
	// their last bytes may wait for an acknowledgement.
	waitForSlots(t, s)
	for i := range 50 {
		if body := readAll(t, addr, "reader"); len(body) < 30_000 {
			t.Fatalf("request %d in a row: %d bytes", i, len(body))
		}
	}
}

// A client that has read its answer whole and sends its next request on a
// new connection (Go's does, when the old one is not yet back for reuse)
// is served, though the poll of the send queues has not looked since: a
// caller is refused for answers still on their way only.
func TestAnswerReadFreesItsSlotForANewConnection(t *testing.T) {
	addr, s := bigServer(t, 120, Options{CallerConcurrent: 1})
	s.slots.pollEvery = time.Hour // the poll never looks during the test
	resp := answeredRequest(t, addr, "reader", "first request")
	if body, err := io.ReadAll(resp.Body); err != nil || !strings.HasSuffix(string(body), `],"kind":"service#folderList"}`) {
		t.Fatalf("first answer: %d bytes, %v", len(body), err)
	}
	if n := testutil.ToFloat64(s.metrics.answersInFlight); n != 1 {
		t.Fatalf("the first answer read, its connection open: %v slots taken, want 1 (left to the poll)", n)
	}
	answeredRequest(t, addr, "reader", "the next request, on a new connection")
	waitForAnswered(t, s, 2)
	// An answer still on its way keeps its slot: the second one, unread.
	if status := requestStatus(t, addr, "reader"); status != http.StatusTooManyRequests {
		t.Errorf("a third request while the second answer waits in the kernel: %d, want 429", status)
	}
}

// A reader that takes nothing of an answer in the kernel's buffers for
// StreamChunkTimeout loses its connection, and its caller the slot.
func TestUnreadAnswerClosedAfterChunkTimeout(t *testing.T) {
	addr, s := bigServer(t, 120, Options{StreamChunkTimeout: 300 * time.Millisecond})
	resp := answeredRequest(t, addr, "reader", "the request")
	waitForAnswered(t, s, 1)
	if n := testutil.ToFloat64(s.metrics.answersInFlight); n != 1 {
		t.Errorf("the answer written, its reader reading nothing: %v slots taken, want 1", n)
	}
	waitForSlots(t, s)
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Error("the answer was read whole from a connection the server closed")
	}
}

// readAll reads operation 3 whole as caller.
func readAll(t *testing.T, addr, caller string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/folder/v1/libraries/big/folders", nil)
	req.Header.Set("Authorization", "Bearer "+caller)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d, %v", caller, resp.StatusCode, err)
	}
	return string(body)
}

// waitForAnswered waits until operation 3 has been answered n times (its
// handler returned: the answer was written, read or not).
func waitForAnswered(t *testing.T, s *Server, n int) {
	t.Helper()
	done := s.metrics.requests.WithLabelValues("/folder/v1/libraries/:libraryId/folders", "200")
	wait.Until(t, fmt.Sprintf("%d answers written", n), func() bool { return testutil.ToFloat64(done) == float64(n) })
}

// waitForSlots waits until no request holds a slot.
func waitForSlots(t *testing.T, s *Server) {
	t.Helper()
	wait.Until(t, "every slot released", func() bool { return testutil.ToFloat64(s.metrics.answersInFlight) == 0 })
}

// waitForStreams waits until no stream is under way.
func waitForStreams(t *testing.T, s *Server) {
	t.Helper()
	wait.Until(t, "every stream ended", func() bool { return testutil.ToFloat64(s.metrics.streams) == 0 })
}

// A reader too slow to take its answer by the deadline has its connection
// cut there, and the stream's memory goes with it.
func TestStreamDeadline(t *testing.T) {
	const deadline = 500 * time.Millisecond
	addr, s := bigServer(t, 3_000, Options{StreamDeadline: deadline})
	var wg, started sync.WaitGroup
	stop := make(chan struct{})
	started.Add(5)
	for c := range 5 {
		wg.Go(func() {
			resp, conn := slowRequest(t, addr, fmt.Sprintf("reader%d", c))
			started.Done()
			defer conn.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("reader%d: %d", c, resp.StatusCode)
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
	wait.Group(t, &started, "the readers' answers")
	waitForStreams(t, s)
	close(stop)
	// Read at this pace, the answer would take minutes: the streams ended
	// because the deadline cut them, as the metric counts (a bound on the
	// wall time said the same, and failed on a loaded machine).
	if n := testutil.ToFloat64(s.metrics.streamsCut); n != 5 {
		t.Errorf("%v streams cut at their deadline, want 5", n)
	}
	wait.Group(t, &wg, "the readers' end")
}

// A reader that keeps up gets the whole answer, streamed.
func TestStreamedAnswerIsWhole(t *testing.T) {
	addr, _ := bigServer(t, 3_000, Options{})
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
	if n := strings.Count(string(body), `"kind":"service#folder",`); n != 3_001 {
		t.Errorf("%d folders streamed, want 3,001", n)
	}
}
