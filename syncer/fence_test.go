package syncer_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/index/indextest"
	"github.com/foldermirror/foldermirror/index/postgres"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/pgtest"
)

// A sync whose lease lapsed while it ran (its process paused past
// index.leaseTtl), and that another process took and gave back meanwhile,
// fails saying the lease was lost, and commits nothing: every write of the
// sync, full or incremental, and of the directory's, is made with the
// fence it is given. (That a run hands its lease's fence to the sync,
// package schedule tests.)
func TestSyncFencedOut(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, job string
		mode      fm.SyncMode
	}{
		{"full", "eng", fm.SyncFull},
		{"incremental", "eng", fm.SyncAuto},
		{"directory", fm.DirectoryLease("example.com"), fm.SyncFull},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			fake := startFake(t)
			fake.AddUser(admin)
			fake.MakeAdmin(admin)
			root := fake.CreateFolder(storage, "", "Eng")
			e := newEnv(t, fake, "id: eng, rootFolderId: "+root)
			url := pgtest.NewDatabase(t)
			db := fmtest.OpenPostgres(t, url, postgres.Options{Holder: "replica-a"})
			e.db = db
			e.restartSyncer()
			e.sync("eng")
			if _, err := e.s.SyncDirectory(ctx, "example.com", fm.Fence{}); err != nil {
				t.Fatal(err)
			}
			before := e.tree("eng")
			fake.CreateFolder(storage, root, "New")
			fake.AddUser("bob@example.com")

			other := fmtest.OpenPostgres(t, url, postgres.Options{Holder: "replica-b"})
			var once sync.Once
			pause := func() { // the lease lapses; another process takes it and gives it back
				pgtest.LapseLease(t, url, tc.job)
				l, err := other.Acquire(ctx, tc.job)
				if err != nil {
					t.Error(err)
					return
				}
				l.Release()
			}
			progress := func(p fm.Progress) {
				if p.Phase == "writing" {
					once.Do(pause)
				}
			}
			if tc.job != "eng" {
				e.db = &pauseBeforeDirectory{Index: e.db, pause: pause}
				e.restartSyncer()
			}
			lease, err := db.Acquire(ctx, tc.job)
			if err != nil {
				t.Fatal(err)
			}
			defer lease.Release()
			if tc.job == "eng" {
				_, err = e.s.Sync(ctx, fm.SyncRequest{Library: "eng", Mode: tc.mode, Fence: lease.Fence()}, progress)
			} else {
				_, err = e.s.SyncDirectory(ctx, "example.com", lease.Fence())
			}
			if !errors.Is(err, fm.ErrLeaseLost) {
				t.Errorf("the sync fenced out: %v; want it failed, the lease lost", err)
			}
			fresh := fmtest.OpenPostgres(t, url, postgres.Options{})
			e.db = fresh
			if after := e.tree("eng"); !slices.Equal(after, before) {
				t.Errorf("tree %q after the fenced-out sync, want %q", after, before)
			}
			if got, _ := fresh.Lookup(ctx, "bob@example.com"); got.Known {
				t.Error("the fenced-out directory sync replaced the directory")
			}
		})
	}
}

// pauseBeforeDirectory pauses before a directory is replaced.
type pauseBeforeDirectory struct {
	indextest.Index
	pause func()
}

func (p *pauseBeforeDirectory) ReplaceDirectory(ctx context.Context, snap *fm.DirectorySnapshot, fence fm.Fence) error {
	p.pause()
	return p.Index.ReplaceDirectory(ctx, snap, fence)
}

// A sync cancelled while it runs (the daemon stops) leaves the index as it
// was: a library never synced before stays so.
func TestCancelledSyncLeavesTheIndex(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	d := fake.CreateSharedDrive("Team", storage)
	for range 40 {
		fake.CreateFolder(storage, d, "x")
	}
	e := newEnv(t, fake, "id: team, sharedDriveId: "+d)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := e.s.Sync(ctx, fm.SyncRequest{Library: "team", Mode: fm.SyncFull}, func(p fm.Progress) {
		if p.Phase == "listing" {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("the cancelled sync: %v", err)
	}
	if _, err := e.db.Library(context.Background(), "team"); fm.ErrorCode(err) != fm.ENOTFOUND {
		t.Errorf("a cancelled first sync left a library behind: %v", err)
	}
}
