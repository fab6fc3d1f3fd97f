package push

import (
	"time"

	"github.com/foldermirror/foldermirror/internal/timeq"
)

// plan is the keeper's schedule: when each feed must next be looked at,
// one entry a feed, earliest first (then first planned). One loop works through
// it (no goroutine, no timer a feed), so that 10,000 feeds cost 10,000
// small entries. The zero time is a valid time, before any other: that of
// the feeds whose channels must be stopped at once.
type plan struct {
	q timeq.Queue[struct{}]
}

func newPlan() plan { return plan{} }

// add plans a look at the feed keyed key at time at, or sooner if one is
// planned sooner already.
func (p *plan) add(key string, at time.Time) { p.q.Add(key, at, struct{}{}) }

// first returns the earliest look planned, without taking it; !ok if none
// is.
func (p *plan) first() (key string, at time.Time, ok bool) {
	key, at, _, ok = p.q.Peek()
	return key, at, ok
}

// remove drops the look planned at the feed keyed key, if any.
func (p *plan) remove(key string) { p.q.Remove(key) }
