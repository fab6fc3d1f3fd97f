package discovery_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/discovery"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/wait"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

const (
	domain  = "example.com"
	account = "storage@example.com"
)

// store is an index's discovery store in memory, checking each write's
// fence as a shared index does.
type store struct {
	leases *fmtest.Leases
	mu     sync.Mutex
	recs   map[string]fm.Discovery
	// deleted are the libraries whose rows were deleted.
	deleted []string
}

func newStore(leases *fmtest.Leases) *store {
	return &store{leases: leases, recs: map[string]fm.Discovery{}}
}

func (s *store) Discoveries(context.Context) ([]fm.Discovery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []fm.Discovery
	for _, r := range s.recs {
		r.Drives = nil
		out = append(out, r)
	}
	return out, nil
}

func (s *store) DiscoveredDrives(_ context.Context, d string) ([]fm.DiscoveredDrive, uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.recs[d]
	return slices.Clone(r.Drives), r.Revision, nil
}

func (s *store) PutDiscovery(_ context.Context, d fm.Discovery, fence fm.Fence) error {
	if err := s.leases.Check(fm.DiscoveryLease(d.StorageAccount), fence); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.recs[d.Domain]
	d.Revision = old.Revision
	if d.Drives == nil {
		d.Drives = old.Drives
	} else if !slices.Equal(d.Drives, old.Drives) {
		d.Revision++
	}
	s.recs[d.Domain] = d
	return nil
}

func (s *store) DeleteLibrary(_ context.Context, id string, fence fm.Fence) error {
	if err := s.leases.Check(id, fence); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deleted = append(s.deleted, id)
	return nil
}

func (s *store) deletedLibraries() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.deleted)
}

// drive plays Drive: the account's drives, and whether its log carries a
// drive change.
type drive struct {
	mu       sync.Mutex
	drives   []fm.DiscoveredDrive
	fail     error
	changed  bool
	listings int
	// logReads counts the reads of the account's log.
	logReads int
}

func (d *drive) DiscoverDrives(context.Context, string) ([]fm.DiscoveredDrive, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.listings++
	if d.fail != nil {
		return nil, d.fail
	}
	return slices.Clone(d.drives), nil
}

func (d *drive) UserChangesToken(context.Context, string) (string, error) { return "1", nil }

func (d *drive) DrivesChanged(context.Context, string, string) (bool, string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.logReads++
	return d.changed, "2", nil
}

// listed is how many times the drives were listed.
func (d *drive) listed() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.listings
}

func (d *drive) set(drives ...fm.DiscoveredDrive) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.drives = drives
}

// process is one process of a shared index: its set and its discoverer.
type process struct {
	set     *fm.LibrarySet
	d       *discovery.Discoverer
	metrics *discovery.Metrics
}

var rule = fm.SharedDriveDiscovery{Domain: domain, StorageAccount: account, Exclude: []string{"Private*"}, FolderDefinitionID: "default"}

func newProcess(t *testing.T, st *store, leases *fmtest.Leases, dr *drive, configured ...fm.Library) *process {
	t.Helper()
	p := &process{set: fm.NewLibrarySet(configured), metrics: discovery.NewMetrics(prometheus.NewRegistry())}
	p.d = discovery.New(discovery.Options{Rules: []fm.SharedDriveDiscovery{rule}, Libraries: p.set, Store: st, Leases: leases,
		Drive: dr, Logger: slog.New(slog.DiscardHandler), Metrics: p.metrics, FollowEvery: 20 * time.Millisecond})
	return p
}

// run runs the discoverer until the test ends.
func (p *process) run(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.d.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// Drives added, renamed, left and excluded: the set follows, and the
// libraries that leave have their rows deleted under their lease.
func TestDiscoveryKeepsTheSet(t *testing.T) {
	leases := fmtest.NewLeases("replica-a")
	st := newStore(leases)
	dr := &drive{}
	dr.set(fm.DiscoveredDrive{ID: "0Aa", Name: "Alpha"}, fm.DiscoveredDrive{ID: "0Ab", Name: "Beta", Hidden: true},
		fm.DiscoveredDrive{ID: "0Ap", Name: "Private HR"})
	p := newProcess(t, st, leases, dr)
	p.run(t)
	wait.Until(t, "the drives discovered at start", func() bool { return slices.Equal(p.set.IDs(), []string{"0Aa", "0Ab"}) })
	if n := testutil.ToFloat64(p.metrics.Libraries().WithLabelValues(domain)); n != 2 {
		t.Errorf("foldermirror_discovered_libraries = %v, want 2", n)
	}
	wait.Until(t, "the rows of the drive excluded deleted", func() bool { return slices.Equal(st.deletedLibraries(), []string{"0Ap"}) })

	dr.set(fm.DiscoveredDrive{ID: "0Aa", Name: "Alpha renamed"}, fm.DiscoveredDrive{ID: "0Ac", Name: "Gamma"})
	p.d.Trigger()
	wait.Until(t, "the second discovery", func() bool { return slices.Equal(p.set.IDs(), []string{"0Aa", "0Ac"}) })
	if l, _ := p.set.Library("0Aa"); l.Name != "Alpha renamed" || l.SharedDriveID != "0Aa" || l.StorageAccount != account {
		t.Errorf("library after the rename: %+v", l)
	}
	wait.Until(t, "the rows of the drive left deleted", func() bool {
		return slices.Equal(st.deletedLibraries(), []string{"0Ap", "0Ab"})
	})
	status := p.d.Status()
	if len(status) != 1 || status[0].Found != 2 || status[0].Included != 2 || status[0].LastDiscovery.IsZero() {
		t.Errorf("status %+v", status)
	}
}

// A notification of the account's log lists the drives only if the log
// carries a drive change.
func TestNotifyListsOnlyOnDriveChanges(t *testing.T) {
	leases := fmtest.NewLeases("replica-a")
	dr := &drive{}
	p := newProcess(t, newStore(leases), leases, dr)
	p.run(t)
	wait.Until(t, "the discovery at start", func() bool { dr.mu.Lock(); defer dr.mu.Unlock(); return dr.listings == 1 })
	p.d.Notify("someone.else@example.com")
	p.d.Notify(account)
	wait.Until(t, "the log read", func() bool { dr.mu.Lock(); defer dr.mu.Unlock(); return dr.logReads == 1 })
	dr.mu.Lock()
	if dr.listings != 1 {
		t.Errorf("%d listings after a notification of a log without drive changes, want 1", dr.listings)
	}
	dr.changed = true
	dr.drives = []fm.DiscoveredDrive{{ID: "0Anew", Name: "New"}}
	dr.mu.Unlock()
	p.d.Notify(account)
	wait.Until(t, "the drive added", func() bool { return slices.Equal(p.set.IDs(), []string{"0Anew"}) })
	dr.mu.Lock()
	defer dr.mu.Unlock()
	if dr.listings != 2 {
		t.Errorf("%d listings, want 2: at start, and on the notification whose log had a drive change", dr.listings)
	}
}

// A discovery that fails keeps the drives found before, and says why.
func TestFailedDiscoveryKeepsTheDrives(t *testing.T) {
	leases := fmtest.NewLeases("replica-a")
	st := newStore(leases)
	dr := &drive{}
	dr.set(fm.DiscoveredDrive{ID: "0Aa", Name: "Alpha"})
	p := newProcess(t, st, leases, dr)
	p.run(t)
	wait.Until(t, "the first discovery", func() bool { return p.set.Len() == 1 })
	dr.mu.Lock()
	dr.fail = errors.New("googleapi: Error 500: backend error")
	dr.mu.Unlock()
	p.d.Trigger()
	wait.Until(t, "the failure in the status", func() bool { return p.d.Status()[0].LastError != "" })
	if p.set.Len() != 1 || len(st.deletedLibraries()) != 0 {
		t.Errorf("after a failed discovery: libraries %v, rows deleted %v", p.set.IDs(), st.deletedLibraries())
	}
}

// Two processes of one index: one discovers, the other follows what it
// wrote; a restarted process serves what was found before it discovers.
func TestReplicasShareOneDiscovery(t *testing.T) {
	leasesA := fmtest.NewLeases("replica-a")
	leasesB := leasesA.Replica("replica-b")
	st := newStore(leasesA)
	drA, drB := &drive{}, &drive{}
	drA.set(fm.DiscoveredDrive{ID: "0Aa", Name: "Alpha"})
	a := newProcess(t, st, leasesA, drA)
	a.run(t)
	wait.Until(t, "a's discovery", func() bool { return a.set.Len() == 1 })

	giveBack := leasesA.TakeWhenFree("replica-c", fm.DiscoveryLease(account)) // a third process discovers meanwhile
	defer giveBack()
	b := newProcess(t, st, leasesB, drB)
	if err := b.d.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b.set.IDs(), []string{"0Aa"}) {
		t.Fatalf("b loaded %v before discovering", b.set.IDs())
	}
	b.run(t)
	if name := wait.Receive(t, leasesB.Refusals(), "b's discovery at start refused"); name != fm.DiscoveryLease(account) {
		t.Fatalf("b refused the lease %s", name)
	}
	drA.set(fm.DiscoveredDrive{ID: "0Aa", Name: "Alpha"}, fm.DiscoveredDrive{ID: "0Ab", Name: "Beta"})
	giveBack()
	a.d.Trigger()
	wait.Until(t, "b following a's second discovery", func() bool { return b.set.Len() == 2 })
	drB.mu.Lock()
	defer drB.mu.Unlock()
	if drB.listings != 0 {
		t.Errorf("b listed the drives %d times while a held the lease", drB.listings)
	}
}

// A notification whose discovery finds the lease held by another process
// (whose listing may predate the change) is looked at again once the lease
// is free.
func TestNotifyWhileAnotherProcessDiscovers(t *testing.T) {
	leases := fmtest.NewLeases("replica-a")
	dr := &drive{}
	p := newProcess(t, newStore(leases), leases, dr)
	p.run(t)
	wait.Until(t, "the discovery at start", func() bool { dr.mu.Lock(); defer dr.mu.Unlock(); return dr.listings == 1 })
	giveBack := leases.TakeWhenFree("replica-b", fm.DiscoveryLease(account))
	defer giveBack()
	dr.mu.Lock()
	dr.changed = true
	dr.drives = []fm.DiscoveredDrive{{ID: "0Anew", Name: "New"}}
	dr.mu.Unlock()
	p.d.Notify(account)
	if name := wait.Receive(t, leases.Refusals(), "the notified discovery refused the lease"); name != fm.DiscoveryLease(account) {
		t.Fatalf("refused the lease %s", name)
	}
	giveBack()
	wait.Until(t, "the drive added once the lease is free", func() bool { return slices.Equal(p.set.IDs(), []string{"0Anew"}) })
}

// Replicas' schedules tick at their own times: a tick's discovery is
// skipped if another process's scheduled discovery began less than within
// ago, so that together they list the drives as often as one would.
func TestReplicasTicksListOnce(t *testing.T) {
	leasesA := fmtest.NewLeases("replica-a")
	leasesB := leasesA.Replica("replica-b")
	st := newStore(leasesA)
	drA, drB := &drive{}, &drive{}
	a, b := newProcess(t, st, leasesA, drA), newProcess(t, st, leasesB, drB)
	a.run(t)
	wait.Until(t, "a's discovery at start, its lease given back", func() bool {
		held, _ := leasesA.Holders(context.Background())
		return drA.listed() == 1 && len(held) == 0
	})
	b.run(t)
	wait.Until(t, "b's discovery at start", func() bool { return drB.listed() == 1 })
	a.d.Tick(time.Minute)
	wait.Until(t, "a's scheduled discovery", func() bool { return drA.listed() == 2 })
	b.d.Tick(time.Minute)
	b.d.Notify(account) // looked at after the tick: its log read tells the tick is done
	wait.Until(t, "b's log read", func() bool { drB.mu.Lock(); defer drB.mu.Unlock(); return drB.logReads == 1 })
	if n := drB.listed(); n != 1 {
		t.Errorf("b listed the drives %d times; want once, at start: its tick came within a minute of a's", n)
	}
}

// A drive a new configuration excludes, and that the account leaves before
// the restarted process discovers, has its rows deleted all the same: it
// is in the discovery the index held, not in the new listing.
func TestExcludedThenLeftIsDeleted(t *testing.T) {
	leases := fmtest.NewLeases("replica-a")
	st := newStore(leases)
	dr := &drive{}
	dr.set(fm.DiscoveredDrive{ID: "0Aa", Name: "Alpha"}, fm.DiscoveredDrive{ID: "0Ap", Name: "Private HR"})
	before := &process{set: fm.NewLibrarySet(nil)}
	everything := rule
	everything.Exclude = nil
	before.d = discovery.New(discovery.Options{Rules: []fm.SharedDriveDiscovery{everything}, Libraries: before.set, Store: st, Leases: leases,
		Drive: dr, Logger: slog.New(slog.DiscardHandler), FollowEvery: 20 * time.Millisecond})
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { before.d.Run(ctx); close(done) }()
	wait.Until(t, "both drives discovered", func() bool { return slices.Equal(before.set.IDs(), []string{"0Aa", "0Ap"}) })
	stop()
	<-done

	dr.set(fm.DiscoveredDrive{ID: "0Aa", Name: "Alpha"}) // the account left Private HR
	after := newProcess(t, st, leases, dr)               // its configuration excludes Private*
	if err := after.d.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	after.run(t)
	wait.Until(t, "the rows of the drive excluded, then left, deleted", func() bool {
		return slices.Contains(st.deletedLibraries(), "0Ap")
	})
}

// FirstDone is closed once Run's first discovery has listed the drives,
// and at once for a discoverer of no domain.
func TestFirstDone(t *testing.T) {
	if none := discovery.New(discovery.Options{}); !closed(none.FirstDone()) {
		t.Error("FirstDone of a discoverer of no domain is not closed")
	}
	leases := fmtest.NewLeases("replica-a")
	dr := &drive{}
	dr.set(fm.DiscoveredDrive{ID: "0Aa", Name: "Alpha"})
	p := newProcess(t, newStore(leases), leases, dr)
	if closed(p.d.FirstDone()) {
		t.Fatal("FirstDone closed before Run")
	}
	p.run(t)
	wait.Receive(t, p.d.FirstDone(), "the end of the first discovery")
	if dr.listed() != 1 || !slices.Equal(p.set.IDs(), []string{"0Aa"}) {
		t.Errorf("at FirstDone: %d listings, set %v; want the first discovery applied", dr.listed(), p.set.IDs())
	}
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
