package googleclient

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
)

// A PageDecoder reads the body of a listing's page (a 200 answer, its JSON
// valid) as its caller wants it, and returns what the client library is to
// decode in its place: a listing reads its pages faster than the library's
// generic decoding does. An error leaves the body to the client library.
type PageDecoder func(body []byte) (rest []byte, err error)

// pageDecoderKey carries a listing's PageDecoder in its context.
type pageDecoderKey struct{}

// WithPageDecoder returns a context under which each page of a listing, as
// it is handed to the client library, is read by decode first.
func WithPageDecoder(ctx context.Context, decode PageDecoder) context.Context {
	return context.WithValue(ctx, pageDecoderKey{}, decode)
}

// decodePage has req's page decoder, if it holds one, read the page that
// resp answered with body, and gives resp what the decoder left.
func decodePage(req *http.Request, resp *http.Response, body []byte) {
	decode, ok := req.Context().Value(pageDecoderKey{}).(PageDecoder)
	if !ok || resp.StatusCode != http.StatusOK || !isJSON(resp) {
		return
	}
	rest, err := decode(body)
	if err != nil {
		return
	}
	resp.Body = io.NopCloser(bytes.NewReader(rest))
	resp.ContentLength = int64(len(rest))
	recycleBody(body) // nothing holds it now: the decoder keeps nothing of it
}

// Bodies of pages read by a PageDecoder are used again for the bodies read
// after them: a listing's pages are megabytes each, which would otherwise
// be garbage as soon as decoded.
var bodies sync.Pool

// bodyBuffer returns an empty buffer with room for size bytes: one used
// before, if there is one large enough.
func bodyBuffer(size int) []byte {
	if b, ok := bodies.Get().(*[]byte); ok {
		if cap(*b) >= size {
			return (*b)[:0]
		}
		bodies.Put(b)
	}
	return make([]byte, 0, size)
}

// recycleBody gives a body's buffer back, for bodyBuffer.
func recycleBody(body []byte) {
	body = body[:0]
	bodies.Put(&body)
}
