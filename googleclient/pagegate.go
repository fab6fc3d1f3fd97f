package googleclient

import (
	"context"
	"net/http"
	"sync/atomic"
)

// PageGate bounds how many pages of listings read ahead (WithReadAhead)
// are in use at once: a page decoded is several times its body's size, and
// listings side by side would otherwise hold one each. A listing's page
// waits for a slot once its body is in memory (the next page is already
// being read meanwhile), so that waiting for Drive takes no slot.
type PageGate struct{ slots chan struct{} }

// NewPageGate returns a gate of n slots (at least one).
func NewPageGate(n int) *PageGate { return &PageGate{slots: make(chan struct{}, max(n, 1))} }

// gateKey carries a listing's *gateTicket in its context.
type gateKey struct{}

// gateTicket is one listing's hold on a slot of its gate.
type gateTicket struct {
	gate *PageGate
	held atomic.Bool
}

// Hold returns a context under which each page a listing gets takes a slot
// of g, and the function that gives the page's slot back once the listing
// is done with the page. The listing must call it after each page, and
// when it ends; it does nothing when no slot is held.
func (g *PageGate) Hold(ctx context.Context) (context.Context, func()) {
	t := &gateTicket{gate: g}
	return context.WithValue(ctx, gateKey{}, t), t.release
}

func (t *gateTicket) release() {
	if t.held.Swap(false) {
		<-t.gate.slots
	}
}

// enterGate takes a slot for the page resp answered req, if req's listing
// holds a gate; it waits until one is free, or req is given up (then it
// closes resp's body and returns the error).
func enterGate(req *http.Request, resp *http.Response) error {
	t, ok := req.Context().Value(gateKey{}).(*gateTicket)
	if !ok {
		return nil
	}
	t.release() // a page the listing did not give back, if any
	select {
	case t.gate.slots <- struct{}{}:
		t.held.Store(true)
		return nil
	case <-req.Context().Done():
		resp.Body.Close()
		return req.Context().Err()
	}
}
