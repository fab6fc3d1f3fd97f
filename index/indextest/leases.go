package indextest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
)

// Replicas are two processes that share an index's leases, for
// RunSharedLeases.
type Replicas struct {
	A, B Replica
	// Lapse makes the lease named name lapse, as it does when its holder
	// was cut off from the index for longer than the lease lasts; the
	// holder finds it lost at its next renewal.
	Lapse func(name string)
}

// Replica is one process that shares an index's leases.
type Replica struct {
	// Holder is the name Holders and ErrLeaseHeld give the process.
	Holder string
	Leases fm.Leases
	// Write makes a write of the process to what the lease "lib" guards
	// (the library lib), fenced by fence: the index refuses it unless fence
	// may write now (see fm.Fence).
	Write func(ctx context.Context, fence fm.Fence) error
}

// lostWithin bounds the wait for a holder to find its lapsed lease lost.
const lostWithin = 10 * time.Second

// RunSharedLeases runs the suite's tests of the leases of an index that
// processes share, each on the replicas open returns, new for it: what the
// scheduler and the push service rely on, whichever index or fake of one
// gives the leases.
func RunSharedLeases(t *testing.T, open func(t *testing.T) Replicas) {
	for _, tc := range []struct {
		name string
		test func(*testing.T, Replicas)
	}{
		{"OneHolderAtATime", testOneHolderAtATime},
		{"FencedWrites", testFencedWrites},
		{"Lapse", testLapse},
		{"ClaimScheduledRun", testClaimScheduledRun},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.test(t, open(t)) })
	}
}

// A lease has one holder at a time, named to the others, itself included;
// each holding has an epoch greater than the ones before; a lease given
// back can be taken, and giving a holding back twice frees no later one.
func testOneHolderAtATime(t *testing.T, r Replicas) {
	ctx := context.Background()
	la := acquireLease(t, r.A, "lib")
	for _, p := range []Replica{r.B, r.A} {
		if _, err := p.Leases.Acquire(ctx, "lib"); !errors.Is(err, fm.ErrLeaseHeld) || !strings.Contains(err.Error(), r.A.Holder) {
			t.Errorf("%s's Acquire of a lease %s holds: %v; want ErrLeaseHeld naming %s", p.Holder, r.A.Holder, err, r.A.Holder)
		}
	}
	other := acquireLease(t, r.B, "other")
	wantHolders(t, r.A, map[string]string{"lib": r.A.Holder, "other": r.B.Holder})
	select {
	case <-la.Lost():
		t.Error("a lease held is lost")
	default:
	}
	la.Release()
	other.Release()
	lb := acquireLease(t, r.B, "lib")
	if lb.Fence().Lease != "lib" || lb.Fence().Epoch <= la.Fence().Epoch {
		t.Errorf("fences %+v, then %+v; want the lease's name, and a greater epoch", la.Fence(), lb.Fence())
	}
	wantHolders(t, r.A, map[string]string{"lib": r.B.Holder})
	la.Release()
	if _, err := r.A.Leases.Acquire(ctx, "lib"); !errors.Is(err, fm.ErrLeaseHeld) {
		t.Errorf("a holding given back twice freed the next one: %v", err)
	}
	lb.Release()
	wantHolders(t, r.A, map[string]string{})
}

// A write is made under the lease's live holding only; the zero fence
// writes only while no process holds the lease.
func testFencedWrites(t *testing.T, r Replicas) {
	ctx := context.Background()
	if err := r.B.Write(ctx, fm.Fence{}); err != nil {
		t.Fatalf("a write without a lease, none held: %v", err)
	}
	la := acquireLease(t, r.A, "lib")
	if err := r.A.Write(ctx, la.Fence()); err != nil {
		t.Errorf("a write under the holding: %v", err)
	}
	if err := r.B.Write(ctx, fm.Fence{}); !errors.Is(err, fm.ErrLeaseHeld) {
		t.Errorf("another's write without a lease while one holds it: %v; want ErrLeaseHeld", err)
	}
	forged := fm.Fence{Lease: "lib", Epoch: la.Fence().Epoch + 1}
	if err := r.B.Write(ctx, forged); !errors.Is(err, fm.ErrLeaseLost) {
		t.Errorf("a write under an epoch never issued: %v; want ErrLeaseLost", err)
	}
	other := acquireLease(t, r.A, "other")
	if err := r.A.Write(ctx, other.Fence()); err == nil {
		t.Error("a write to what lib's lease guards, under another lease, was made")
	}
	other.Release()
	la.Release()
	if err := r.A.Write(ctx, la.Fence()); !errors.Is(err, fm.ErrLeaseLost) {
		t.Errorf("a write under a holding given back: %v; want ErrLeaseLost", err)
	}
	lb := acquireLease(t, r.B, "lib")
	if err := r.A.Write(ctx, la.Fence()); !errors.Is(err, fm.ErrLeaseLost) {
		t.Errorf("a write under a holding another took since: %v; want ErrLeaseLost", err)
	}
	if err := r.B.Write(ctx, lb.Fence()); err != nil {
		t.Errorf("a write under the new holding: %v", err)
	}
	lb.Release()
}

// A lease that lapsed fences its holder's writes, is held by no one, can
// be taken by another process, and its holder finds it lost.
func testLapse(t *testing.T, r Replicas) {
	ctx := context.Background()
	la := acquireLease(t, r.A, "lib")
	r.Lapse("lib")
	if err := r.A.Write(ctx, la.Fence()); !errors.Is(err, fm.ErrLeaseLost) {
		t.Errorf("a write under a lapsed holding: %v; want ErrLeaseLost", err)
	}
	wantHolders(t, r.B, map[string]string{})
	lb := acquireLease(t, r.B, "lib")
	if lb.Fence().Epoch <= la.Fence().Epoch {
		t.Errorf("fences %+v, then %+v; want a greater epoch", la.Fence(), lb.Fence())
	}
	select {
	case <-la.Lost():
	case <-time.After(lostWithin):
		t.Errorf("the holder of a lapsed lease did not find it lost within %s", lostWithin)
	}
	la.Release()
	wantHolders(t, r.A, map[string]string{"lib": r.B.Holder})
	lb.Release()
}

// The processes together claim a scheduled run of each kind of each job
// once per period.
func testClaimScheduledRun(t *testing.T, r Replicas) {
	ctx := context.Background()
	for _, c := range []struct {
		p          Replica
		name, kind string
		within     time.Duration
		want       bool
	}{
		{r.A, "lib", "incremental", time.Minute, true},
		{r.B, "lib", "incremental", time.Minute, false},
		{r.A, "lib", "incremental", time.Minute, false},
		{r.B, "lib", "full", time.Minute, true},
		{r.B, "other", "incremental", time.Minute, true},
		{r.B, "lib", "incremental", time.Nanosecond, true},
	} {
		if got, err := c.p.Leases.ClaimScheduledRun(ctx, c.name, c.kind, c.within); got != c.want || err != nil {
			t.Errorf("%s claims a %s run of %s within %s: %v, %v; want %v", c.p.Holder, c.kind, c.name, c.within, got, err, c.want)
		}
	}
}

// acquireLease takes the lease named name for p, failing the test if it
// cannot.
func acquireLease(t *testing.T, p Replica, name string) fm.Lease {
	t.Helper()
	l, err := p.Leases.Acquire(context.Background(), name)
	if err != nil {
		t.Fatalf("%s's Acquire(%s): %v", p.Holder, name, err)
	}
	return l
}

// wantHolders fails the test unless p sees want as the leases' holders.
func wantHolders(t *testing.T, p Replica, want map[string]string) {
	t.Helper()
	got, err := p.Leases.Holders(context.Background())
	if err != nil || len(got) != len(want) {
		t.Errorf("holders %v, %v; want %v", got, err, want)
		return
	}
	for name, holder := range want {
		if got[name] != holder {
			t.Errorf("holders %v; want %v", got, want)
			return
		}
	}
}
