package httpapi

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// budgets hold each caller's request budget: a token bucket per identity.
type budgets struct {
	limit rate.Limit
	burst int

	mu      sync.Mutex
	callers map[string]*budget
}

type budget struct {
	limiter  *rate.Limiter
	lastSeen time.Time
}

// Idle callers are forgotten once there are this many.
const (
	budgetSweepAt = 10_000
	budgetIdleFor = 10 * time.Minute
)

func newBudgets(perSecond float64, burst int) *budgets {
	return &budgets{limit: rate.Limit(perSecond), burst: max(1, burst), callers: map[string]*budget{}}
}

// take spends one request of a caller's budget; when it is spent, it tells
// how long until the caller may ask again.
func (b *budgets) take(caller string) (time.Duration, bool) {
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	c, ok := b.callers[caller]
	if !ok {
		if len(b.callers) >= budgetSweepAt {
			b.sweep(now)
		}
		c = &budget{limiter: rate.NewLimiter(b.limit, b.burst)}
		b.callers[caller] = c
	}
	c.lastSeen = now
	r := c.limiter.ReserveN(now, 1)
	if wait := r.DelayFrom(now); wait > 0 {
		r.CancelAt(now)
		return wait, false
	}
	return 0, true
}

func (b *budgets) sweep(now time.Time) {
	for k, c := range b.callers {
		if now.Sub(c.lastSeen) > budgetIdleFor {
			delete(b.callers, k)
		}
	}
}
