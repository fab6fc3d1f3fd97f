package syncer

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/googleclient"
	drive "google.golang.org/api/drive/v3"
	"google.golang.org/api/googleapi"
)

// errTokenRefused: Drive no longer accepts the saved changes token.
var errTokenRefused = errors.New("changes token refused")

const (
	changesPageSize = 1000
	changeFields    = "nextPageToken,newStartPageToken,changes(changeType,removed,fileId,driveId,file(" + fileFields + "),drive(" + driveFields + "))"
)

// incrementalSync reads the changes since the library's token and applies
// them, with the new token, in one transaction under fence.
func (s *Syncer) incrementalSync(ctx context.Context, lib *fm.Library, prev *fm.LibraryState, fence fm.Fence, progress fm.ProgressFunc) (*fm.SyncResult, error) {
	r, err := s.newReader(lib, progress)
	if err != nil {
		return nil, err
	}
	changes, token, err := r.readChanges(ctx, prev.StartPageToken)
	if err != nil {
		return nil, s.describe(err, lib)
	}
	p := &plan{reader: r, index: s.index, root: prev.RootID, staged: map[string]*node{}, removed: map[string]bool{},
		indexed: map[string]*fm.Folder{}, revision: prev.Revision}
	if err := p.make(ctx, changes); err != nil {
		return nil, s.describe(err, lib)
	}
	if err := r.readPermissions(ctx, p.order, prev.RootID); err != nil {
		return nil, s.describe(err, lib)
	}
	res := &fm.SyncResult{Library: lib.ID, Changes: len(changes)}
	if p.rootReread {
		res.Reread++
	}
	if err := s.applyPlan(ctx, lib, fence, p, token, res, progress); err != nil {
		return nil, err
	}
	r.odd.report(s.logger, lib.ID)
	return res, nil
}

// applyPlan applies the plan with the new token in one transaction under
// fence. When Drive must first tell the lists of some folders, the
// transaction is rolled back, those folders are read, and it runs again.
func (s *Syncer) applyPlan(ctx context.Context, lib *fm.Library, fence fm.Fence, p *plan, token string, res *fm.SyncResult, progress fm.ProgressFunc) error {
	now := s.opts.Now().UTC()
	for {
		progress(fm.Progress{Library: lib.ID, Phase: "writing", Total: len(p.order) + len(p.removed)})
		err := s.index.UpdateLibrary(ctx, lib.ID, fence, func(tx fm.LibraryTx) error {
			var err error
			if res.Applied, err = p.apply(tx, token, now); err != nil {
				return err
			}
			st := tx.State() // Put and Delete keep its counts current
			res.Folders, res.Permissions = st.Folders, st.Permissions
			return nil
		})
		var ask *askDrive
		if !errors.As(err, &ask) {
			res.Inherited = p.carried
			return err
		}
		s.logger.Info("reading folders again: Drive's answers do not tell how their permissions follow their parent's",
			"library", lib.ID, "folders", len(ask.ids))
		res.Reread += len(ask.ids)
		if err := p.reread(ctx, ask.ids); err != nil {
			return s.describe(err, lib)
		}
	}
}

// readChanges reads every change since token, and the token to read from
// next time.
func (r *reader) readChanges(ctx context.Context, token string) ([]*drive.Change, string, error) {
	read := newChangePages()
	ctx = googleclient.WithPageDecoder(ctx, read.decode)
	defer func() {
		if read.left > 0 {
			r.logger.Debug("pages of changes left to the client library's decoding", "library", r.lib.ID, "pages", read.left)
		}
	}()
	var changes []*drive.Change
	for {
		call := r.svc.Changes.List(token).PageSize(changesPageSize).IncludeRemoved(true).SupportsAllDrives(true).
			Fields(changeFields).Context(ctx)
		if r.lib.IsSharedDrive() {
			call = call.DriveId(r.lib.SharedDriveID).IncludeItemsFromAllDrives(true)
		}
		page, err := call.Do()
		switch {
		case r.lib.IsSharedDrive() && isNotFound(err):
			// Drive's "Shared drive not found": the drive is gone, or the
			// account is no longer a member; its token is not the matter.
			return nil, "", fmt.Errorf("list changes: %w", err)
		case tokenRefused(err):
			return nil, "", fmt.Errorf("%w: %w", errTokenRefused, err)
		}
		if err != nil {
			return nil, "", fmt.Errorf("list changes: %w", err)
		}
		page = read.take(page)
		changes = append(changes, page.Changes...)
		r.progress(fm.Progress{Library: r.lib.ID, Phase: "changes", Done: len(changes)})
		if page.NewStartPageToken != "" {
			return changes, page.NewStartPageToken, nil
		}
		if page.NextPageToken == "" {
			return nil, "", errors.New("list changes: Drive gave neither a next page nor a new start token")
		}
		token = page.NextPageToken
	}
}

// tokenRefused: Drive answers a token it no longer knows with 400 (invalid
// page token), 404 or 410. (A shared drive's change log answers 404 for the
// drive, gone or not shared: readChanges tells that apart.)
func tokenRefused(err error) bool {
	var ge *googleapi.Error
	if !errors.As(err, &ge) {
		return false
	}
	switch ge.Code {
	case http.StatusNotFound, http.StatusGone:
		return true
	case http.StatusBadRequest:
		for _, e := range ge.Errors {
			if e.Reason == "invalid" || e.Reason == "badRequest" {
				return true
			}
		}
	}
	return false
}
