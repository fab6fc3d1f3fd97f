// Package syncer reads libraries from Google Drive, acting as each library's
// storage account, and writes them into the index.
package syncer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/config"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/oauth2"
	"golang.org/x/time/rate"
	admin "google.golang.org/api/admin/directory/v1"
	drive "google.golang.org/api/drive/v3"
	"google.golang.org/api/option"
)

// Index is what the syncer needs of an index: its leases too, under which
// the syncer writes each job (see Run).
type Index interface {
	fm.IndexReader
	fm.IndexWriter
	fm.Leases
	// Folder returns one folder of a library; ENOTFOUND if none such.
	Folder(ctx context.Context, libraryID, folderID string) (*fm.Folder, error)
	// Permissions returns a folder's permissions in Drive's order.
	Permissions(ctx context.Context, libraryID, folderID string) ([]fm.Permission, error)
	ReplaceDirectory(ctx context.Context, snap *fm.DirectorySnapshot, fence fm.Fence) error
}

// Options tune a Syncer; the zero value is usable.
type Options struct {
	Logger *slog.Logger
	Retry  RetryPolicy
	// TryTimeout bounds one try of one call, body included.
	TryTimeout time.Duration
	// Now is the clock; time.Now by default.
	Now func() time.Time
	// Metrics records what the syncer does; unregistered ones by default.
	Metrics *Metrics
}

// Syncer syncs the configured libraries. It is safe for concurrent use; a
// library must not be synced twice at the same time (the scheduler sees to it).
type Syncer struct {
	cfg    *config.Config
	index  Index
	creds  *credentials
	opts   Options
	logger *slog.Logger
	base   http.RoundTripper

	mu          sync.Mutex
	limiters    map[string]*rate.Limiter  // by acting user
	drives      map[string]*drive.Service // by acting user
	directories map[string]*admin.Service // by acting user
}

// New returns a Syncer for cfg's libraries writing into idx.
func New(cfg *config.Config, idx Index, opts Options) (*Syncer, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Retry.Attempts == 0 {
		opts.Retry = DefaultRetryPolicy
	}
	if opts.TryTimeout == 0 {
		opts.TryTimeout = 2 * time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(prometheus.NewRegistry())
	}
	s := &Syncer{cfg: cfg, index: idx, opts: opts, logger: opts.Logger,
		limiters: map[string]*rate.Limiter{}, drives: map[string]*drive.Service{}, directories: map[string]*admin.Service{}}
	s.base = &timeoutTransport{base: http.DefaultTransport, timeout: opts.TryTimeout}
	if cfg.Storage.CredentialsFile != "" {
		tokenClient := &http.Client{Transport: s.newTransport(rate.NewLimiter(rate.Inf, 1))}
		creds, err := loadCredentials(cfg.Storage.CredentialsFile, tokenClient)
		if err != nil {
			return nil, err
		}
		s.creds = creds
	}
	return s, nil
}

func (s *Syncer) newTransport(limiter *rate.Limiter) *transport {
	return &transport{base: s.base, limiter: limiter, policy: s.opts.Retry, metrics: s.opts.Metrics}
}

// limiterFor returns the rate limit of an acting user, shared by all its
// clients. Call with s.mu held.
func (s *Syncer) limiterFor(user string) *rate.Limiter {
	l, ok := s.limiters[user]
	if !ok {
		rps := s.cfg.Storage.RequestsPerSecond
		l = rate.NewLimiter(rate.Limit(rps), max(1, int(rps)))
		s.limiters[user] = l
	}
	return l
}

// httpClient returns a new HTTP client acting as user with scopes, within
// the user's rate limit. Call with s.mu held; driveFor and directoryFor keep
// the services built on it.
func (s *Syncer) httpClient(user string, scopes ...string) (*http.Client, error) {
	if s.creds == nil {
		return nil, errors.New("storage.credentialsFile is not set")
	}
	ts, err := s.creds.tokenSource(user, scopes...)
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: &oauth2.Transport{
		Source: ts,
		Base:   s.newTransport(s.limiterFor(user)),
	}}, nil
}

// driveFor returns the Drive client acting as user.
func (s *Syncer) driveFor(user string) (*drive.Service, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if svc, ok := s.drives[user]; ok {
		return svc, nil
	}
	c, err := s.httpClient(user, drive.DriveMetadataReadonlyScope)
	if err != nil {
		return nil, err
	}
	svc, err := drive.NewService(context.Background(), clientOptions(c, s.cfg.Storage.Endpoint)...)
	if err != nil {
		return nil, fmt.Errorf("drive client for %s: %w", user, err)
	}
	s.drives[user] = svc
	return svc, nil
}

// directoryFor returns the Directory client acting as the admin user.
func (s *Syncer) directoryFor(user string) (*admin.Service, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if svc, ok := s.directories[user]; ok {
		return svc, nil
	}
	c, err := s.httpClient(user, admin.AdminDirectoryUserReadonlyScope, admin.AdminDirectoryGroupReadonlyScope,
		admin.AdminDirectoryGroupMemberReadonlyScope)
	if err != nil {
		return nil, err
	}
	svc, err := admin.NewService(context.Background(), clientOptions(c, s.cfg.Storage.DirectoryEndpoint)...)
	if err != nil {
		return nil, fmt.Errorf("directory client for %s: %w", user, err)
	}
	s.directories[user] = svc
	return svc, nil
}

func clientOptions(c *http.Client, endpoint string) []option.ClientOption {
	opts := []option.ClientOption{option.WithHTTPClient(c), option.WithUserAgent("foldermirror")}
	if endpoint != "" {
		opts = append(opts, option.WithEndpoint(endpoint))
	}
	return opts
}

// Progress reports how far a sync has come.
type Progress struct {
	Library string
	// Phase is "listing", "changes", "permissions", "writing" or "done".
	Phase string
	// Done and Total count folders (changes while reading changes): those
	// listed, whose permissions are read, written. Total is 0 while unknown.
	Done  int
	Total int
}

// ProgressFunc receives progress reports; it must not block for long.
type ProgressFunc func(Progress)

// Result tells what a sync did.
type Result struct {
	Library string
	Full    bool
	// FullReason says why a full sync read the whole library ("" for an
	// incremental one).
	FullReason FullReason
	// Folders and Permissions are the library's, after the sync.
	Folders     int
	Permissions int
	// Drift is what a full sync found different from the index.
	Drift fm.Drift
	// Changes is the number of changes an incremental sync read, Applied
	// the number of folders it wrote or removed.
	Changes, Applied int
	// Inherited is the number of folders an incremental sync wrote,
	// although Drive sent no change for them, because their parent's list
	// changed (they are in Applied too).
	Inherited int
	// Reread is the number of folders an incremental sync read from Drive
	// although Drive sent no change for them: because Drive's answers do
	// not tell how their lists follow their parent's (see
	// fm.InheritPermissions), or, for a My Drive library's root, because a
	// folder outside the library changed (it may be an ancestor).
	Reread int
	// Calls is the number of Drive requests sent, retries included.
	Calls    int64
	Duration time.Duration
}

// FullReason says why a sync read the whole library rather than the
// changes since the last one.
type FullReason string

// Why a sync is a full one.
const (
	// FullFirst: the library was never synced.
	FullFirst FullReason = "first sync"
	// FullAsked: a full sync was asked (foldermirror sync --full, the
	// admin listener's sync?full=true).
	FullAsked FullReason = "asked"
	// FullScheduled: the full schedule (schedule.full) ran it.
	FullScheduled FullReason = "scheduled"
	// FullTokenRefused: Drive no longer accepts the saved changes token.
	FullTokenRefused FullReason = "Drive refused the saved changes token"
	// FullNoToken: the index holds no changes token for the library.
	FullNoToken FullReason = "no changes token saved"
)

// Mode says how a sync reads Drive.
type Mode int

// Sync modes.
const (
	// Auto reads changes when the library has a changes token, all else.
	Auto Mode = iota
	// Full reads the whole tree.
	Full
)

// Sync brings one library up to date with Drive. The tree readers see
// changes only when the sync succeeds, and then all at once.
func (s *Syncer) Sync(ctx context.Context, libraryID string, mode Mode, progress ProgressFunc) (*Result, error) {
	configured := s.cfg.Library(libraryID)
	if configured == nil {
		return nil, fm.Errorf(fm.ENOTFOUND, "Library %s is not configured.", libraryID)
	}
	lib := new(configured.Core())
	if progress == nil {
		progress = func(Progress) {}
	}
	var calls atomic.Int64
	ctx = withCallCounter(ctx, &calls)
	start := s.opts.Now()
	prev, err := s.index.Library(ctx, lib.ID)
	if err != nil && fm.ErrorCode(err) != fm.ENOTFOUND {
		return nil, err
	}
	var res *Result
	if why := fullReason(ctx, mode, prev); why != "" {
		res, err = s.fullSync(ctx, lib, prev, why, progress)
	} else {
		res, err = s.incrementalSync(ctx, lib, prev, progress)
		if errors.Is(err, errTokenRefused) {
			s.logger.Warn("Drive refused the saved changes token; syncing the whole library", "library", lib.ID, "err", err)
			res, err = s.fullSync(ctx, lib, prev, FullTokenRefused, progress)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("sync library %s: %w", libraryID, err)
	}
	res.Calls = calls.Load()
	res.Duration = s.opts.Now().Sub(start)
	progress(Progress{Library: libraryID, Phase: "done", Done: res.Folders, Total: res.Folders})
	s.logger.Info("library synced", "library", libraryID, "full", res.Full, "fullReason", res.FullReason, "folders", res.Folders,
		"permissions", res.Permissions, "drift", res.Drift.Total(), "changes", res.Changes, "applied", res.Applied,
		"inherited", res.Inherited, "reread", res.Reread,
		"driveCalls", res.Calls, "duration", res.Duration)
	return res, nil
}

// fullReason says why a sync of a library whose index state is prev (nil
// if never synced) must read the whole library, "" if it reads changes.
// The index's format is told by its schema version when it is opened,
// never guessed from its data here.
func fullReason(ctx context.Context, mode Mode, prev *fm.LibraryState) FullReason {
	switch {
	case prev == nil:
		return FullFirst
	case mode == Full && scheduledFull(ctx):
		return FullScheduled
	case mode == Full:
		return FullAsked
	case prev.StartPageToken == "":
		return FullNoToken
	}
	return ""
}

// scheduleKey marks the context of a run of the full schedule.
type scheduleKey struct{}

// withScheduledFull marks ctx as that of a run of the full schedule, so
// that a full sync says so.
func withScheduledFull(ctx context.Context) context.Context {
	return context.WithValue(ctx, scheduleKey{}, true)
}

// scheduledFull tells whether ctx is that of a run of the full schedule.
func scheduledFull(ctx context.Context) bool {
	on, _ := ctx.Value(scheduleKey{}).(bool)
	return on
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
