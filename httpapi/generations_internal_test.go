package httpapi

import "testing"

// TestGenerationsKeepWhatIsInUse fills a cache of four one-byte values:
// a value asked for survives the next turn of generations, one not asked
// for is dropped by it, and no more than the bound is ever kept.
func TestGenerationsKeepWhatIsInUse(t *testing.T) {
	g := newGenerations(4, func(string, int) int { return 1 })
	for i, k := range []string{"a", "b", "c"} {
		g.put(k, i)
	}
	if _, ok := g.get("a"); !ok { // from the older generation, into the newer
		t.Fatal("a was dropped at the first turn")
	}
	g.put("d", 3) // the second turn: the older generation (b) is dropped
	for k, want := range map[string]bool{"a": true, "b": false, "c": true, "d": true} {
		if _, ok := g.get(k); ok != want {
			t.Errorf("%s kept: %v, want %v", k, ok, want)
		}
		if n := len(g.cur) + len(g.old); n > 4 {
			t.Fatalf("%d values kept, more than the bound of 4", n)
		}
	}
}
