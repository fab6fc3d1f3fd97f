// Package syncer reads libraries from Google Drive, acting as each library's
// storage account, and writes them into the index.
package syncer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/googleclient"
	"github.com/prometheus/client_golang/prometheus"
	admin "google.golang.org/api/admin/directory/v1"
	drive "google.golang.org/api/drive/v3"
)

// Index is what the syncer needs of an index.
type Index interface {
	fm.IndexReader
	fm.IndexWriter
	// Folder returns one folder of a library; ENOTFOUND if none such.
	Folder(ctx context.Context, libraryID, folderID string) (*fm.Folder, error)
	// Permissions returns a folder's permissions in Drive's order.
	Permissions(ctx context.Context, libraryID, folderID string) ([]fm.Permission, error)
	ReplaceDirectory(ctx context.Context, snap *fm.DirectorySnapshot, fence fm.Fence) error
}

// Clients are the Google clients the syncer reads through
// (googleclient.Clients).
type Clients interface {
	// Drive returns the Drive client acting as user.
	Drive(user string) (*drive.Service, error)
	// Directory returns the Directory client acting as user.
	Directory(user string) (*admin.Service, error)
	// AuthorizedUser tells whether the key acts as its own user rather
	// than as the user asked for.
	AuthorizedUser() bool
	// CredentialsFile is the key file, for messages.
	CredentialsFile() string
}

// Domain is a domain whose directory the syncer may read.
type Domain struct {
	Name string
	// AdminEmail is the administrator the directory is read as; "" if the
	// domain has no directory to sync.
	AdminEmail string
}

// Options say what a Syncer syncs and how; the zero value syncs nothing.
type Options struct {
	// Libraries are the libraries the syncer syncs, as they are now (nil:
	// none).
	Libraries *fm.LibrarySet
	// Domains are the domains whose directories it syncs.
	Domains []Domain
	// Concurrency bounds the calls one sync makes in parallel
	// (storage.concurrency).
	Concurrency int
	Logger      *slog.Logger
	// Now is the clock; time.Now by default.
	Now func() time.Time
	// Metrics records what the syncer does; unregistered ones by default.
	Metrics *Metrics
}

// Syncer syncs the configured libraries. It is safe for concurrent use; a
// library must not be synced twice at the same time (the scheduler sees to it).
type Syncer struct {
	index   Index
	clients Clients
	opts    Options
	logger  *slog.Logger
}

// New returns a Syncer of opts' libraries and domains, reading Google
// through clients and writing into idx.
func New(idx Index, clients Clients, opts Options) *Syncer {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(prometheus.NewRegistry())
	}
	return &Syncer{index: idx, clients: clients, opts: opts, logger: opts.Logger}
}

// library returns the library of that ID, nil if none.
func (s *Syncer) library(id string) *fm.Library {
	if s.opts.Libraries == nil {
		return nil
	}
	if l, ok := s.opts.Libraries.Library(id); ok {
		return &l
	}
	return nil
}

// domain returns the domain of that name, compared without regard to case,
// nil if none.
func (s *Syncer) domain(name string) *Domain {
	for i := range s.opts.Domains {
		if strings.EqualFold(s.opts.Domains[i].Name, name) {
			return &s.opts.Domains[i]
		}
	}
	return nil
}

// Sync brings one library up to date with Drive, writing under
// req.Fence. The tree readers see changes only when the sync succeeds, and
// then all at once.
func (s *Syncer) Sync(ctx context.Context, req fm.SyncRequest, progress fm.ProgressFunc) (*fm.SyncResult, error) {
	lib := s.library(req.Library)
	if lib == nil {
		return nil, fm.Errorf(fm.ENOTFOUND, "Library %s is not configured.", req.Library)
	}
	if progress == nil {
		progress = func(fm.Progress) {}
	}
	var calls atomic.Int64
	ctx = googleclient.WithCallCounter(ctx, &calls)
	start := s.opts.Now()
	prev, err := s.index.Library(ctx, lib.ID)
	if err != nil && fm.ErrorCode(err) != fm.ENOTFOUND {
		return nil, err
	}
	var res *fm.SyncResult
	if why := fullReason(req, prev); why != "" {
		res, err = s.fullSync(ctx, lib, prev, why, req.Fence, progress)
	} else {
		res, err = s.incrementalSync(ctx, lib, prev, req.Fence, progress)
		if errors.Is(err, errTokenRefused) {
			s.logger.Warn("Drive refused the saved changes token; syncing the whole library", "library", lib.ID, "err", err)
			res, err = s.fullSync(ctx, lib, prev, fm.FullTokenRefused, req.Fence, progress)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("sync library %s: %w", req.Library, err)
	}
	res.Calls = calls.Load()
	res.Duration = s.opts.Now().Sub(start)
	progress(fm.Progress{Library: req.Library, Phase: "done", Done: res.Folders, Total: res.Folders})
	s.logger.Info("library synced", "library", req.Library, "full", res.Full, "fullReason", res.FullReason, "folders", res.Folders,
		"permissions", res.Permissions, "drift", res.Drift.Total(), "changes", res.Changes, "applied", res.Applied,
		"inherited", res.Inherited, "reread", res.Reread,
		"driveCalls", res.Calls, "duration", res.Duration)
	return res, nil
}

// fullReason says why the sync req asks for, of a library whose index
// state is prev (nil if never synced), must read the whole library, "" if
// it reads changes. The index's format is told by its schema version when
// it is opened, never guessed from its data here.
func fullReason(req fm.SyncRequest, prev *fm.LibraryState) fm.FullReason {
	switch {
	case prev == nil:
		return fm.FullFirst
	case req.Mode == fm.SyncFull:
		return cmp.Or(req.FullReason, fm.FullAsked)
	case prev.StartPageToken == "":
		return fm.FullNoToken
	}
	return ""
}
