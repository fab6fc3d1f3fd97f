package syncer

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"

	fm "github.com/foldermirror/foldermirror"
	drive "google.golang.org/api/drive/v3"
	"google.golang.org/api/googleapi"
)

// fullSync reads a library's whole tree and replaces the indexed one (prev's,
// nil if none) with it, under fence; why says what made it a full sync.
func (s *Syncer) fullSync(ctx context.Context, lib *fm.Library, prev *fm.LibraryState, why fm.FullReason, fence fm.Fence, progress fm.ProgressFunc) (*fm.SyncResult, error) {
	r, err := s.newReader(lib, progress)
	if err != nil {
		return nil, err
	}
	expect := 0
	if prev != nil {
		expect = prev.Folders
	}
	st, err := newStage(os.TempDir(), expect)
	if err != nil {
		return nil, err
	}
	defer st.close() //nolint:errcheck // a temporary file, already unlinked: nothing to lose
	state := fm.LibraryState{LastFullSync: s.opts.Now().UTC()}
	if prev != nil {
		state.LastIncrementalSync = prev.LastIncrementalSync
	}
	placed, err := r.readTree(ctx, st, &state)
	if err != nil {
		return nil, s.describe(err, lib)
	}
	r.odd.report(s.logger, lib.ID)
	drift, err := s.writeTree(ctx, lib.ID, fence, st, placed, state, progress)
	if err != nil {
		return nil, err
	}
	now, err := s.index.Library(ctx, lib.ID)
	if err != nil {
		return nil, err
	}
	if drift.Total() > 0 && prev != nil {
		s.logger.Warn("full sync corrected drift", "library", lib.ID, "added", drift.Added, "removed", drift.Removed, "changed", drift.Changed)
	}
	return &fm.SyncResult{Library: lib.ID, Full: true, FullReason: why, Folders: now.Folders, Permissions: now.Permissions, Drift: drift,
		Ranges: r.ranges, ListingFallback: r.fallback}, nil
}

// idleFactor bounds the pages of a listing that give no folder not listed
// before: the listing fails once they are more than idleFactor times the
// pages a sequential listing of the folders listed so far takes, plus two
// for each range and one for each lister. Legitimate listings stay well
// under it: ranges cut while read drop or repeat a page or two each, and
// folders are listed twice at most (by a range read past its cut, or by a
// fallback to one sequential listing). Only the pages that gave nothing
// new are counted, not all of them: Drive documents that pages may come
// partial, even empty.
const idleFactor = 3

// countPage counts a page of the listing, which gave fresh folders not
// listed before, and fails when too many pages gave none (see idleFactor).
func (r *reader) countPage(fresh int) error {
	folders := r.listing.folders.Add(int64(fresh))
	if fresh > 0 {
		return nil
	}
	idle, sequential := r.listing.idle.Add(1), folders/int64(listPageSize)+1
	if idle <= idleFactor*sequential+2*r.listing.ranges.Load()+int64(max(1, r.concurrency)) {
		return nil
	}
	return fmt.Errorf("the listing gets nowhere: %d of its pages gave no folder not listed before, for %d folders listed (one listing of them takes about %d pages); the server keeps answering with folders it gave already (does its nextPageToken lead back?)",
		idle, folders, sequential)
}

// readTree lists the library's folders into st, reads their permissions,
// and returns the folders of the library's tree, parents before children;
// it fills the Drive-side parts of state. The changes token is taken before
// listing, so that nothing changed during the listing is missed later.
func (r *reader) readTree(ctx context.Context, st *stage, state *fm.LibraryState) ([]uint32, error) {
	// The token first: a change made while the drive and its folders are
	// read is then past it, and the next incremental sync reads it again.
	token, err := r.startPageToken(ctx)
	if err != nil {
		return nil, err
	}
	state.StartPageToken = token
	root := none
	if r.lib.IsSharedDrive() {
		d, err := r.svc.Drives.Get(r.lib.SharedDriveID).Fields(driveFields).Context(ctx).Do()
		if err != nil {
			return nil, fmt.Errorf("read shared drive %s: %w", r.lib.SharedDriveID, err)
		}
		if root, err = r.stageDriveRoot(st, d); err != nil {
			return nil, err
		}
		state.DriveID = d.Id
		state.SharingRequiresOrganizer = d.Restrictions != nil && d.Restrictions.SharingFoldersRequiresOrganizerPermission
	}
	if root, err = r.listInto(ctx, st, root); err != nil {
		return nil, err
	}
	state.RootID = st.ids.String(root)
	placed := st.place(root, &r.odd)
	if err := r.readStagedPermissions(ctx, st, placed); err != nil {
		return nil, err
	}
	if err := markOpaque(st, placed); err != nil {
		return nil, err
	}
	return placed, st.flush()
}

// listInto lists the library's folders into st and returns the root's
// number (root, a shared drive's, or the My Drive library's root folder
// found). A shared drive's permissions are read while its folders are
// still being listed: every folder listed is in the library.
func (r *reader) listInto(ctx context.Context, st *stage, root uint32) (uint32, error) {
	var early *permissionQueue
	listCtx := ctx
	if root != none {
		// The listing and the early permissions share the queue's context:
		// the first failure of either stops both, and is the one returned.
		early = r.newPermissionQueue(ctx, st.ids.String(root))
		r.queueStaged(early, st, root)
		listCtx = early.ctx
	}
	err := r.listFolders(listCtx, st, early)
	if early != nil {
		if err != nil {
			early.fail(err)
		}
		err = early.wait()
	}
	if err != nil || root != none {
		return root, err
	}
	return r.myDriveRoot(ctx, st)
}

// stageDriveRoot stages a shared drive as its library's root folder.
func (r *reader) stageDriveRoot(st *stage, d *drive.Drive) (uint32, error) {
	n, _, err := st.add(&drive.File{Id: d.Id, Name: d.Name}, driveRootFlags(d))
	return n, err
}

// driveRootFlags are the flags of a shared drive's root folder.
func driveRootFlags(d *drive.Drive) uint8 {
	flags := uint8(flagWritersCanShare) // the drive's restriction decides instead
	if res := d.Restrictions; res != nil && (res.CopyRequiresWriterPermission ||
		(res.DownloadRestriction != nil && res.DownloadRestriction.RestrictedForReaders)) {
		flags |= flagOwnRestricted
	}
	return flags
}

func sharedDriveRoot(d *drive.Drive) *node {
	n := &node{}
	n.ID = d.Id
	n.Name = d.Name
	flags := driveRootFlags(d)
	n.WritersCanShare = true
	n.OwnRestrictedDownload = flags&flagOwnRestricted != 0
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
// library's corpus (My Drive, or the shared drive), a thousand a call, into
// st: in createdTime ranges side by side (see listRanges), or as one listing
// when storage.concurrency is 1. The folders needing permissions of their
// own go to early, if given, as they come.
func (r *reader) listFolders(ctx context.Context, st *stage, early *permissionQueue) error {
	var mu sync.Mutex
	listed := 0
	stageAll := func(folders []*drive.File) error {
		mu.Lock()
		defer mu.Unlock()
		fresh := 0
		for _, f := range folders {
			listed++
			n, added, err := r.stageFolder(st, f)
			switch {
			case err != nil:
				return err
			case !added:
				r.odd.repeated.Add(1)
				continue
			case early != nil && st.needsPermissions(n):
				r.queueStaged(early, st, n)
			}
			fresh++
		}
		r.progress(fm.Progress{Library: r.lib.ID, Phase: "listing", Done: listed})
		return r.countPage(fresh)
	}
	var err error
	if r.concurrency > 1 {
		err = r.listRanges(ctx, stageAll)
	} else {
		r.ranges = 1
		r.listing.ranges.Store(1)
		err = r.pages(ctx, r.listCall(foldersQuery), true, func(list *drive.FileList) error { return stageAll(folders(list.Files)) })
	}
	if err != nil {
		return fmt.Errorf("list folders: %w", err)
	}
	return nil
}

// stageFolder stages a listed folder, with its permissions when the listing
// gave them.
func (r *reader) stageFolder(st *stage, f *drive.File) (uint32, bool, error) {
	var flags uint8
	if f.CopyRequiresWriterPermission || restrictsReaders(f.DownloadRestrictions) {
		flags |= flagOwnRestricted
	}
	if f.WritersCanShare || r.lib.IsSharedDrive() { // in a shared drive, the drive's restriction decides
		flags |= flagWritersCanShare
	}
	if r.lib.IsSharedDrive() && !f.HasAugmentedPermissions && !f.InheritedPermissionsDisabled {
		flags |= flagInherits
	}
	if isOpaque(f) {
		flags |= flagOpaque
	}
	n, added, err := st.add(f, flags)
	if err != nil || !added || f.Permissions == nil {
		return n, added, err
	}
	return n, true, r.stagePermissions(st, n, f.Permissions)
}

// stagePermissions gives a staged folder the permissions Drive listed for
// it: its list and its own. A list the listing's decoder shared between
// folders (drivelist) is converted and staged once.
func (r *reader) stagePermissions(st *stage, n uint32, perms []*drive.Permission) error {
	opaque := st.hasFlags(n, flagOpaque)
	if sets, ok := st.knownSets(perms, opaque); ok {
		r.odd.addPermissionCounts(sets.counts)
		st.setPermissions(n, sets.set, sets.own)
		return nil
	}
	var counts oddities
	list, own := convertPermissions(perms, opaque, &counts)
	set, err := st.addSet(list)
	if err != nil {
		return err
	}
	ownSet, err := st.addSet(own)
	if err != nil {
		return err
	}
	sets := stagedSets{set: set, own: ownSet, counts: counts.permissionCounts()}
	r.odd.addPermissionCounts(sets.counts)
	st.rememberSets(perms, opaque, sets)
	st.setPermissions(n, set, ownSet)
	return nil
}

// myDriveRoot finds the configured root folder: in the listing, or with one
// more call when it is not there (an alias such as "root", say).
func (r *reader) myDriveRoot(ctx context.Context, st *stage) (uint32, error) {
	if n, ok := st.ids.Lookup(r.lib.RootFolderID); ok && st.folders.at(n).flags&flagListed != 0 {
		return n, nil
	}
	f, err := r.svc.Files.Get(r.lib.RootFolderID).Fields(googleapi.Field(fileFields)).SupportsAllDrives(true).Context(ctx).Do()
	if err != nil {
		return none, fmt.Errorf("read root folder %s: %w", r.lib.RootFolderID, err)
	}
	if f.MimeType != folderMimeType || f.Trashed {
		return none, fmt.Errorf("root folder %s is not a folder, or is in the trash", r.lib.RootFolderID)
	}
	n, _, err := r.stageFolder(st, f)
	return n, err
}

// readStagedPermissions reads the permissions of the placed folders that
// the listing did not give, storage.concurrency calls at a time; then each
// folder that only inherits gets its list made from its parent's (parents
// come first in placed), with no permissions of its own. A folder other
// than the root that is gone meanwhile is kept with none, shown to nobody,
// until the next sync reads its removal.
func (r *reader) readStagedPermissions(ctx context.Context, st *stage, placed []uint32) error {
	rootID := st.ids.String(placed[0])
	q := r.newPermissionQueue(ctx, rootID)
	for _, n := range placed {
		if f := st.folders.at(n); f.set == none && (f.flags&flagInherits == 0 || n == placed[0]) {
			r.queueStaged(q, st, n)
		}
	}
	if err := q.wait(); err != nil {
		return err
	}
	noOwn, err := st.addSet(nil)
	if err != nil {
		return err
	}
	inherited := map[uint32]uint32{} // the parent's list's set → the child's
	for _, n := range placed[1:] {
		f := st.folders.at(n)
		if f.set != none {
			continue
		}
		set, ok := inherited[st.folders.at(f.parent).set]
		if !ok {
			if set, err = inheritedSet(st, st.folders.at(f.parent).set); err != nil {
				return err
			}
			inherited[st.folders.at(f.parent).set] = set
		}
		st.setPermissions(n, set, noOwn)
	}
	return nil
}

// inheritedSet stages the list of a folder with no permissions of its own
// under a parent whose list is the set parentSet, and returns its set.
func inheritedSet(st *stage, parentSet uint32) (uint32, error) {
	if err := st.flush(); err != nil {
		return 0, err
	}
	parent, err := st.set(nil, parentSet)
	if err != nil {
		return 0, err
	}
	list, _, _ := fm.InheritPermissions(nil, parent.Permissions)
	return st.addSet(list)
}

// markOpaque makes opaque the own permissions of the placed folders whose
// list, as Drive gave it, is not the one made from their own permissions
// and their parent's list (fm.ListFollows). Folders that only inherit have
// such a list by construction.
func markOpaque(st *stage, placed []uint32) error {
	if err := st.flush(); err != nil {
		return err
	}
	own := map[[3]uint32]uint32{} // list, own, parent's list → own
	var buf []byte
	for _, n := range placed[1:] {
		f := st.folders.at(n)
		if f.flags&flagInherits != 0 {
			continue
		}
		key := [3]uint32{f.set, f.own, st.folders.at(f.parent).set}
		o, ok := own[key]
		if !ok {
			var err error
			if o, err = followingOwn(st, buf, key); err != nil {
				return err
			}
			own[key] = o
		}
		f.own = o
	}
	return nil
}

// followingOwn returns the own set of a folder whose list, own set and
// parent's list are the sets of key: the same, or its list made opaque.
func followingOwn(st *stage, buf []byte, key [3]uint32) (uint32, error) {
	var sets [3]fm.PermissionSet
	for i, n := range key {
		var err error
		if sets[i], err = st.set(buf, n); err != nil {
			return 0, err
		}
	}
	list, own, parent := sets[0].Permissions, sets[1].Permissions, sets[2].Permissions
	if slices.ContainsFunc(own, func(p fm.Permission) bool { return p.Opaque }) || fm.ListFollows(list, own, parent) {
		return key[1], nil
	}
	o, err := st.addSet(fm.OpaquePermissions(list))
	if err == nil {
		err = st.flush()
	}
	return o, err
}

// queueStaged queues the reading of a staged folder's permissions.
func (r *reader) queueStaged(q *permissionQueue, st *stage, n uint32) {
	q.add(st.ids.String(n), func(perms []*drive.Permission) error { return r.stagePermissions(st, n, perms) })
}
