package graceful_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/foldermirror/foldermirror/internal/graceful"
)

// pipeListener accepts the server ends of net.Pipe connections, so that a
// server in a synctest bubble runs on the bubble's clock. Accept returns a
// connection once gate is closed.
type pipeListener struct {
	conns  chan net.Conn
	gate   chan struct{}
	closed chan struct{}
	once   sync.Once
}

// newPipeListener returns a listener whose gate is open, or shut for
// gated.
func newPipeListener(gated bool) *pipeListener {
	l := &pipeListener{conns: make(chan net.Conn), gate: make(chan struct{}), closed: make(chan struct{})}
	if !gated {
		close(l.gate)
	}
	return l
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		<-l.gate
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// dial returns the client end of a connection Accept took.
func (l *pipeListener) dial() net.Conn {
	client, server := net.Pipe()
	l.conns <- server
	return client
}

// testServer serves "ok" on /, and on /hold says on handling that a
// request came, then answers "held" once release is closed.
type testServer struct {
	*http.Server
	ln       *pipeListener
	served   chan error
	handling chan struct{}
	release  chan struct{}
}

// startServer serves a tracked server on ln, in the bubble, until the test
// ends; configure, if not nil, sets the server up before Track.
func startServer(t *testing.T, ln *pipeListener, configure func(*http.Server)) *testServer {
	t.Helper()
	s := &testServer{ln: ln, served: make(chan error, 1), handling: make(chan struct{}, 1), release: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	mux.HandleFunc("/hold", func(w http.ResponseWriter, _ *http.Request) {
		s.handling <- struct{}{}
		<-s.release
		io.WriteString(w, "held")
	})
	s.Server = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	if configure != nil {
		configure(s.Server)
	}
	graceful.Track(s.Server)
	go func() { s.served <- s.Serve(s.ln) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-s.served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return s
}

// get sends a GET of path on conn.
func get(t *testing.T, conn net.Conn, path string) {
	t.Helper()
	if _, err := io.WriteString(conn, "GET "+path+" HTTP/1.1\r\nHost: example.com\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
}

// Shutdown does not wait on a connection that has not sent a whole
// request, nor fails for it; a request in flight is answered, and one still
// running at the deadline fails it.
func TestShutdown(t *testing.T) {
	const deadline = 2 * time.Second // the admin listener's
	tests := []struct {
		name string
		// open is what the client does on its connection before Shutdown.
		open func(t *testing.T, s *testServer, conn net.Conn)
		// releaseDuring: the request held is released while Shutdown
		// waits, not after it returned.
		releaseDuring bool
		want          error
		// answer is what the client reads after open: "" for the
		// connection closed unanswered.
		answer string
	}{
		{name: "a connection that sent nothing", open: func(*testing.T, *testServer, net.Conn) {}},
		{name: "a connection that sent half a request", open: func(t *testing.T, _ *testServer, conn net.Conn) {
			if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: exa"); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a connection idle after its request", open: func(t *testing.T, _ *testServer, conn net.Conn) {
			get(t, conn, "/")
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
		}},
		{name: "a request in flight answered before the deadline", open: holdRequest, releaseDuring: true, answer: "held"},
		{name: "a request in flight past the deadline", open: holdRequest, want: context.DeadlineExceeded, answer: "held"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := startServer(t, newPipeListener(false), nil)
				conn := s.ln.dial()
				defer conn.Close()
				tt.open(t, s, conn)
				read := make(chan string, 1)
				go func() {
					b, _ := io.ReadAll(conn)
					read <- string(b)
				}()
				synctest.Wait() // the server read what the client sent

				ctx, cancel := context.WithTimeout(t.Context(), deadline)
				defer cancel()
				done := make(chan error, 1)
				go func() { done <- s.Shutdown(ctx) }()
				synctest.Wait()
				if tt.releaseDuring {
					close(s.release)
				}
				err := <-done
				if !errors.Is(err, tt.want) { // for want nil: err nil
					t.Errorf("Shutdown: %v, want %v", err, tt.want)
				}
				if !tt.releaseDuring {
					close(s.release)
				}
				checkAnswer(t, <-read, tt.answer)
			})
		})
	}
}

// holdRequest sends a request to /hold and waits until its handler runs.
func holdRequest(t *testing.T, s *testServer, conn net.Conn) {
	t.Helper()
	get(t, conn, "/hold")
	<-s.handling
}

// checkAnswer fails the test unless the client read want's answer, a 200
// with the body want, or nothing, for want "".
func checkAnswer(t *testing.T, read, want string) {
	t.Helper()
	if want == "" {
		if read != "" {
			t.Errorf("the client read %q, want the connection closed unanswered", read)
		}
		return
	}
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(read)), nil)
	if err != nil {
		t.Fatalf("the client read %q: %v", read, err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || string(body) != want {
		t.Errorf("the client read %q (%v), want 200 %q", read, err, want)
	}
}

// Track keeps calling the ConnState the server had.
func TestTrackKeepsConnState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var states []http.ConnState
		s := startServer(t, newPipeListener(false), func(srv *http.Server) {
			srv.ConnState = func(_ net.Conn, state http.ConnState) { states = append(states, state) }
		})
		conn := s.ln.dial()
		get(t, conn, "/")
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		conn.Close()
		synctest.Wait()
		if want := []http.ConnState{http.StateNew, http.StateActive, http.StateIdle, http.StateClosed}; !slices.Equal(states, want) {
			t.Errorf("ConnState saw %v, want %v", states, want)
		}
	})
}

// A connection Accept returns once Shutdown began (it was taken from the
// listener's queue as the listener closed) is closed at once too.
func TestShutdownClosesAConnectionAcceptedAsItBegins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := startServer(t, newPipeListener(true), nil)
		dialed := make(chan net.Conn, 1)
		go func() { dialed <- s.ln.dial() }()
		synctest.Wait() // Accept took the connection, and waits at the gate

		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- s.Shutdown(ctx) }()
		synctest.Wait() // Shutdown began, and waits for Serve to return
		close(s.ln.gate)
		if err := <-done; err != nil {
			t.Errorf("Shutdown: %v, want <nil>", err)
		}
		conn := <-dialed
		defer conn.Close()
		if b, err := io.ReadAll(conn); len(b) > 0 || err != nil {
			t.Errorf("the client read %q, %v; want the connection closed unanswered", b, err)
		}
	})
}
