package schedule

import (
	"container/heap"
	"time"

	fm "github.com/foldermirror/foldermirror"
)

// Scheduled runs (at start, on the cron schedules) wait in a queue rather
// than each in a goroutine of its own: with thousands of libraries a tick
// makes thousands of them. One dispatcher launches them, each at its time,
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
	name string
	mode fm.SyncMode
	opts RunOptions
	at   time.Time
	seq  uint64
	pos  int // in the heap
}

// dueQueue holds the scheduled runs waiting, at most one a job, earliest
// first (then first queued).
type dueQueue struct {
	runs   []*dueRun
	byName map[string]*dueRun
	seq    uint64
}

func (q *dueQueue) Len() int { return len(q.runs) }
func (q *dueQueue) Less(i, k int) bool {
	a, b := q.runs[i], q.runs[k]
	if !a.at.Equal(b.at) {
		return a.at.Before(b.at)
	}
	return a.seq < b.seq
}
func (q *dueQueue) Swap(i, k int) {
	q.runs[i], q.runs[k] = q.runs[k], q.runs[i]
	q.runs[i].pos, q.runs[k].pos = i, k
}
func (q *dueQueue) Push(x any) {
	r := x.(*dueRun)
	r.pos = len(q.runs)
	q.runs = append(q.runs, r)
}
func (q *dueQueue) Pop() any {
	r := q.runs[len(q.runs)-1]
	q.runs[len(q.runs)-1] = nil
	q.runs = q.runs[:len(q.runs)-1]
	return r
}

// add queues a run of name at time at, unless one of it waits already (the
// earlier is kept: it covers this one).
func (q *dueQueue) add(name string, mode fm.SyncMode, opts RunOptions, at time.Time) {
	if q.byName == nil {
		q.byName = map[string]*dueRun{}
	}
	if _, waiting := q.byName[name]; waiting {
		return
	}
	q.seq++
	r := &dueRun{name: name, mode: mode, opts: opts, at: at, seq: q.seq}
	q.byName[name] = r
	heap.Push(q, r)
}

// remove drops the run of name waiting, if any.
func (q *dueQueue) remove(name string) {
	if r, ok := q.byName[name]; ok {
		heap.Remove(q, r.pos)
		delete(q.byName, name)
	}
}

// next returns the earliest run without taking it, nil if none waits.
func (q *dueQueue) next() *dueRun {
	if len(q.runs) == 0 {
		return nil
	}
	return q.runs[0]
}

// take removes the earliest run and returns it.
func (q *dueQueue) take() *dueRun {
	r := heap.Pop(q).(*dueRun)
	delete(q.byName, r.name)
	return r
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

// enqueue queues a scheduled run of name at time at. Call with sc.mu held.
func (sc *Scheduler) enqueue(name string, mode fm.SyncMode, opts RunOptions, at time.Time) {
	sc.due.add(name, mode, opts, at)
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
		r := sc.due.next()
		if r == nil {
			return 0
		}
		if wait := r.at.Sub(sc.now()); wait > 0 {
			return wait
		}
		sc.due.take()
		if _, running := sc.running[r.name]; running || !sc.plan.has(r.name) {
			continue
		}
		sc.launch(&job{name: r.name, mode: r.mode, opts: r.opts})
	}
	return 0
}
