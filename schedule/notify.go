package schedule

import (
	"time"

	fm "github.com/foldermirror/foldermirror"
)

// notifyLeaseWait bounds how long a notified run waits for its library's
// lease while another process (a replica sharing the index) holds it: an
// incremental sync there ends well within it, so that a notification that
// arrives during a sync elsewhere still brings one more sync after it. It
// is as long as `foldermirror sync` waits. The waiting run holds a concurrency slot, as
// every run does; past the bound (another process's long full sync), it
// fails naming the holder, and the next scheduled sync brings the change.
const notifyLeaseWait = time.Minute

// notifyGap is how long a notified run started as the library's previous
// run ended waits before it syncs, so that the notifications of a burst of
// changes (Drive posts one a change, or nearly) bring a sync a tenth of a
// second or so, not one after another back to back; a notification while
// nothing runs starts its sync at once.
const notifyGap = 100 * time.Millisecond

// notified are the options of a run a notification starts: no schedule (it
// is never skipped as a run another process made), and a wait for the lease.
var notified = RunOptions{LeaseWait: notifyLeaseWait}

// Notify asks for an incremental sync of a library because Drive said its
// feed changed: started now unless one runs, else one more after the
// running one (at most one pending, however many calls). A run whose lease
// another process holds waits for it (another replica's sync, up to a
// minute) rather than being skipped. Unknown libraries (and directories)
// are ignored, and so is every call once Stop began.
func (sc *Scheduler) Notify(libraryID string) {
	if !sc.plan.hasLibrary(libraryID) {
		sc.logger.Debug("notification for a library not synced ignored", "library", libraryID)
		return
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.ctx.Err() != nil {
		return
	}
	if j, running := sc.running[libraryID]; running {
		if !j.settling { // a settling run has read nothing yet: it covers this
			sc.pending[libraryID] = true
		}
		return
	}
	sc.start(libraryID, fm.SyncAuto, notified)
}

// startPending starts the notified run pending for name, if any, unless the
// scheduler stopped. Call with sc.mu held, once name's run ended.
func (sc *Scheduler) startPending(name string) {
	if !sc.pending[name] {
		return
	}
	delete(sc.pending, name)
	if sc.ctx.Err() == nil {
		sc.launch(&job{name: name, mode: fm.SyncAuto, opts: notified, settle: sc.notifyGap, settling: sc.notifyGap > 0})
	}
}

// settle waits for j's settle time, if any, unless the scheduler stops.
func (sc *Scheduler) settle(j *job) error {
	if j.settle <= 0 {
		return nil
	}
	select {
	case <-sc.after(j.settle):
	case <-j.ctx.Done():
		return j.ctx.Err()
	}
	sc.mu.Lock()
	j.settling = false
	sc.mu.Unlock()
	return nil
}

// OnIncrementalTick has fn called (in its own goroutine, so that it never
// holds the schedule up) at each tick of the incremental schedule; set it
// before Start. fn is told the tick's within: a scheduled run that another
// process sharing the index began less than within ago makes this tick's
// redundant (9/10 of the schedule's period, as for the scheduler's own
// runs).
func (sc *Scheduler) OnIncrementalTick(fn func(within time.Duration)) { sc.onIncrementalTick = fn }
