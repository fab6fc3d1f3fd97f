package httpapi

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// budgets hold each caller's request budget: a token bucket per identity.
//
// Callers are kept in two generations: the current one and the previous
// one. A caller's request looks it up in the current generation, then in
// the previous one (moving it to the current), so that an active caller
// keeps its bucket; when the current generation has lasted its time, or
// holds maxGeneration callers, the previous one is dropped whole and the
// current one becomes the previous. A caller idle for two generations is
// thus forgotten, and a request's work stays a lookup or two, however many
// callers there are (no sweep).
type budgets struct {
	limit rate.Limit
	burst int
	// lasts is a generation's time: budgetIdleFor, or the time an empty
	// bucket takes to fill if longer, so that a caller forgotten for idling
	// would have had a full bucket anyway.
	lasts         time.Duration
	maxGeneration int
	now           func() time.Time

	mu       sync.Mutex
	current  map[string]*rate.Limiter
	previous map[string]*rate.Limiter
	began    time.Time // of the current generation
	// examined counts the callers take looked up, for tests to bound the
	// work of a request.
	examined int
}

const (
	// budgetIdleFor is the shortest time a caller is kept without a
	// request.
	budgetIdleFor = 10 * time.Minute
	// maxBudgetGeneration bounds the callers of a generation: past it, the
	// generations turn early, so that a flood of new identities cannot
	// grow memory without bound (it may then forget an idle caller early,
	// whose bucket starts full again).
	maxBudgetGeneration = 100_000
)

func newBudgets(perSecond float64, burst int) *budgets {
	b := &budgets{limit: rate.Limit(perSecond), burst: max(1, burst), lasts: budgetIdleFor,
		maxGeneration: maxBudgetGeneration, now: time.Now,
		current: map[string]*rate.Limiter{}, previous: map[string]*rate.Limiter{}}
	if perSecond > 0 {
		b.lasts = max(b.lasts, time.Duration(float64(b.burst)/perSecond*float64(time.Second)))
	}
	return b
}

// take spends one request of a caller's budget; when it is spent, it tells
// how long until the caller may ask again.
func (b *budgets) take(caller string) (time.Duration, bool) {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	limiter := b.limiter(caller, now)
	r := limiter.ReserveN(now, 1)
	if wait := r.DelayFrom(now); wait > 0 {
		r.CancelAt(now)
		return wait, false
	}
	return 0, true
}

// limiter returns a caller's bucket, in the current generation. Call with
// b.mu held.
func (b *budgets) limiter(caller string, now time.Time) *rate.Limiter {
	if now.Sub(b.began) >= b.lasts || len(b.current) >= b.maxGeneration {
		b.previous, b.current, b.began = b.current, map[string]*rate.Limiter{}, now
	}
	b.examined++
	if l, ok := b.current[caller]; ok {
		return l
	}
	b.examined++
	l, ok := b.previous[caller]
	if ok {
		delete(b.previous, caller)
	} else {
		l = rate.NewLimiter(b.limit, b.burst)
	}
	b.current[caller] = l
	return l
}
