package googleclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	"google.golang.org/api/googleapi"
)

// RetryPolicy bounds how Drive and Directory calls are retried: truncated
// exponential backoff with full jitter, honouring Retry-After.
type RetryPolicy struct {
	// Attempts is the most tries a call gets, the first included.
	Attempts int
	// BaseDelay is the backoff before the second try; it doubles each time.
	BaseDelay time.Duration
	// MaxDelay caps any one wait, Retry-After included.
	MaxDelay time.Duration
}

// DefaultRetryPolicy is used where none is given.
var DefaultRetryPolicy = RetryPolicy{Attempts: 6, BaseDelay: 500 * time.Millisecond, MaxDelay: 30 * time.Second}

// maxBufferedBody bounds the response bodies the transport reads in full to
// find truncation; Drive's pages are far smaller.
const maxBufferedBody = 64 << 20

// transport sends Google API requests for one acting user: within the user's
// rate limit, retried on transient failures, counted per sync. Responses are
// read in full so that a body cut short is retried rather than misread.
type transport struct {
	base    http.RoundTripper
	limiter *rate.Limiter
	policy  RetryPolicy
	metrics *Metrics
	// bodySizes holds, by API method, the size of the last body read in
	// full (an *atomic.Int64): the next one, often a page like it, is read
	// into a buffer a little larger.
	bodySizes sync.Map
}

// counterKey carries a *atomic.Int64 that counts the calls made under a context.
type counterKey struct{}

// WithCallCounter returns a context under which every request sent, each
// retry and token request included, adds one to c: a sync counts its calls.
func WithCallCounter(ctx context.Context, c *atomic.Int64) context.Context {
	return context.WithValue(ctx, counterKey{}, c)
}

func countCall(ctx context.Context) {
	if c, ok := ctx.Value(counterKey{}).(*atomic.Int64); ok {
		c.Add(1)
	}
}

// RoundTrip implements http.RoundTripper. Only requests without a body, or
// with a replayable one (GetBody), are retried. A listing that reads ahead
// (WithReadAhead) gets its pages from the ones read ahead, each through
// its PageGate, if it holds one; one with a PageDecoder has its pages read
// by it first.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ra := readAheadOf(req)
	var resp *http.Response
	var body []byte
	var err error
	if p := ra.take(req); p != nil {
		resp, body, err = p.wait(req.Context())
	} else {
		resp, body, err = t.send(req)
	}
	for attempt := 1; err == nil && resp.StatusCode == http.StatusOK; attempt++ {
		// The next page is read once this one may be used: pages waiting
		// for the gate (when decoding them is the bottleneck) keep no
		// second page in memory.
		if err := enterGate(req, resp); err != nil {
			return nil, err
		}
		rest, derr := decodePage(req, resp, body)
		if derr == nil {
			ra.start(t, req, rest)
			break
		}
		// A page its decoder found cut short or invalid is read again, as
		// send retries any other body that is.
		if attempt >= t.policy.Attempts || req.Context().Err() != nil {
			return nil, fmt.Errorf("read response body: %w", derr)
		}
		t.metrics.retries.WithLabelValues(apiMethod(req)).Inc()
		if err := sleep(req.Context(), t.backoff(attempt)); err != nil {
			return nil, err
		}
		resp, body, err = t.send(req)
	}
	return resp, err
}

// send sends a request, retrying it while its failures are transient, and
// returns the answer with its body read in full.
func (t *transport) send(req *http.Request) (*http.Response, []byte, error) {
	ctx := req.Context()
	method := apiMethod(req)
	for attempt := 1; ; attempt++ {
		if err := t.limiter.Wait(ctx); err != nil {
			return nil, nil, err
		}
		countCall(ctx)
		try, err := cloneRequest(req)
		if err != nil {
			return nil, nil, err
		}
		resp, err := t.base.RoundTrip(try)
		var body []byte
		if err == nil {
			body, err = t.bufferBody(try, resp, method)
		}
		t.count(method, resp, err)
		wait, retry := t.shouldRetry(ctx, resp, body, err, attempt)
		if !retry && err != nil {
			return nil, nil, err
		}
		if !retry {
			return resp, body, nil
		}
		if resp != nil {
			resp.Body.Close()
		}
		t.metrics.retries.WithLabelValues(method).Inc()
		if err := sleep(ctx, wait); err != nil {
			return nil, nil, err
		}
	}
}

// count records one try in the metrics.
func (t *transport) count(method string, resp *http.Response, err error) {
	code := "error"
	if err == nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	t.metrics.requests.WithLabelValues(method, code).Inc()
}

func cloneRequest(req *http.Request) (*http.Request, error) {
	try := req.Clone(req.Context())
	if req.Body == nil || req.GetBody == nil {
		return try, nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	try.Body = body
	return try, nil
}

// bufferBody reads the whole body, so that a connection reset or a body
// shorter than announced shows as an error here, where it can be retried.
// It returns the body read, which resp.Body then replays; method is the
// API method it answers.
func (t *transport) bufferBody(req *http.Request, resp *http.Response, method string) ([]byte, error) {
	defer resp.Body.Close()
	last, _ := t.bodySizes.LoadOrStore(method, new(atomic.Int64))
	size := last.(*atomic.Int64).Load()
	size += size / 8
	if resp.ContentLength >= 0 {
		size = resp.ContentLength
	}
	buf := bytes.NewBuffer(bodyBuffer(int(min(size, maxBufferedBody)) + bytes.MinRead))
	if _, err := buf.ReadFrom(io.LimitReader(resp.Body, maxBufferedBody)); err != nil {
		return nil, fmt.Errorf("read response body: %w", err)
	}
	data := buf.Bytes()
	last.(*atomic.Int64).Store(int64(len(data)))
	if _, decoded := pageDecoderOf(req); !decoded && resp.StatusCode == http.StatusOK && isJSON(resp) && !json.Valid(data) {
		return nil, fmt.Errorf("read response body: %w", ErrInvalidJSON) // a listing's page decoder checks its own
	}
	resp.Body = io.NopCloser(bytes.NewReader(data))
	resp.ContentLength = int64(len(data))
	return data, nil
}

func isJSON(resp *http.Response) bool {
	return strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json")
}

// shouldRetry decides whether a try's outcome is transient and how long to
// wait before the next one; body is resp's, read in full.
func (t *transport) shouldRetry(ctx context.Context, resp *http.Response, body []byte, err error, attempt int) (time.Duration, bool) {
	if attempt >= t.policy.Attempts || ctx.Err() != nil {
		return 0, false
	}
	if err != nil {
		return t.backoff(attempt), true
	}
	if !retryableStatus(resp, body) {
		return 0, false
	}
	if d, ok := retryAfter(resp.Header.Get("Retry-After")); ok {
		return min(d, t.policy.MaxDelay), true
	}
	return t.backoff(attempt), true
}

func (t *transport) backoff(attempt int) time.Duration {
	ceiling := t.policy.BaseDelay << (attempt - 1)
	if ceiling <= 0 || ceiling > t.policy.MaxDelay {
		ceiling = t.policy.MaxDelay
	}
	return time.Duration(rand.Int64N(int64(ceiling) + 1))
}

// retryableStatus: 429, 5xx, and 403 whose reason is a rate limit.
func retryableStatus(resp *http.Response, body []byte) bool {
	switch {
	case resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode >= 500:
		return true
	case resp.StatusCode == http.StatusForbidden:
		return isRateLimitReason(resp, body)
	}
	return false
}

// isRateLimitReason tells whether a Google error body gives a rate limit as
// a reason.
func isRateLimitReason(resp *http.Response, body []byte) bool {
	var ge *googleapi.Error
	return errors.As(googleapi.CheckResponseWithBody(resp, body), &ge) && IsRateLimit(ge)
}

// IsRateLimit tells whether a Google error gives a rate limit as a reason:
// a 403 that is one is transient, any other 403 a refusal.
func IsRateLimit(ge *googleapi.Error) bool {
	return slices.ContainsFunc(ge.Errors, func(e googleapi.ErrorItem) bool {
		return e.Reason == "rateLimitExceeded" || e.Reason == "userRateLimitExceeded"
	})
}

// retryAfter parses a Retry-After header: seconds or an HTTP date.
func retryAfter(v string) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	if when, err := http.ParseTime(v); err == nil {
		return max(time.Until(when), 0), true
	}
	return 0, false
}

func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// cancelOnClose ends a try's context when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}
