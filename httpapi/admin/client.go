package admin

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/schedule"
)

// The errors of Client, which its errors wrap.
var (
	// ErrNoDaemon: no foldermirror daemon answers at the address.
	ErrNoDaemon = errors.New("no foldermirror daemon answers")
	// ErrUnproven: what answers does not prove that it holds the token,
	// which is then not sent.
	ErrUnproven = errors.New("does not prove that it holds adminTokenFile's token: not sending it")
	// ErrNotReady: the daemon says it is not ready.
	ErrNotReady = errors.New("not ready")
	// ErrRefused: the daemon refused the request.
	ErrRefused = errors.New("the daemon refused")
)

// DirectClient asks admin listeners directly, never through a proxy of the
// environment, which would see the token.
var DirectClient = &http.Client{Transport: &http.Transport{Proxy: nil}}

// Client asks a daemon's admin listener, from the daemon's host (as
// foldermirror sync and healthcheck do). With a token, it sends the token
// only to a process that proved it holds it (see Proof): its first request
// that carries the token asks GET /healthz for the proof first, and a
// process of another user that bound adminListen while the daemon was down
// gets nothing.
type Client struct {
	base   string
	token  string
	http   *http.Client
	proved atomic.Bool
}

// NewClient returns a client of the admin listener at base (such as
// http://127.0.0.1:8081, see BaseURL) that sends token unless it is "",
// with hc, or DirectClient when hc is nil.
func NewClient(base, token string, hc *http.Client) *Client {
	if hc == nil {
		hc = DirectClient
	}
	return &Client{base: strings.TrimSuffix(base, "/"), token: token, http: hc}
}

// Base returns the admin listener's URL the client asks.
func (c *Client) Base() string { return c.base }

// BaseURL returns the URL by which this host reaches an admin listener on
// adminListen: a wildcard host is reached on loopback.
func BaseURL(adminListen string) (string, error) {
	host, port, err := net.SplitHostPort(adminListen)
	if err != nil || port == "0" {
		return "", fmt.Errorf("%q is not an address a client can reach (a host and a fixed port)", adminListen)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port), nil
}

// Health asks GET /healthz, with a fresh challenge, whether a foldermirror
// daemon answers (else an error wrapping ErrNoDaemon) and, with a token,
// whether it proves it holds the token (else an error wrapping
// ErrUnproven). It sends no token.
func (c *Client) Health(ctx context.Context) (*Health, error) {
	challenge := rand.Text()
	target := c.base + "/healthz?" + url.Values{ChallengeParam: {challenge}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, fmt.Errorf("%w at %s: %w", ErrNoDaemon, c.base, err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w at %s: %w", ErrNoDaemon, c.base, plainNetError(err))
	}
	defer resp.Body.Close()
	var health Health
	if err := decode(resp.Body, &health); err != nil || health.Service != Service {
		return nil, fmt.Errorf("%w at %s: it answered %s, not a foldermirror daemon's health", ErrNoDaemon, c.base, resp.Status)
	}
	if c.token == "" {
		return &health, nil
	}
	if !hmac.Equal([]byte(health.Proof), []byte(Proof(c.token, challenge))) {
		return nil, fmt.Errorf("the process answering on %s %w (does the daemon read another token file, or did another program bind adminListen?)",
			req.URL.Host, ErrUnproven)
	}
	c.proved.Store(true)
	return &health, nil
}

// Ready asks GET /readyz whether the daemon is ready: its answer, with an
// error wrapping ErrNotReady when it is not, or one wrapping ErrNoDaemon
// when nothing answers.
func (c *Client) Ready(ctx context.Context) (*Readiness, error) {
	target := c.base + "/readyz"
	req, err := c.request(ctx, http.MethodGet, target)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w at %s: %w", ErrNoDaemon, target, plainNetError(err))
	}
	defer resp.Body.Close()
	var answer Readiness
	if err := decode(resp.Body, &answer); err != nil || answer.Status == "" {
		return nil, fmt.Errorf("%s answered %s, not a foldermirror readiness (is it the admin listener?)", target, resp.Status)
	}
	if resp.StatusCode != http.StatusOK {
		return &answer, fmt.Errorf("%w (%s): %s", ErrNotReady, target, answer)
	}
	return &answer, nil
}

// Status asks GET /status for the status of the daemon's jobs, its index
// and its feeds.
func (c *Client) Status(ctx context.Context) (*Status, error) {
	req, err := c.request(ctx, http.MethodGet, c.base+"/status")
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("ask the daemon: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, refused(resp)
	}
	var st Status
	if err := decode(resp.Body, &st); err != nil {
		return nil, fmt.Errorf("the daemon's status: %w", err)
	}
	return &st, nil
}

// Sync asks the daemon to sync library ("" for every directory and
// library) in mode (fm.SyncFull, else incremental), joining a sync under
// way, and calls each with every event it streams, in order, until the
// syncs end. Its error says that the daemon refused, that the stream was
// cut, or that it ended without a job's final event (the daemon stopping);
// a job that failed is an event, not an error.
func (c *Client) Sync(ctx context.Context, library string, mode fm.SyncMode, each func(schedule.Event)) error {
	q := url.Values{"mode": {modeIncremental}}
	if mode == fm.SyncFull {
		q.Set("mode", modeFull)
	}
	if library != "" {
		q.Set("library", library)
	}
	req, err := c.request(ctx, http.MethodPost, c.base+"/sync?"+q.Encode())
	if err != nil {
		return err
	}
	req.Header.Set(RequestHeader, "foldermirror sync")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("ask the daemon: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return refused(resp)
	}
	return readEvents(resp.Body, each)
}

// readEvents calls each with every event of a sync's stream, JSON lines,
// and checks that it held a final one.
func readEvents(stream io.Reader, each func(schedule.Event)) error {
	finals := 0
	lines := bufio.NewScanner(stream)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	for lines.Scan() {
		var ev schedule.Event
		if err := json.Unmarshal(lines.Bytes(), &ev); err != nil {
			return fmt.Errorf("the daemon's answer: %w", err)
		}
		each(ev)
		if ev.Final() {
			finals++
		}
	}
	if err := lines.Err(); err != nil {
		return fmt.Errorf("the daemon's answer was cut: %w", err)
	}
	if finals == 0 {
		return errors.New("the daemon ended the sync without a result (is it shutting down?)")
	}
	return nil
}

// request returns a request to target that carries the token, once the
// daemon proved it holds it.
func (c *Client) request(ctx context.Context, method, target string) (*http.Request, error) {
	if c.token != "" && !c.proved.Load() {
		if _, err := c.Health(ctx); err != nil {
			return nil, err
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, target, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", target, err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

// refused returns the error of an answer other than 200: its status, and
// the daemon's reason (a Refusal's) or the start of its body.
func refused(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	reason := strings.TrimSpace(string(body))
	var r Refusal
	if json.Unmarshal(body, &r) == nil && r.Error != "" {
		reason = r.Error
	}
	return fmt.Errorf("%w: %s: %s", ErrRefused, resp.Status, reason)
}

// decode decodes a JSON answer of at most a MiB into v.
func decode(body io.Reader, v any) error {
	return json.NewDecoder(io.LimitReader(body, 1<<20)).Decode(v)
}

// noAnswerError is the cause of a request whose context ended before the
// daemon answered.
type noAnswerError struct{ cause error }

func (e noAnswerError) Error() string { return "no answer in time" }
func (e noAnswerError) Unwrap() error { return e.cause }

// plainNetError drops the method and URL that net/http puts in front of
// the cause of a failed request, and the operation in front of a network
// error's.
func plainNetError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return noAnswerError{cause: err}
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Err
	}
	return err
}
