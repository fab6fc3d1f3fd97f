// Package graceful keeps an http.Server's Shutdown from waiting on
// connections that have not sent a request.
//
// net/http's Shutdown waits until every connection is idle, and takes a
// connection that has not finished sending its first request (StateNew) for
// idle only once it is 5 s old: a client that opened a connection and sent
// nothing (Go's HTTP client leaves such connections behind) holds Shutdown
// up for 5 s, past a shorter deadline, which Shutdown then fails with. Yet
// net/http answers no HTTP/1 request it finishes reading once Shutdown
// began: such a connection is closed unanswered whatever comes on it, so
// Track closes it when Shutdown begins.
package graceful

import (
	"net"
	"net/http"
	"sync"
)

// Track makes srv's Shutdown close, as it begins, the connections that have
// not sent a whole request, as it closes idle ones: only requests in flight
// then hold it up. Call it before srv serves; it sets srv.ConnState (calling
// the one set before, if any) and registers a function on srv's Shutdown.
func Track(srv *http.Server) {
	t := &tracker{fresh: map[net.Conn]struct{}{}, next: srv.ConnState}
	srv.ConnState = t.connState
	srv.RegisterOnShutdown(t.shutdown)
}

// tracker knows srv's connections in StateNew.
type tracker struct {
	next func(net.Conn, http.ConnState)

	mu       sync.Mutex
	fresh    map[net.Conn]struct{}
	stopping bool // Shutdown began
}

// connState keeps the connections in StateNew; one accepted once Shutdown
// began is closed at once.
func (t *tracker) connState(c net.Conn, state http.ConnState) {
	t.mu.Lock()
	switch {
	case state == http.StateNew && t.stopping:
		c.Close()
	case state == http.StateNew:
		t.fresh[c] = struct{}{}
	default:
		delete(t.fresh, c)
	}
	t.mu.Unlock()
	if t.next != nil {
		t.next(c, state)
	}
}

// shutdown runs once Shutdown began (net/http calls it once the server is
// marked as shutting down and its listeners are closed): it closes the
// connections in StateNew.
func (t *tracker) shutdown() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopping = true
	for c := range t.fresh {
		c.Close()
		delete(t.fresh, c)
	}
}
