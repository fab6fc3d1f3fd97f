package timeq_test

import (
	"testing"
	"time"

	"github.com/foldermirror/foldermirror/internal/timeq"
)

func TestQueue(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	var q timeq.Queue[int]
	if _, _, _, ok := q.Pop(); ok {
		t.Fatal("an empty queue popped")
	}
	q.Add("c", t0.Add(3*time.Second), 3)
	q.Add("a", t0.Add(time.Second), 1)
	q.Add("b", t0.Add(time.Second), 2) // same time as a, added after: after a
	q.Add("c", t0, 30)                 // sooner: moves, keeps its value
	q.Add("a", t0.Add(time.Hour), 10)  // later: changes nothing
	q.Add("gone", t0.Add(2*time.Second), 0)
	q.Remove("gone")
	q.Remove("never")
	if key, at, v, ok := q.Peek(); !ok || key != "c" || !at.Equal(t0) || v != 3 || q.Len() != 3 {
		t.Fatalf("Peek = %s %v %d %v, len %d; want c at t0 with its first value", key, at, v, ok, q.Len())
	}
	var got []string
	for {
		key, _, _, ok := q.Pop()
		if !ok {
			break
		}
		got = append(got, key)
	}
	if want := []string{"c", "a", "b"}; len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("popped %v, want %v", got, want)
	}
	q.Add("a", t0, 1) // a key popped may come again
	if q.Len() != 1 {
		t.Errorf("len %d after adding a key popped before", q.Len())
	}
}
