// Package wait bounds the waits of tests: a test waiting for an event fails
// after Bound, saying what it waited for, instead of hanging until go test's
// timeout.
package wait

import (
	"sync"
	"testing"
	"time"
)

// Bound is how long a test waits for an event before it fails.
const Bound = 10 * time.Second

// pollEvery is how often Until looks at its condition.
const pollEvery = 5 * time.Millisecond

// Receive returns the next value of ch (the zero value once ch is closed),
// failing t, which names what, if none comes within Bound. Call it from the
// test's goroutine.
func Receive[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	return receiveWithin(t, ch, what, Bound)
}

// receiveWithin is Receive with its bound.
func receiveWithin[T any](t testing.TB, ch <-chan T, what string, bound time.Duration) T {
	t.Helper()
	timer := time.NewTimer(bound)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("waited %v for %s", bound, what)
		var zero T
		return zero // only with a t whose Fatalf returns
	}
}

// Until returns once cond holds, failing t, which names what, if it does
// not within Bound. Call it from the test's goroutine.
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	untilWithin(t, what, cond, Bound)
}

// untilWithin is Until with its bound.
func untilWithin(t testing.TB, what string, cond func() bool, bound time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(bound); !cond(); time.Sleep(pollEvery) {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", bound, what)
			return
		}
	}
}

// Group returns once wg's goroutines are done, failing t, which names what,
// if they are not within Bound. Call it from the test's goroutine.
func Group(t testing.TB, wg *sync.WaitGroup, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	Receive(t, done, what)
}
