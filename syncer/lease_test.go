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
	"github.com/foldermirror/foldermirror/syncer"
)

// A sync whose lease lapsed while it ran (its process paused past
// index.leaseTtl), and that another process took and gave back meanwhile,
// fails saying the lease was lost, and commits nothing: Run hands the
// lease's fence to every write of the sync, full or incremental, and to
// the directory's.
func TestRunFencedOut(t *testing.T) {
	for _, tc := range []struct {
		name, job string
		mode      syncer.Mode
	}{
		{"full", "eng", syncer.Full},
		{"incremental", "eng", syncer.Auto},
		{"directory", syncer.DirectoryJob("example.com"), syncer.Full},
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
			e.db = fmtest.OpenPostgres(t, url, postgres.Options{Holder: "replica-a"})
			e.restartSyncer()
			for _, job := range []string{"eng", syncer.DirectoryJob("example.com")} {
				if _, err := e.s.Run(ctx, job, syncer.Full, nil, syncer.RunOptions{}); err != nil {
					t.Fatal(err)
				}
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
			progress := func(p syncer.Progress) {
				if p.Phase == "writing" {
					once.Do(pause)
				}
			}
			if tc.job != "eng" {
				e.db = &pauseBeforeDirectory{Index: e.db, pause: pause}
				e.restartSyncer()
			}
			_, err := e.s.Run(ctx, tc.job, tc.mode, progress, syncer.RunOptions{})
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
