package fmtest

import (
	"context"
	"fmt"
	"sync"
	"time"

	fm "github.com/foldermirror/foldermirror"
)

// Leases is a fake of the sync leases of an index that processes share
// (fm.Leases), as one process, its holder, sees them; Replica gives
// another's view of the same leases. It behaves as the PostgreSQL index's
// leases do (TestLeasesConform checks it with indextest's
// suite): one holder at a time, a greater epoch at each holding, writes
// fenced (see Check), a scheduled run claimed once per period. A test
// plays what the index's database and the other processes do: a holding
// lapses (Lapse), another process takes a lease as soon as it is free
// (TakeWhenFree).
type Leases struct {
	holder string
	*leaseTable
}

var _ fm.Leases = (*Leases)(nil)

// leaseTable is what the processes share: the leases held and the claims
// of scheduled runs.
type leaseTable struct {
	mu       sync.Mutex
	epoch    int64
	held     map[string]*fakeLease
	waiting  map[string]string // lease name: the holder that takes it once free
	claims   map[[2]string]time.Time
	released map[string][]fm.Fence // by holder
	refused  chan string
}

// fakeLease is a holding of a lease.
type fakeLease struct {
	table  *leaseTable
	holder string
	fence  fm.Fence
	lost   chan struct{}
	once   sync.Once // gives it back
}

// NewLeases returns leases no process holds, as the process named holder
// sees them.
func NewLeases(holder string) *Leases {
	return &Leases{holder: holder, leaseTable: &leaseTable{held: map[string]*fakeLease{}, waiting: map[string]string{},
		claims: map[[2]string]time.Time{}, released: map[string][]fm.Fence{}, refused: make(chan string, 1)}}
}

// Replica returns the same leases as the process named holder sees them.
func (ls *Leases) Replica(holder string) *Leases {
	return &Leases{holder: holder, leaseTable: ls.leaseTable}
}

// Acquire takes the lease named name, with a new epoch, unless a process
// holds it (this one included): then the error wraps fm.ErrLeaseHeld and
// names the holder, and Refusals is told.
func (ls *Leases) Acquire(_ context.Context, name string) (fm.Lease, error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if l := ls.held[name]; l != nil {
		select {
		case ls.refused <- name:
		default:
		}
		return nil, fmt.Errorf("%s: %w (%s holds its lease)", name, fm.ErrLeaseHeld, l.holder)
	}
	return ls.take(name, ls.holder), nil
}

// take gives the lease named name to holder; call it with mu held.
func (t *leaseTable) take(name, holder string) *fakeLease {
	t.epoch++
	l := &fakeLease{table: t, holder: holder, fence: fm.Fence{Lease: name, Epoch: t.epoch}, lost: make(chan struct{})}
	t.held[name] = l
	return l
}

// Holders returns the holder of each lease held now.
func (ls *Leases) Holders(context.Context) (map[string]string, error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	out := make(map[string]string, len(ls.held))
	for name, l := range ls.held {
		out[name] = l.holder
	}
	return out, nil
}

// ClaimScheduledRun claims a scheduled run of kind of the job named name
// unless one began, on any process, less than within ago.
func (ls *Leases) ClaimScheduledRun(_ context.Context, name, kind string, within time.Duration) (bool, error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	now, key := time.Now(), [2]string{name, kind}
	if last, ok := ls.claims[key]; ok && now.Sub(last) < within {
		return false, nil
	}
	ls.claims[key] = now
	return true, nil
}

// Check tells whether a write fenced by fence may be made to what the lease
// named name guards, as a shared index checks it: fence must be the
// lease's live holding (else the error wraps fm.ErrLeaseLost), or zero
// while no process holds the lease (else fm.ErrLeaseHeld).
func (ls *Leases) Check(name string, fence fm.Fence) error {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l := ls.held[name]
	switch {
	case fence != (fm.Fence{}) && fence.Lease != name:
		return fmt.Errorf("a write to %s under the lease of %s", name, fence.Lease)
	case fence == (fm.Fence{}) && l != nil:
		return fmt.Errorf("%s: %w (%s holds its lease)", name, fm.ErrLeaseHeld, l.holder)
	case fence == (fm.Fence{}):
		return nil
	case l == nil:
		return fmt.Errorf("%s: %w: it lapsed, or was given back", name, fm.ErrLeaseLost)
	case l.fence != fence:
		return fmt.Errorf("%s: %w: %s took it since", name, fm.ErrLeaseLost, l.holder)
	}
	return nil
}

// Lapse has this process's holding of the lease named name, if any, lapse
// and be found lost (its Lost closed), as a holding its holder could not
// renew in time; another process may take the lease.
func (ls *Leases) Lapse(name string) {
	if l := ls.lapse(name); l != nil {
		close(l.lost)
	}
}

// LapseUnseen has this process's holding of the lease named name, if any,
// lapse before its holder finds it (its Lost stays open): a process
// paused, or cut off from the index, for longer than the lease lasts.
func (ls *Leases) LapseUnseen(name string) { ls.lapse(name) }

func (ls *Leases) lapse(name string) *fakeLease {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l := ls.held[name]
	if l == nil || l.holder != ls.holder {
		return nil
	}
	delete(ls.held, name)
	ls.takeWaiting(name)
	return l
}

// TakeWhenFree has the process named holder take the lease named name as
// soon as no process holds it: now if none does. giveBack gives its
// holding back (and takes none later).
func (ls *Leases) TakeWhenFree(holder, name string) (giveBack func()) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.waiting[name] = holder
	ls.takeWaiting(name)
	return func() {
		ls.mu.Lock()
		defer ls.mu.Unlock()
		delete(ls.waiting, name)
		if l := ls.held[name]; l != nil && l.holder == holder {
			delete(ls.held, name)
		}
	}
}

// takeWaiting gives the lease named name, if free, to the holder waiting
// for it, if any; call it with mu held.
func (t *leaseTable) takeWaiting(name string) {
	if holder, ok := t.waiting[name]; ok && t.held[name] == nil {
		delete(t.waiting, name)
		t.take(name, holder)
	}
}

// Released returns the fences of the holdings this process gave back, in
// order.
func (ls *Leases) Released() []fm.Fence {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return append([]fm.Fence(nil), ls.released[ls.holder]...)
}

// Refusals is told the name of a lease whose Acquire was refused, unless
// it holds one not received yet.
func (ls *Leases) Refusals() <-chan string { return ls.refused }

func (l *fakeLease) Lost() <-chan struct{} { return l.lost }
func (l *fakeLease) Fence() fm.Fence       { return l.fence }

// Release gives the holding back, unless it lapsed; a process waiting for
// the lease takes it.
func (l *fakeLease) Release() {
	l.once.Do(func() {
		t := l.table
		t.mu.Lock()
		defer t.mu.Unlock()
		t.released[l.holder] = append(t.released[l.holder], l.fence)
		if t.held[l.fence.Lease] == l {
			delete(t.held, l.fence.Lease)
			t.takeWaiting(l.fence.Lease)
		}
	})
}
