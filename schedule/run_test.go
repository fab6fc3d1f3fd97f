package schedule_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/schedule"
)

// fenced plays a syncer that records the fence and request of each sync,
// and calls during, if set, in the middle of each.
type fenced struct {
	mu       sync.Mutex
	fences   []fm.Fence
	requests []fm.SyncRequest
	during   func(ctx context.Context) error
}

func (f *fenced) record(ctx context.Context, fence fm.Fence) error {
	f.mu.Lock()
	f.fences = append(f.fences, fence)
	f.mu.Unlock()
	if f.during != nil {
		return f.during(ctx)
	}
	return nil
}

func (f *fenced) Sync(ctx context.Context, req fm.SyncRequest, _ fm.ProgressFunc) (*fm.SyncResult, error) {
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.mu.Unlock()
	if err := f.record(ctx, req.Fence); err != nil {
		return nil, err
	}
	return &fm.SyncResult{Library: req.Library, Full: req.Mode == fm.SyncFull}, nil
}

func (f *fenced) SyncDirectory(ctx context.Context, domain string, fence fm.Fence) (*fm.DirectoryResult, error) {
	if err := f.record(ctx, fence); err != nil {
		return nil, err
	}
	return &fm.DirectoryResult{Domain: domain}, nil
}

// Run holds the job's lease while the sync runs, and hands the lease's
// fence to the sync, full, incremental or the directory's, which makes
// every write with it; the lease is given back at the end.
func TestRunUnderLease(t *testing.T) {
	for _, tc := range []struct {
		name, job string
		mode      fm.SyncMode
	}{
		{"full", "eng", fm.SyncFull},
		{"incremental", "eng", fm.SyncAuto},
		{"directory", schedule.DirectoryJob("example.com"), fm.SyncFull},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ls, s := fmtest.NewLeases("replica-a"), &fenced{}
			r := schedule.Runner{Syncer: s, Leases: ls}
			ev, err := r.Run(context.Background(), tc.job, tc.mode, nil, schedule.RunOptions{})
			if err != nil || ev.Job != tc.job || (ev.Result == nil) == (ev.Directory == nil) {
				t.Fatalf("event %+v, error %v", ev, err)
			}
			want := fm.Fence{Lease: tc.job, Epoch: 1}
			if len(s.fences) != 1 || s.fences[0] != want {
				t.Errorf("the sync wrote under %v, want %v", s.fences, want)
			}
			if got := ls.Released(); len(got) != 1 || got[0] != want {
				t.Errorf("released %v, want the lease given back", got)
			}
		})
	}
}

// A sync whose lease is lost while it runs (it could not be renewed) is
// cancelled, and fails saying the lease was lost.
func TestRunStopsWhenTheLeaseIsLost(t *testing.T) {
	for _, job := range []string{"eng", schedule.DirectoryJob("example.com")} {
		t.Run(job, func(t *testing.T) {
			ls := fmtest.NewLeases("replica-a")
			s := &fenced{during: func(ctx context.Context) error {
				ls.Lapse(job)
				<-ctx.Done()
				return ctx.Err()
			}}
			_, err := schedule.Runner{Syncer: s, Leases: ls}.Run(context.Background(), job, fm.SyncFull, nil, schedule.RunOptions{})
			if !errors.Is(err, fm.ErrLeaseLost) || !strings.Contains(err.Error(), job) {
				t.Errorf("the sync whose lease was lost: %v; want it failed, the lease of %s lost", err, job)
			}
		})
	}
}

// A run of the full schedule says so to the sync; no other run does.
func TestScheduledFullSaysWhy(t *testing.T) {
	for _, tc := range []struct {
		schedule string
		mode     fm.SyncMode
		want     fm.FullReason
	}{
		{"full", fm.SyncFull, fm.FullScheduled},
		{"", fm.SyncFull, ""},
		{"initial", fm.SyncFull, ""},
		{"incremental", fm.SyncAuto, ""},
	} {
		s := &fenced{}
		if _, err := (schedule.Runner{Syncer: s, Leases: fmtest.NewLeases("replica-a")}).Run(context.Background(), "eng", tc.mode, nil,
			schedule.RunOptions{Schedule: tc.schedule}); err != nil {
			t.Fatal(err)
		}
		if got := s.requests[0].FullReason; got != tc.want {
			t.Errorf("a run of schedule %q asked for a full sync for %q, want %q", tc.schedule, got, tc.want)
		}
	}
}

var errIndexDown = errors.New("the index did not answer")

// A lease another process holds skips a scheduled run, and fails any other
// (at once, without a LeaseWait); a scheduled run another process made
// already, or a run no longer needed, is skipped, its lease given back; a
// run whose need cannot be told fails.
func TestRunWhileAnotherProcessSyncs(t *testing.T) {
	for _, tc := range []struct {
		name        string
		opts        schedule.RunOptions
		held        bool
		claimedThen string // the kind of the run another process claimed, if any
		want        error
	}{
		{"scheduled, lease held", schedule.RunOptions{Schedule: "incremental"}, true, "", schedule.ErrSkipped},
		{"asked, lease held", schedule.RunOptions{}, true, "", fm.ErrLeaseHeld},
		{"scheduled, run made elsewhere", schedule.RunOptions{Schedule: "full", ScheduleWithin: time.Hour}, false, "full", schedule.ErrSkipped},
		{"no longer needed", schedule.RunOptions{Schedule: "initial", Needed: func(context.Context) (bool, error) { return false, nil }},
			false, "", schedule.ErrSkipped},
		{"need unknown", schedule.RunOptions{Needed: func(context.Context) (bool, error) { return true, errIndexDown }},
			false, "", errIndexDown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ls := fmtest.NewLeases("replica-a")
			elsewhere := ls.Replica("replica-b")
			if tc.held {
				if _, err := elsewhere.Acquire(context.Background(), "eng"); err != nil {
					t.Fatal(err)
				}
			}
			if tc.claimedThen != "" {
				if ok, err := elsewhere.ClaimScheduledRun(context.Background(), "eng", tc.claimedThen, time.Hour); !ok || err != nil {
					t.Fatalf("the other process's claim: %v, %v", ok, err)
				}
			}
			s := &fenced{}
			_, err := schedule.Runner{Syncer: s, Leases: ls}.Run(context.Background(), "eng", fm.SyncAuto, nil, tc.opts)
			if !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
			if len(s.fences) != 0 {
				t.Error("the sync ran")
			}
			if !tc.held && len(ls.Released()) != 1 {
				t.Errorf("the lease of a skipped run was not given back: %v", ls.Released())
			}
		})
	}
}
