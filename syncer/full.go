package syncer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/config"
	"golang.org/x/oauth2"
	drive "google.golang.org/api/drive/v3"
	"google.golang.org/api/googleapi"
)

// Fields asked of Drive: exactly what the index keeps.
const (
	permissionFields = "id,type,role,emailAddress,domain,displayName,photoLink,allowFileDiscovery,deleted"
	fileFields       = "id,name,mimeType,parents,trashed,resourceKey,appProperties,copyRequiresWriterPermission," +
		"downloadRestrictions(itemDownloadRestriction(restrictedForReaders)),writersCanShare," +
		"hasAugmentedPermissions,inheritedPermissionsDisabled,permissions(" + permissionFields + ")"
	listFields      = "nextPageToken,files(" + fileFields + ")"
	permsListFields = "nextPageToken,permissions(" + permissionFields + ")"
	driveFields     = "id,name,restrictions(copyRequiresWriterPermission,downloadRestriction(restrictedForReaders),sharingFoldersRequiresOrganizerPermission)"
	foldersQuery    = "mimeType = '" + fm.FolderMimeType + "' and trashed = false"
	listPageSize    = 1000
	permsPageSize   = 100
	writeBatchSize  = 2000
)

// fullSync reads a library's whole tree and replaces the indexed one (prev's,
// nil if none) with it.
func (s *Syncer) fullSync(ctx context.Context, lib *config.Library, prev *fm.LibraryState, progress ProgressFunc) (*Result, error) {
	r, err := s.newReader(lib, progress)
	if err != nil {
		return nil, err
	}
	state := fm.LibraryState{LastFullSync: s.opts.Now().UTC()}
	if prev != nil {
		state.LastIncrementalSync = prev.LastIncrementalSync
	}
	folders, err := r.readTree(ctx, &state)
	if err != nil {
		return nil, s.describe(err, lib)
	}
	r.odd.report(s.logger, lib.ID)
	progress(Progress{Library: lib.ID, Phase: "writing", Total: len(folders)})
	drift, err := s.write(ctx, lib.ID, folders, state, progress)
	if err != nil {
		return nil, err
	}
	res := &Result{Library: lib.ID, Full: true, Folders: len(folders), Drift: drift}
	for _, f := range folders {
		res.Permissions += len(f.Permissions)
	}
	if drift.Total() > 0 && prev != nil {
		s.logger.Warn("full sync corrected drift", "library", lib.ID, "added", drift.Added, "removed", drift.Removed, "changed", drift.Changed)
	}
	return res, nil
}

func (s *Syncer) newReader(lib *config.Library, progress ProgressFunc) (*reader, error) {
	svc, err := s.driveFor(lib.StorageAccount)
	if err != nil {
		return nil, err
	}
	return &reader{logger: s.logger, svc: svc, lib: lib, progress: progress, concurrency: s.cfg.Storage.Concurrency}, nil
}

// write replaces the library's tree in batches; readers switch at Commit.
func (s *Syncer) write(ctx context.Context, libraryID string, folders []*node, state fm.LibraryState, progress ProgressFunc) (fm.Drift, error) {
	w, err := s.index.BeginFullSync(ctx, libraryID)
	if err != nil {
		return fm.Drift{}, err
	}
	defer w.Abort()
	// In ID order the index packs its pages.
	folders = slices.Clone(folders)
	slices.SortFunc(folders, func(a, b *node) int { return strings.Compare(a.ID, b.ID) })
	batch := make([]fm.SyncedFolder, 0, writeBatchSize)
	for i, n := range folders {
		batch = append(batch, n.SyncedFolder)
		if len(batch) == cap(batch) || i == len(folders)-1 {
			if err := ctx.Err(); err != nil {
				return fm.Drift{}, err
			}
			if err := w.Put(batch); err != nil {
				return fm.Drift{}, err
			}
			batch = batch[:0]
			progress(Progress{Library: libraryID, Phase: "writing", Done: i + 1, Total: len(folders)})
		}
	}
	return w.Commit(state)
}

// reader reads one library from Drive.
type reader struct {
	lists       permissionLists
	odd         oddities
	logger      *slog.Logger
	svc         *drive.Service
	lib         *config.Library
	progress    ProgressFunc
	concurrency int
}

// readTree reads the library's folders and their permissions, and fills the
// Drive-side parts of state. The changes token is taken before listing, so
// that nothing changed during the listing is missed later.
func (r *reader) readTree(ctx context.Context, state *fm.LibraryState) ([]*node, error) {
	var root *node
	if r.lib.IsSharedDrive() {
		d, err := r.svc.Drives.Get(r.lib.SharedDriveID).Fields(driveFields).Context(ctx).Do()
		if err != nil {
			return nil, fmt.Errorf("read shared drive %s: %w", r.lib.SharedDriveID, err)
		}
		root = sharedDriveRoot(d)
		state.DriveID = d.Id
		state.SharingRequiresOrganizer = d.Restrictions != nil && d.Restrictions.SharingFoldersRequiresOrganizerPermission
	}
	token, err := r.startPageToken(ctx)
	if err != nil {
		return nil, err
	}
	state.StartPageToken = token
	var early *permissionQueue
	listCtx := ctx
	if root != nil { // a shared drive: every folder listed is in the library
		// The listing and the early permissions share the queue's context:
		// the first failure of either stops both, and is the one returned.
		early = r.newPermissionQueue(ctx, root.ID)
		early.add(root)
		listCtx = early.ctx
	}
	listed, err := r.listFolders(listCtx, early)
	if early != nil {
		if err != nil {
			early.fail(err)
		}
		err = early.wait()
	}
	if err != nil {
		return nil, err
	}
	if root == nil {
		if root, err = r.myDriveRoot(ctx, listed); err != nil {
			return nil, err
		}
	}
	state.RootID = root.ID
	folders := placeInTree(root, listed, &r.odd)
	byID := make(map[string]*node, len(folders))
	for _, n := range folders {
		byID[n.ID] = n
	}
	// Parents come before children: a parent's permissions are read first.
	inherited := func(n *node) ([]fm.Permission, error) { return byID[n.ParentID].Permissions, nil }
	if err := r.readPermissions(ctx, folders, root.ID, inherited); err != nil {
		return nil, err
	}
	return folders, nil
}

func sharedDriveRoot(d *drive.Drive) *node {
	n := &node{}
	n.ID = d.Id
	n.Name = d.Name
	n.WritersCanShare = true
	if res := d.Restrictions; res != nil {
		n.OwnRestrictedDownload = res.CopyRequiresWriterPermission ||
			(res.DownloadRestriction != nil && res.DownloadRestriction.RestrictedForReaders)
	}
	return n
}

func (r *reader) startPageToken(ctx context.Context) (string, error) {
	call := r.svc.Changes.GetStartPageToken().SupportsAllDrives(true).Context(ctx)
	if r.lib.IsSharedDrive() {
		call = call.DriveId(r.lib.SharedDriveID)
	}
	t, err := call.Do()
	if err != nil {
		return "", fmt.Errorf("get changes start token: %w", err)
	}
	return t.StartPageToken, nil
}

// listFolders lists every folder the storage account can see in the
// library's corpus (My Drive, or the shared drive), a thousand a call. The
// folders needing permissions of their own go to early, if given, as they
// come.
func (r *reader) listFolders(ctx context.Context, early *permissionQueue) (map[string]*node, error) {
	listed := map[string]*node{}
	err := r.listFolderPages(ctx, foldersQuery, func(folders []*drive.File) {
		for _, f := range folders {
			if _, seen := listed[f.Id]; seen {
				r.odd.repeated.Add(1)
				continue
			}
			n := r.newNode(f)
			listed[f.Id] = n
			if early != nil && !n.inherits && !n.permsKnown {
				early.add(n)
			}
		}
		r.progress(Progress{Library: r.lib.ID, Phase: "listing", Done: len(listed)})
	})
	if err != nil {
		return nil, fmt.Errorf("list folders: %w", err)
	}
	return listed, nil
}

// listFolderPages lists the files matching q in the library's corpus (My
// Drive, or the shared drive), a thousand a call, and hands each page's
// folders to page. Drive answers more than asked at times: shortcuts and
// trash, which are not folders of a library, are left out.
func (r *reader) listFolderPages(ctx context.Context, q string, page func([]*drive.File)) error {
	call := r.svc.Files.List().Q(q).PageSize(listPageSize).Fields(listFields).SupportsAllDrives(true).Context(ctx)
	if r.lib.IsSharedDrive() {
		call = call.Corpora("drive").DriveId(r.lib.SharedDriveID).IncludeItemsFromAllDrives(true)
	} else {
		call = call.Corpora("user")
	}
	return call.Pages(ctx, func(list *drive.FileList) error {
		page(slices.DeleteFunc(list.Files, func(f *drive.File) bool { return f.MimeType != fm.FolderMimeType || f.Trashed }))
		return nil
	})
}

// myDriveRoot finds the configured root folder: in the listing, or with one
// more call when it is not there (an alias such as "root", say).
func (r *reader) myDriveRoot(ctx context.Context, listed map[string]*node) (*node, error) {
	if n, ok := listed[r.lib.RootFolderID]; ok {
		return n, nil
	}
	f, err := r.svc.Files.Get(r.lib.RootFolderID).Fields(googleapi.Field(fileFields)).SupportsAllDrives(true).Context(ctx).Do()
	if err != nil {
		return nil, fmt.Errorf("read root folder %s: %w", r.lib.RootFolderID, err)
	}
	if f.MimeType != fm.FolderMimeType || f.Trashed {
		return nil, fmt.Errorf("root folder %s is not a folder, or is in the trash", r.lib.RootFolderID)
	}
	if n, ok := listed[f.Id]; ok {
		return n, nil
	}
	return r.newNode(f), nil
}

// newNode keeps what foldermirror needs of a listed folder of the library.
func (r *reader) newNode(f *drive.File) *node {
	n := newNode(f)
	if f.Permissions != nil {
		n.Permissions = r.lists.intern(convertPermissions(f.Permissions, &r.odd))
		n.permsKnown = true
	}
	if r.lib.IsSharedDrive() {
		n.WritersCanShare = true // the drive's restriction decides instead
		n.inherits = !f.HasAugmentedPermissions && !f.InheritedPermissionsDisabled
	}
	return n
}

// readPermissions fills in the permissions the listing did not give. A
// folder that only inherits gets its parent's from inherited (after the
// others are read, in the order given); the others are listed,
// storage.concurrency calls at a time. A folder gone meanwhile (but the
// root) is kept with none, shown to nobody, until the next sync reads its
// removal.
func (r *reader) readPermissions(ctx context.Context, folders []*node, rootID string, inherited func(*node) ([]fm.Permission, error)) error {
	var todo, inheriting []*node
	for _, n := range folders {
		switch {
		case n.permsKnown:
		case n.inherits && n.ID != rootID:
			inheriting = append(inheriting, n)
		default:
			todo = append(todo, n)
		}
	}
	if err := r.listAllPermissions(ctx, todo, rootID); err != nil {
		return err
	}
	for _, n := range inheriting {
		perms, err := inherited(n)
		if err != nil {
			return err
		}
		n.Permissions = perms
	}
	return nil
}

// listAllPermissions lists the permissions of folders, concurrently.
func (r *reader) listAllPermissions(ctx context.Context, todo []*node, rootID string) error {
	q := r.newPermissionQueue(ctx, rootID)
	for _, n := range todo {
		q.add(n)
	}
	return q.wait()
}

// permissionQueue lists the permissions of folders as they are added,
// storage.concurrency calls at a time, so that a shared drive's permissions
// are read while its folders are still being listed. Its context ends at the
// first failure, whose cause is that failure.
type permissionQueue struct {
	r      *reader
	rootID string
	ctx    context.Context
	cancel context.CancelCauseFunc
	jobs   chan *node
	wg     sync.WaitGroup
	added  atomic.Int64
	done   atomic.Int64
}

func (r *reader) newPermissionQueue(ctx context.Context, rootID string) *permissionQueue {
	q := &permissionQueue{r: r, rootID: rootID, jobs: make(chan *node, 4096)}
	q.ctx, q.cancel = context.WithCancelCause(ctx)
	for range max(1, r.concurrency) {
		q.wg.Add(1)
		go q.work()
	}
	return q
}

// add queues a folder; it waits while the queue is full.
func (q *permissionQueue) add(n *node) {
	q.added.Add(1)
	select {
	case q.jobs <- n:
	case <-q.ctx.Done():
	}
}

// wait waits for every folder queued, and returns the first failure (of the
// queue, of its parent context, or given to fail).
func (q *permissionQueue) wait() error {
	close(q.jobs)
	q.wg.Wait()
	err := context.Cause(q.ctx)
	q.cancel(nil)
	return err
}

// fail stops the queue, and all that shares its context; the first failure
// wins.
func (q *permissionQueue) fail(err error) { q.cancel(err) }

func (q *permissionQueue) work() {
	defer q.wg.Done()
	for n := range q.jobs {
		if q.ctx.Err() != nil {
			continue // drain
		}
		perms, err := q.r.listPermissions(q.ctx, n.ID)
		if isNotFound(err) && n.ID != q.rootID {
			q.r.logger.Warn("folder vanished during sync; it is hidden until the next sync", "library", q.r.lib.ID, "folder", n.ID)
			err = nil
		}
		if err != nil {
			q.fail(fmt.Errorf("list permissions of folder %s: %w", n.ID, err))
			continue
		}
		n.Permissions, n.permsKnown = perms, true
		q.r.progress(Progress{Library: q.r.lib.ID, Phase: "permissions", Done: int(q.done.Add(1)), Total: int(q.added.Load())})
	}
}

func (r *reader) listPermissions(ctx context.Context, fileID string) ([]fm.Permission, error) {
	var perms []*drive.Permission
	err := r.svc.Permissions.List(fileID).PageSize(permsPageSize).SupportsAllDrives(true).
		Fields(permsListFields).Pages(ctx, func(page *drive.PermissionList) error {
		perms = append(perms, page.Permissions...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r.lists.intern(convertPermissions(perms, &r.odd)), nil
}

// describe turns the Google errors a sync meets into messages an operator can
// act on, keeping the cause.
func (s *Syncer) describe(err error, lib *config.Library) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		if s.creds.authorizedUser() {
			return fmt.Errorf("the authorized_user key %s: the token endpoint refused its refresh token (%s): %w", s.creds.path, re.ErrorCode, err)
		}
		return fmt.Errorf("storage account %s: the token endpoint refused to act as it (%s; is domain-wide delegation granted to the key's client for the Drive scope?): %w",
			lib.StorageAccount, re.ErrorCode, err)
	}
	if isNotFound(err) {
		what := "root folder " + lib.RootFolderID
		if lib.IsSharedDrive() {
			what = "shared drive " + lib.SharedDriveID
		}
		actor := "storage account " + lib.StorageAccount
		if s.creds.authorizedUser() {
			actor = "the user of the authorized_user key " + s.creds.path
		}
		return fmt.Errorf("%s not found, or not shared with %s: %w", what, actor, err)
	}
	return err
}

func isNotFound(err error) bool {
	var ge *googleapi.Error
	return errors.As(err, &ge) && ge.Code == http.StatusNotFound
}
