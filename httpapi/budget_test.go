package httpapi

import (
	"fmt"
	"testing"
	"time"
)

// testBudgets returns budgets whose clock is *now.
func testBudgets(perSecond float64, burst int, now *time.Time) *budgets {
	b := newBudgets(perSecond, burst)
	b.now = func() time.Time { return *now }
	return b
}

// kept returns how many callers b holds.
func (b *budgets) kept() int { return len(b.current) + len(b.previous) }

// However many callers are kept, a new caller's request examines at most
// two of them (it used to sweep them all past 10,000 callers, under the
// lock every request takes).
func TestBudgetWorkPerNewCaller(t *testing.T) {
	now := time.Now()
	b := testBudgets(1000, 2000, &now)
	for i := range 30_000 {
		before := b.examined
		if _, ok := b.take(fmt.Sprintf("caller-%d@example.com", i)); !ok {
			t.Fatalf("new caller %d refused", i+1)
		}
		if n := b.examined - before; n > 2 {
			t.Fatalf("new caller %d examined %d callers, want at most 2", i+1, n)
		}
		now = now.Add(time.Millisecond)
	}
}

// An active caller keeps its bucket when the generations turn; an idle one
// is forgotten after two generations; a flood of new callers turns them
// early, and memory stays bounded.
func TestBudgetGenerations(t *testing.T) {
	start := time.Now()
	now := start
	// 1 request every 100 s, 1 at once: a generation is budgetIdleFor.
	b := testBudgets(0.01, 1, &now)
	if b.lasts != budgetIdleFor {
		t.Fatalf("a generation lasts %v, want %v", b.lasts, budgetIdleFor)
	}
	for i := range 1000 {
		b.take(fmt.Sprintf("idle-%d@example.com", i))
	}
	now = start.Add(budgetIdleFor - time.Second)
	if _, ok := b.take("active@example.com"); !ok {
		t.Fatal("the active caller's first request refused")
	}
	now = start.Add(budgetIdleFor + time.Second) // the generations turn
	if wait, ok := b.take("active@example.com"); ok || wait <= 0 {
		t.Errorf("the active caller, its bucket empty, when the generations turn: allowed (%v %v), its bucket forgotten", wait, ok)
	}
	if got := b.kept(); got != 1001 {
		t.Errorf("%d callers kept after one turn, want the 1,001 seen", got)
	}
	now = start.Add(2*budgetIdleFor + 2*time.Second) // and again
	b.take("active@example.com")
	if got := b.kept(); got != 1 {
		t.Errorf("%d callers kept after two turns, want only the active one", got)
	}

	b.maxGeneration = 100
	for i := range 1000 {
		b.take(fmt.Sprintf("flood-%d@example.com", i))
		if got := b.kept(); got > 2*b.maxGeneration {
			t.Fatalf("%d callers kept during a flood, want at most %d", got, 2*b.maxGeneration)
		}
	}
}

// A generation lasts at least the time an empty bucket takes to fill, so
// that forgetting an idle caller never hands it more than it would have
// had.
func TestBudgetGenerationOutlastsARefill(t *testing.T) {
	now := time.Now()
	if got := testBudgets(0.001, 2, &now).lasts; got != 2000*time.Second {
		t.Errorf("1 request every 1,000 s, 2 at once: a generation lasts %v, want 2000s", got)
	}
}

// BenchmarkBudgetNewCaller measures a new caller's first request with
// 10,000 callers kept, none idle.
func BenchmarkBudgetNewCaller(b *testing.B) {
	now := time.Now()
	budgets := testBudgets(1000, 2000, &now)
	for i := range 10_000 {
		budgets.take(fmt.Sprintf("kept-%d@example.com", i))
	}
	callers := make([]string, b.N)
	for i := range callers {
		callers[i] = fmt.Sprintf("new-%d@example.com", i)
	}
	b.ResetTimer()
	for i := range b.N {
		budgets.take(callers[i])
	}
}
