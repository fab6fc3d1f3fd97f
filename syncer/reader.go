package syncer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync/atomic"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/googleclient"
	"golang.org/x/oauth2"
	drive "google.golang.org/api/drive/v3"
	"google.golang.org/api/googleapi"
)

// folderMimeType is the Drive MIME type of a folder.
const folderMimeType = "application/vnd.google-apps.folder"

// Fields asked of Drive: exactly what the index keeps.
const (
	permissionFields = "id,type,role,emailAddress,domain,displayName,photoLink,allowFileDiscovery,deleted," +
		"permissionDetails(role,inherited)"
	fileFields = "id,name,mimeType,parents,trashed,resourceKey,appProperties,copyRequiresWriterPermission," +
		"downloadRestrictions(itemDownloadRestriction(restrictedForReaders)),writersCanShare," +
		"hasAugmentedPermissions,inheritedPermissionsDisabled,permissions(" + permissionFields + ")"
	listFields      = "nextPageToken,files(" + fileFields + ")"
	permsListFields = "nextPageToken,permissions(" + permissionFields + ")"
	driveFields     = "id,name,restrictions(copyRequiresWriterPermission,downloadRestriction(restrictedForReaders),sharingFoldersRequiresOrganizerPermission)"
	foldersQuery    = "mimeType = '" + folderMimeType + "' and trashed = false"
	permsPageSize   = 100
)

// listPageSize is how many folders a files.list call asks for: Drive's
// most. Tests lower it, so that small libraries take many pages.
var listPageSize = 1000

// reader reads one library from Drive.
type reader struct {
	lists       permissionLists
	odd         oddities
	logger      *slog.Logger
	svc         *drive.Service
	lib         *fm.Library
	progress    fm.ProgressFunc
	concurrency int
	ranges      int    // the createdTime ranges listed
	fallback    string // why they gave way to one sequential listing, if they did
	listing     listProgress
}

// listProgress is how far a full sync's listing got: a server whose pages
// keep giving folders listed already (a nextPageToken that leads back)
// would keep it listing forever.
type listProgress struct {
	folders atomic.Int64 // the folders listed, each once
	idle    atomic.Int64 // the pages that gave none not listed before
	ranges  atomic.Int64 // the createdTime ranges taken
}

// newReader returns a reader of lib, with the Drive client of its storage
// account.
func (s *Syncer) newReader(lib *fm.Library, progress fm.ProgressFunc) (*reader, error) {
	svc, err := s.clients.Drive(lib.StorageAccount)
	if err != nil {
		return nil, err
	}
	return &reader{logger: s.logger, svc: svc, lib: lib, progress: progress, concurrency: s.opts.Concurrency}, nil
}

// listCall is the files.list call of the files matching q in the
// library's corpus (My Drive, or the shared drive), a thousand a page.
func (r *reader) listCall(q string) *drive.FilesListCall {
	call := r.svc.Files.List().Q(q).PageSize(int64(listPageSize)).Fields(listFields).SupportsAllDrives(true)
	if r.lib.IsSharedDrive() {
		return call.Corpora("drive").DriveId(r.lib.SharedDriveID).IncludeItemsFromAllDrives(true)
	}
	return call.Corpora("user")
}

// pages reads call's pages, one ahead, each decoded by drivelist (or, where
// it leaves one, by the client library), and hands each to page; an error
// that page returns stops the listing. With transient, page keeps nothing
// of a page's files once it returns: their memory is the next page's.
func (r *reader) pages(ctx context.Context, call *drive.FilesListCall, transient bool, page func(*drive.FileList) error) error {
	listed := newListedPages()
	ctx = googleclient.WithPageDecoder(ctx, listed.decode)
	ctx, stop := googleclient.WithReadAhead(ctx)
	defer stop()
	err := call.Context(ctx).Pages(ctx, func(list *drive.FileList) error {
		list = listed.take(list)
		err := page(list)
		if transient {
			listed.reuse(list)
		}
		return err
	})
	if listed.left > 0 {
		r.logger.Debug("pages left to the client library's decoding", "library", r.lib.ID, "pages", listed.left)
	}
	return err
}

// folders keeps the folders of files that can be a library's: Drive at
// times answers more than asked (shortcuts, items in the trash).
func folders(files []*drive.File) []*drive.File {
	return slices.DeleteFunc(files, func(f *drive.File) bool { return f.MimeType != folderMimeType || f.Trashed })
}

// describe turns the Google errors a sync meets into messages an operator can
// act on, keeping the cause.
func (s *Syncer) describe(err error, lib *fm.Library) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		if s.clients.AuthorizedUser() {
			return fmt.Errorf("the authorized_user key %s: the token endpoint refused its refresh token (%s): %w", s.clients.CredentialsFile(), refusal(re), err)
		}
		return fmt.Errorf("storage account %s: the token endpoint refused to act as it (%s; is domain-wide delegation granted to the key's client for the Drive scope?): %w",
			lib.StorageAccount, refusal(re), err)
	}
	if isNotFound(err) {
		what := "root folder " + lib.RootFolderID
		if lib.IsSharedDrive() {
			what = "shared drive " + lib.SharedDriveID
		}
		actor := "storage account " + lib.StorageAccount
		if s.clients.AuthorizedUser() {
			actor = "the user of the authorized_user key " + s.clients.CredentialsFile()
		}
		return fmt.Errorf("%s not found, or not shared with %s: %w", what, actor, err)
	}
	return err
}

// isNotFound reports whether err is a Google API's 404 Not Found.
func isNotFound(err error) bool {
	var ge *googleapi.Error
	return errors.As(err, &ge) && ge.Code == http.StatusNotFound
}
