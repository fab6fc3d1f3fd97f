// Package googleclient makes the clients of Google's APIs foldermirror acts
// through: Drive's and the Directory's, each acting as a user (through
// domain-wide delegation with a service account's key, or as the user of an
// authorized_user key), within a rate limit per acting user, retried on
// transient failures, counted in metrics and per sync.
package googleclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/oauth2"
	"golang.org/x/time/rate"
	admin "google.golang.org/api/admin/directory/v1"
	drive "google.golang.org/api/drive/v3"
	"google.golang.org/api/option"
)

// Options say how to reach Google; the zero value but CredentialsFile is
// usable. Errors name the options by their configuration keys (storage.*).
type Options struct {
	// CredentialsFile is the Google key (storage.credentialsFile): a
	// service account's, or an authorized_user one. Without one, New
	// succeeds but no client can be made.
	CredentialsFile string
	// DriveEndpoint and DirectoryEndpoint, when set, replace Google's
	// (storage.endpoint, storage.directoryEndpoint).
	DriveEndpoint     string
	DirectoryEndpoint string
	// RequestsPerSecond bounds the requests of each acting user
	// (storage.requestsPerSecond), in bursts of as many.
	RequestsPerSecond float64
	// Retry is how calls are retried; DefaultRetryPolicy by default.
	Retry RetryPolicy
	// TryTimeout bounds one try of one call, body included; two minutes by
	// default.
	TryTimeout time.Duration
	// Metrics count the requests and retries; unregistered ones by default.
	Metrics *Metrics
}

// Clients makes and keeps the Drive and Directory clients of each acting
// user. It is safe for concurrent use.
type Clients struct {
	opts  Options
	creds *credentials
	base  http.RoundTripper

	mu          sync.Mutex
	limiters    map[string]*rate.Limiter  // by acting user
	drives      map[string]*drive.Service // by acting user
	directories map[string]*admin.Service // by acting user
}

// newHTTPTransport is http.DefaultTransport's like, for calls side by
// side to Google's few hosts: it keeps enough idle connections that calls
// in parallel (listings, permissions) do not open a connection each, and
// reads a response in large blocks (a page of folders is a megabyte).
func newHTTPTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = idleConnsPerHost
	t.ReadBufferSize = 64 << 10
	return t
}

// idleConnsPerHost is how many idle connections to a host are kept: more
// than the calls a sync makes at once (storage.concurrency listings, each
// with a page read ahead).
const idleConnsPerHost = 64

// New returns the clients opts describe, reading the key file if one is
// given.
func New(opts Options) (*Clients, error) {
	if opts.Retry.Attempts == 0 {
		opts.Retry = DefaultRetryPolicy
	}
	if opts.TryTimeout == 0 {
		opts.TryTimeout = 2 * time.Minute
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(prometheus.NewRegistry())
	}
	c := &Clients{opts: opts, limiters: map[string]*rate.Limiter{}, drives: map[string]*drive.Service{},
		directories: map[string]*admin.Service{}}
	c.base = &timeoutTransport{base: newHTTPTransport(), timeout: opts.TryTimeout}
	if opts.CredentialsFile != "" {
		tokenClient := &http.Client{Transport: c.newTransport(rate.NewLimiter(rate.Inf, 1))}
		creds, err := loadCredentials(opts.CredentialsFile, tokenClient)
		if err != nil {
			return nil, err
		}
		c.creds = creds
	}
	return c, nil
}

// AuthorizedUser tells whether the key is an authorized_user one, which acts
// as its own user rather than as the user each client is asked for.
func (c *Clients) AuthorizedUser() bool { return c.creds.authorizedUser() }

// CredentialsFile is the key file the clients act with, for messages.
func (c *Clients) CredentialsFile() string { return c.opts.CredentialsFile }

func (c *Clients) newTransport(limiter *rate.Limiter) *transport {
	return &transport{base: c.base, limiter: limiter, policy: c.opts.Retry, metrics: c.opts.Metrics}
}

// limiterFor returns the rate limit of an acting user, shared by all its
// clients. Call with c.mu held.
func (c *Clients) limiterFor(user string) *rate.Limiter {
	l, ok := c.limiters[user]
	if !ok {
		rps := c.opts.RequestsPerSecond
		l = rate.NewLimiter(rate.Limit(rps), max(1, int(rps)))
		c.limiters[user] = l
	}
	return l
}

// httpClient returns a new HTTP client acting as user with scopes, within
// the user's rate limit. Call with c.mu held; Drive and Directory keep the
// services built on it.
func (c *Clients) httpClient(user string, scopes ...string) (*http.Client, error) {
	if c.creds == nil {
		return nil, errors.New("storage.credentialsFile is not set")
	}
	ts, err := c.creds.tokenSource(user, scopes...)
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: &oauth2.Transport{
		Source: ts,
		Base:   c.newTransport(c.limiterFor(user)),
	}}, nil
}

// Drive returns the Drive client acting as user, with read access to its
// files (drive.readonly: the metadata scope does not cover drives.list nor
// drives.get, which shared drives need).
func (c *Clients) Drive(user string) (*drive.Service, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if svc, ok := c.drives[user]; ok {
		return svc, nil
	}
	hc, err := c.httpClient(user, drive.DriveReadonlyScope)
	if err != nil {
		return nil, err
	}
	svc, err := drive.NewService(context.Background(), clientOptions(hc, c.opts.DriveEndpoint)...)
	if err != nil {
		return nil, fmt.Errorf("drive client for %s: %w", user, err)
	}
	c.drives[user] = svc
	return svc, nil
}

// Directory returns the Directory client acting as user, an administrator,
// with read access to its domain's users, groups and members.
func (c *Clients) Directory(user string) (*admin.Service, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if svc, ok := c.directories[user]; ok {
		return svc, nil
	}
	hc, err := c.httpClient(user, admin.AdminDirectoryUserReadonlyScope, admin.AdminDirectoryGroupReadonlyScope,
		admin.AdminDirectoryGroupMemberReadonlyScope)
	if err != nil {
		return nil, err
	}
	svc, err := admin.NewService(context.Background(), clientOptions(hc, c.opts.DirectoryEndpoint)...)
	if err != nil {
		return nil, fmt.Errorf("directory client for %s: %w", user, err)
	}
	c.directories[user] = svc
	return svc, nil
}

func clientOptions(c *http.Client, endpoint string) []option.ClientOption {
	opts := []option.ClientOption{option.WithHTTPClient(c), option.WithUserAgent("foldermirror")}
	if endpoint != "" {
		opts = append(opts, option.WithEndpoint(endpoint))
	}
	return opts
}

// timeoutTransport bounds each try, body included (the retrying transport
// reads bodies in full before the try's context ends).
type timeoutTransport struct {
	base    http.RoundTripper
	timeout time.Duration
}

func (t *timeoutTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(req.Context(), t.timeout)
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}
