// Package timeq is a queue of keyed entries, each due at a time, earliest
// first: the scheduler's queued runs and the push keeper's planned looks at
// its feeds, thousands of them, in one heap rather than a goroutine or a
// timer each.
package timeq

import (
	"container/heap"
	"time"
)

// Queue holds at most one entry a key, each with a value, earliest first,
// then first added. The zero Queue is empty and ready to use; it is not
// safe for concurrent use.
type Queue[V any] struct {
	h      entries[V]
	byKey  map[string]*entry[V]
	nextID uint64
}

type entry[V any] struct {
	key   string
	at    time.Time
	value V
	seq   uint64
	pos   int // in the heap
}

// Add queues key at time at with value v. A key queued already keeps its
// value, and its time unless at is sooner.
func (q *Queue[V]) Add(key string, at time.Time, v V) {
	if e, ok := q.byKey[key]; ok {
		if at.Before(e.at) {
			e.at = at
			heap.Fix(&q.h, e.pos)
		}
		return
	}
	if q.byKey == nil {
		q.byKey = map[string]*entry[V]{}
	}
	q.nextID++
	e := &entry[V]{key: key, at: at, value: v, seq: q.nextID}
	q.byKey[key] = e
	heap.Push(&q.h, e)
}

// Remove drops key's entry, if any.
func (q *Queue[V]) Remove(key string) {
	if e, ok := q.byKey[key]; ok {
		heap.Remove(&q.h, e.pos)
		delete(q.byKey, key)
	}
}

// Peek returns the earliest entry without taking it; false if none.
func (q *Queue[V]) Peek() (key string, at time.Time, v V, ok bool) {
	if len(q.h) == 0 {
		return "", time.Time{}, v, false
	}
	e := q.h[0]
	return e.key, e.at, e.value, true
}

// Pop takes the earliest entry and returns it; false if none.
func (q *Queue[V]) Pop() (key string, at time.Time, v V, ok bool) {
	if len(q.h) == 0 {
		return "", time.Time{}, v, false
	}
	e := heap.Pop(&q.h).(*entry[V])
	delete(q.byKey, e.key)
	return e.key, e.at, e.value, true
}

// Len is the number of entries.
func (q *Queue[V]) Len() int { return len(q.h) }

// entries is the heap of a Queue.
type entries[V any] []*entry[V]

func (h entries[V]) Len() int { return len(h) }
func (h entries[V]) Less(i, k int) bool {
	if !h[i].at.Equal(h[k].at) {
		return h[i].at.Before(h[k].at)
	}
	return h[i].seq < h[k].seq
}
func (h entries[V]) Swap(i, k int) {
	h[i], h[k] = h[k], h[i]
	h[i].pos, h[k].pos = i, k
}
func (h *entries[V]) Push(x any) {
	e := x.(*entry[V])
	e.pos = len(*h)
	*h = append(*h, e)
}
func (h *entries[V]) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}
