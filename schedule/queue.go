package schedule

import (
	"time"

	fm "github.com/foldermirror/foldermirror"
)

// Scheduled runs (at start, on the cron schedules) wait in a queue (a
// timeq.Queue) rather than each in a goroutine of its own: with thousands
// of libraries a tick makes thousands of them. One dispatcher launches them, each at its time,
// while fewer runs than storage.concurrency are under way; a run that a
// notification or a request starts launches at once, so that it takes the
// next free slot before any scheduled run (DESIGN §10: a feed Drive
// notified goes before any scheduled poll).

// spreadAbove is how many libraries an incremental round polls at once:
// a larger round is spread over the schedule's period.
const spreadAbove = 64

// spreadShare is the share of the period between two incremental ticks
// over which a round is spread, leaving the rest for a round that runs late.
const spreadShare = 0.8

// dueRun is a scheduled run waiting for its time and a slot.
type dueRun struct {
	mode fm.SyncMode
	opts RunOptions
}

// spreadInterval is the time between the starts of two runs of a round of
// n incremental polls, with period until the next round: none for a small
// round; else the round spread over spreadShare of the period, but never
// faster than minInterval (the polls' share of the rate of calls to Drive).
func spreadInterval(n int, period, minInterval time.Duration) time.Duration {
	if n <= spreadAbove {
		return 0
	}
	return max(time.Duration(float64(period)*spreadShare)/time.Duration(n), minInterval)
}

// enqueue queues a scheduled run of name at time at. A full run replaces a
// run of name queued already (it covers an incremental one); another run is
// kept, moved to at if that is sooner. Call with sc.mu held.
func (sc *Scheduler) enqueue(name string, mode fm.SyncMode, opts RunOptions, at time.Time) {
	if mode == fm.SyncFull {
		sc.due.Remove(name)
	}
	sc.due.Add(name, at, dueRun{mode: mode, opts: opts})
	sc.wakeDispatcher()
}

// wakeDispatcher has the dispatcher look at the queue again.
func (sc *Scheduler) wakeDispatcher() {
	select {
	case sc.wake <- struct{}{}:
	default:
	}
}

// dispatch launches the queued runs as they come due and slots free up,
// until the scheduler stops.
func (sc *Scheduler) dispatch() {
	defer sc.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		sc.mu.Lock()
		wait := sc.launchDue()
		sc.mu.Unlock()
		if wait > 0 {
			timer.Reset(wait)
		} else {
			timer.Reset(time.Hour)
		}
		select {
		case <-sc.wake:
		case <-timer.C:
		case <-sc.ctx.Done():
			return
		}
	}
}

// launchDue launches the queued runs that are due while fewer runs than the
// concurrency are under way, and returns how long until the next is due (0
// if none waits, or the slots are full). A queued run of a job that runs
// now is dropped: the run under way covers it. Call with sc.mu held.
func (sc *Scheduler) launchDue() time.Duration {
	for sc.ctx.Err() == nil && sc.active < cap(sc.slots) {
		_, at, _, ok := sc.due.Peek()
		if !ok {
			return 0
		}
		if wait := at.Sub(sc.now()); wait > 0 {
			return wait
		}
		name, _, r, _ := sc.due.Pop()
		if _, running := sc.running[name]; running || !sc.plan.has(name) {
			continue
		}
		sc.launch(&job{name: name, mode: r.mode, opts: r.opts})
	}
	return 0
}
