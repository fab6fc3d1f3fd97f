package syncer

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	fm "github.com/foldermirror/foldermirror"
	drive "google.golang.org/api/drive/v3"
)

// permissionQueue lists the permissions of folders as they are added,
// storage.concurrency calls at a time, so that a shared drive's permissions
// are read while its folders are still being listed. Its context ends at the
// first failure, whose cause is that failure.
type permissionQueue struct {
	r      *reader
	rootID string
	ctx    context.Context
	cancel context.CancelCauseFunc
	jobs   chan permissionJob
	wg     sync.WaitGroup
	added  atomic.Int64
	done   atomic.Int64
}

// permissionJob is a folder whose permissions to read, and what to do with
// them.
type permissionJob struct {
	id   string
	keep func(perms []*drive.Permission) error
}

func (r *reader) newPermissionQueue(ctx context.Context, rootID string) *permissionQueue {
	q := &permissionQueue{r: r, rootID: rootID, jobs: make(chan permissionJob, 4096)}
	q.ctx, q.cancel = context.WithCancelCause(ctx)
	for range max(1, r.concurrency) {
		q.wg.Go(q.work)
	}
	return q
}

// add queues a folder; it waits while the queue is full. keep runs in one
// of the queue's goroutines.
func (q *permissionQueue) add(id string, keep func(perms []*drive.Permission) error) {
	q.added.Add(1)
	select {
	case q.jobs <- permissionJob{id: id, keep: keep}:
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
	for job := range q.jobs {
		if q.ctx.Err() != nil {
			continue // drain
		}
		perms, err := q.r.listPermissions(q.ctx, job.id)
		if isNotFound(err) && job.id != q.rootID {
			q.r.logger.Warn("folder vanished during sync; it is hidden until the next sync", "library", q.r.lib.ID, "folder", job.id)
			perms, err = nil, nil
		}
		if err != nil {
			q.fail(fmt.Errorf("list permissions of folder %s: %w", job.id, err))
			continue
		}
		if err := job.keep(perms); err != nil {
			q.fail(err)
			continue
		}
		q.r.progress(fm.Progress{Library: q.r.lib.ID, Phase: "permissions", Done: int(q.done.Add(1)), Total: int(q.added.Load())})
	}
}

func (r *reader) listPermissions(ctx context.Context, fileID string) ([]*drive.Permission, error) {
	var perms []*drive.Permission
	err := r.svc.Permissions.List(fileID).PageSize(permsPageSize).SupportsAllDrives(true).
		Fields(permsListFields).Pages(ctx, func(page *drive.PermissionList) error {
		perms = append(perms, page.Permissions...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return perms, nil
}

// readPermissions fills in the permissions the changes did not give,
// storage.concurrency calls at a time. A folder that only inherits (but the
// root) is left to the transaction, which makes its list from its parent's.
func (r *reader) readPermissions(ctx context.Context, folders []*node, rootID string) error {
	needs := func(n *node) bool { return !n.permsKnown && (!n.inherits || n.ID == rootID) }
	if !slices.ContainsFunc(folders, needs) {
		return context.Cause(ctx) // as an empty queue would: nothing to read
	}
	q := r.newPermissionQueue(ctx, rootID)
	for _, n := range folders {
		if !needs(n) {
			continue
		}
		q.add(n.ID, func(perms []*drive.Permission) error {
			r.keepPermissions(n, perms)
			return nil
		})
	}
	return q.wait()
}
