package googleclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
)

// A PageDecoder reads the body of a listing's page (a 200 answer of JSON)
// as its caller wants it, and returns what the client library is to decode
// in its place: a listing reads its pages faster than the library's
// generic decoding does. It checks that the body is valid JSON, in place of
// the transport (which checks every other body it reads in full, to retry
// one cut short): an error wrapping ErrInvalidJSON says it is not, and the
// page is read again. Another error leaves the body to the client library,
// once the transport has checked it.
type PageDecoder func(body []byte) (rest []byte, err error)

// ErrInvalidJSON is what a PageDecoder's error wraps when the body is not
// valid JSON.
var ErrInvalidJSON = errors.New("truncated or invalid JSON")

// pageDecoderKey carries a listing's PageDecoder in its context.
type pageDecoderKey struct{}

// WithPageDecoder returns a context under which each page of a listing, as
// it is handed to the client library, is read by decode first.
func WithPageDecoder(ctx context.Context, decode PageDecoder) context.Context {
	return context.WithValue(ctx, pageDecoderKey{}, decode)
}

// pageDecoderOf returns the page decoder of req's listing, if it has one.
func pageDecoderOf(req *http.Request) (PageDecoder, bool) {
	decode, ok := req.Context().Value(pageDecoderKey{}).(PageDecoder)
	return decode, ok
}

// decodePage has req's page decoder, if it holds one, read the page that
// resp answered with body, and gives resp what the decoder left; it returns
// the body resp now has. A body that is not valid JSON is an error wrapping
// ErrInvalidJSON, left to the caller to retry.
func decodePage(req *http.Request, resp *http.Response, body []byte) ([]byte, error) {
	decode, ok := pageDecoderOf(req)
	if !ok || resp.StatusCode != http.StatusOK || !isJSON(resp) {
		return body, nil
	}
	rest, err := decode(body)
	switch {
	case errors.Is(err, ErrInvalidJSON):
		return nil, err
	case err != nil:
		if !json.Valid(body) {
			return nil, ErrInvalidJSON
		}
		return body, nil // the client library's to read
	}
	resp.Body = io.NopCloser(bytes.NewReader(rest))
	resp.ContentLength = int64(len(rest))
	recycleBody(body) // nothing holds it now: the decoder keeps nothing of it
	return rest, nil
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
