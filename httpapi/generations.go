package httpapi

import "sync"

// generations keeps values up to about maxBytes, as size counts them: two
// generations, the older dropped when the newer fills its half, so that
// values in use stay (one found in the older generation moves to the
// newer), those no longer asked for go, and the memory kept never grows
// past its bound. It is safe for concurrent use.
type generations[K comparable, V any] struct {
	mu       sync.Mutex
	cur, old map[K]V
	curBytes int
	maxBytes int
	size     func(K, V) int
}

func newGenerations[K comparable, V any](maxBytes int, size func(K, V) int) *generations[K, V] {
	return &generations[K, V]{cur: map[K]V{}, maxBytes: maxBytes, size: size}
}

// get returns the value kept for k.
func (g *generations[K, V]) get(k K) (V, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if v, ok := g.cur[k]; ok {
		return v, true
	}
	v, ok := g.old[k]
	if ok {
		g.add(k, v)
	}
	return v, ok
}

// put keeps v for k.
func (g *generations[K, V]) put(k K, v V) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.add(k, v)
}

// add keeps v in the newer generation. Call with g.mu held.
func (g *generations[K, V]) add(k K, v V) {
	n := g.size(k, v)
	if g.curBytes+n > g.maxBytes/2 {
		g.old, g.cur, g.curBytes = g.cur, map[K]V{}, 0
	}
	g.cur[k] = v
	g.curBytes += n
}
