package push

import (
	"container/heap"
	"time"
)

// plan is the keeper's schedule: when each feed must next be looked at,
// one entry a feed, earliest first (then by key). One loop works through
// it (no goroutine, no timer a feed), so that 10,000 feeds cost 10,000
// small entries. The zero time is a valid time, before any other: that of
// the feeds whose channels must be stopped at once.
type plan struct {
	entries []*planned
	byKey   map[string]*planned
}

// planned is a feed's entry in the plan.
type planned struct {
	key string
	at  time.Time
	pos int // in entries
}

func newPlan() plan { return plan{byKey: map[string]*planned{}} }

func (p *plan) Len() int { return len(p.entries) }
func (p *plan) Less(i, k int) bool {
	a, b := p.entries[i], p.entries[k]
	if !a.at.Equal(b.at) {
		return a.at.Before(b.at)
	}
	return a.key < b.key
}
func (p *plan) Swap(i, k int) {
	p.entries[i], p.entries[k] = p.entries[k], p.entries[i]
	p.entries[i].pos, p.entries[k].pos = i, k
}
func (p *plan) Push(x any) {
	e := x.(*planned)
	e.pos = len(p.entries)
	p.entries = append(p.entries, e)
}
func (p *plan) Pop() any {
	e := p.entries[len(p.entries)-1]
	p.entries[len(p.entries)-1] = nil
	p.entries = p.entries[:len(p.entries)-1]
	return e
}

// add plans a look at the feed keyed key at time at, or sooner if one is
// planned sooner already.
func (p *plan) add(key string, at time.Time) {
	if e, ok := p.byKey[key]; ok {
		if at.Before(e.at) {
			e.at = at
			heap.Fix(p, e.pos)
		}
		return
	}
	e := &planned{key: key, at: at}
	p.byKey[key] = e
	heap.Push(p, e)
}

// first returns the earliest look planned, without taking it; !ok if none
// is.
func (p *plan) first() (key string, at time.Time, ok bool) {
	if len(p.entries) == 0 {
		return "", time.Time{}, false
	}
	return p.entries[0].key, p.entries[0].at, true
}

// remove drops the look planned at the feed keyed key, if any.
func (p *plan) remove(key string) {
	if e, ok := p.byKey[key]; ok {
		heap.Remove(p, e.pos)
		delete(p.byKey, key)
	}
}
