package googleclient

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sync"
)

// A listing's pages come one after the other: each names the next. The
// client library decodes a page before it asks for the next one, so the
// time Drive takes to answer adds to the time the page takes to decode. A
// listing that reads ahead asks for the next page as soon as a page arrives,
// while the page is decoded: the two overlap. It reads at most one page
// ahead, makes no call the listing would not make (but one, if the listing
// stops before its end), and stops with the listing.

// readAheadKey carries a listing's *readAhead in its context.
type readAheadKey struct{}

// readAhead is one listing's page read ahead, if any.
type readAhead struct {
	ctx    context.Context // the listing's, cancelled by stop
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu   sync.Mutex
	next *prefetch
}

// prefetch is a request for a next page and, once done, its outcome.
type prefetch struct {
	url  *url.URL
	done chan struct{}
	resp *http.Response
	body []byte
	err  error
}

// WithReadAhead returns a context under which a paged listing reads one page
// ahead, and the function that stops it, which the listing must call when
// it ends.
func WithReadAhead(ctx context.Context) (context.Context, func()) {
	ra := &readAhead{}
	ra.ctx, ra.cancel = context.WithCancel(ctx)
	return context.WithValue(ra.ctx, readAheadKey{}, ra), ra.stop
}

// stop cancels a page being read ahead and waits for it.
func (ra *readAhead) stop() {
	ra.cancel()
	ra.wg.Wait()
	ra.mu.Lock()
	defer ra.mu.Unlock()
	if p := ra.next; p != nil && p.resp != nil {
		p.resp.Body.Close()
	}
	ra.next = nil
}

// take returns the page read ahead for req, if it is the one read ahead
// (none for a request of no listing that reads ahead: ra nil).
func (ra *readAhead) take(req *http.Request) *prefetch {
	if ra == nil {
		return nil
	}
	ra.mu.Lock()
	defer ra.mu.Unlock()
	if p := ra.next; p != nil && sameRequest(p.url, req.URL) {
		ra.next = nil
		return p
	}
	return nil
}

// start reads ahead (unless ra is nil) the page after body, the page req asked for, if body
// names one.
func (ra *readAhead) start(t *transport, req *http.Request, body []byte) {
	if ra == nil {
		return
	}
	token := nextPageToken(body)
	if token == "" || ra.ctx.Err() != nil {
		return
	}
	ctx := ra.ctx
	if decode, ok := pageDecoderOf(req); ok {
		ctx = WithPageDecoder(ctx, decode) // the page read ahead is checked by it too
	}
	next := req.Clone(ctx)
	u := *req.URL
	q := u.Query()
	q.Set("pageToken", token)
	u.RawQuery = q.Encode()
	next.URL = &u
	p := &prefetch{url: &u, done: make(chan struct{})}
	ra.mu.Lock()
	ra.next = p
	ra.mu.Unlock()
	ra.wg.Go(func() {
		defer close(p.done)
		p.resp, p.body, p.err = t.send(next) //nolint:bodyclose // send reads and closes it (bufferBody)
	})
}

// wait waits for a page read ahead, or for ctx to end.
func (p *prefetch) wait(ctx context.Context) (*http.Response, []byte, error) {
	select {
	case <-p.done:
		return p.resp, p.body, p.err
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
}

// sameRequest tells whether two request URLs ask for the same thing,
// whatever the order of their query parameters.
func sameRequest(a, b *url.URL) bool {
	if a.Scheme != b.Scheme || a.Host != b.Host || a.Path != b.Path {
		return false
	}
	return maps.EqualFunc(a.Query(), b.Query(), slices.Equal[[]string])
}

// nextPageToken returns the nextPageToken of a page of a Google API list,
// "" if it has none. Google writes it before the list itself, so that it is
// found without reading the list.
func nextPageToken(body []byte) string {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return ""
		}
		if key == "nextPageToken" {
			var token string
			if dec.Decode(&token) != nil {
				return ""
			}
			return token
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return ""
		}
	}
	return ""
}

// readAheadOf returns the read-ahead of a listing's request, nil if none.
func readAheadOf(req *http.Request) *readAhead {
	ra, _ := req.Context().Value(readAheadKey{}).(*readAhead)
	return ra
}
