package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/foldermirror/foldermirror/internal/googlefake"
)

// sampleEvery is how often a callSampler reads the fake's counts.
const sampleEvery = 100 * time.Millisecond

// callSampler keeps the fake's Drive call counts, read every sampleEvery,
// so that the calls made in any second can be counted afterwards.
type callSampler struct {
	mu      sync.Mutex
	samples []callSample
}

// callSample is the fake's counts at a moment.
type callSample struct {
	at    time.Time
	calls map[string]int
}

// sampleCalls samples fake's counts until stop is called; the counts must
// not be reset meanwhile.
func sampleCalls(fake *googlefake.Server) (s *callSampler, stop func()) {
	s = &callSampler{}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(sampleEvery)
		defer tick.Stop()
		for {
			s.add(callSample{at: time.Now(), calls: fake.Calls()})
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	return s, func() { close(done); wg.Wait() }
}

func (s *callSampler) add(c callSample) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples = append(s.samples, c)
}

// count returns the calls of method ("" for every Drive method) made
// between from and to, as the samples taken last at or before each tell.
func (s *callSampler) count(method string, from, to time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return driveCount(s.at(to).calls, method) - driveCount(s.at(from).calls, method)
}

// at returns the last sample taken at or before t, the first if none was.
// Call with s.mu held.
func (s *callSampler) at(t time.Time) callSample {
	if len(s.samples) == 0 {
		return callSample{}
	}
	last := s.samples[0]
	for _, c := range s.samples {
		if c.at.After(t) {
			break
		}
		last = c
	}
	return last
}

// busiest returns the most Drive calls the samples show in one second
// between from and to, and when that second began.
func (s *callSampler) busiest(from, to time.Time) (int, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	most, when := 0, from
	j := 0
	for i, c := range s.samples {
		if c.at.Before(from) || c.at.Add(time.Second).After(to) {
			continue
		}
		j = max(j, i)
		for j < len(s.samples)-1 && s.samples[j].at.Before(c.at.Add(time.Second)) {
			j++
		}
		if n := driveCount(s.samples[j].calls, "") - driveCount(c.calls, ""); n > most {
			most, when = n, c.at
		}
	}
	return most, when
}

// pollsUnderWay is how many changes.list calls in the last second tell
// that a round of safety-net polls is under way.
const pollsUnderWay = 4

// waitPolling waits until the samples show a round of safety-net polls
// under way.
func (s *callSampler) waitPolling(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		now := time.Now()
		if s.count(callChanges, now.Add(-time.Second), now) >= pollsUnderWay {
			return nil
		}
		if now.After(deadline) {
			return fmt.Errorf("no safety-net polls under way for %s", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(sampleEvery):
		}
	}
}

// driveCount returns the count of method in calls, or with method "" the sum
// of every Drive method's.
func driveCount(calls map[string]int, method string) int {
	if method != "" {
		return calls[method]
	}
	n := 0
	for m, c := range calls {
		if strings.HasPrefix(m, "drive.") {
			n += c
		}
	}
	return n
}

// callsBetween returns the Drive calls by method from the counts before
// to those after.
func callsBetween(before, after map[string]int) (int, map[string]int) {
	n, out := 0, map[string]int{}
	for m, c := range after {
		if d := c - before[m]; strings.HasPrefix(m, "drive.") && d != 0 {
			out[m] = d
			n += d
		}
	}
	return n, out
}
