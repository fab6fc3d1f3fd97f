// Package gcpace paces Go's garbage collector for a process whose live heap
// ranges from a few megabytes to hundreds: between collections the heap may
// grow by a percentage of what is live, as GOGC says, but never by less than
// a floor.
//
// With GOGC alone, a small live heap is collected after every few megabytes
// of allocation: a sync that allocates a hundred megabytes of short-lived
// pages while its stage is still small pays for dozens of collections, each
// with a fixed cost. A floor on the growth bounds their number while the heap
// is small, and leaves the peak of a large heap, where the percentage is the
// larger, as GOGC makes it.
package gcpace

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// liveHeapMetric is the heap the last collection found live.
const liveHeapMetric = "/gc/heap/live:bytes"

// heapMinimum is the runtime's smallest heap goal at GOGC=100; it scales
// with GOGC, so a GOGC set for a nearly empty heap must not scale it past
// the floor.
const heapMinimum = 4 << 20

// Pacer sets GOGC after each collection so that the heap may grow by at
// least its floor before the next. Stop ends its work.
type Pacer struct {
	percent int
	floor   uint64
	stopped atomic.Bool

	// Only the cleanup that runs after each collection touches these.
	sample []metrics.Sample
	set    int
}

// Start paces the collector with percent (GOGC's meaning) and floor (in
// bytes): after each collection, GOGC becomes the larger of percent and
// the percentage of the live heap that floor is. It sets GOGC at once from
// the last collection's live heap.
func Start(percent int, floor uint64) *Pacer {
	p := &Pacer{percent: percent, floor: floor, sample: []metrics.Sample{{Name: liveHeapMetric}}, set: -1}
	p.adjust()
	p.arm()
	return p
}

// Stop sets GOGC back to the Pacer's percent and stops pacing; a
// collection already under way may still set it once more.
func (p *Pacer) Stop() {
	p.stopped.Store(true)
	debug.SetGCPercent(p.percent)
}

// PercentFor is the GOGC that lets a heap of live bytes grow by at least
// floor bytes, and by no less than percent of itself, before it is
// collected again.
func PercentFor(live uint64, percent int, floor uint64) int {
	most := float64(floor) * 100 / heapMinimum
	need := most
	if live > 0 {
		need = min(math.Ceil(float64(floor)*100/float64(live)), most)
	}
	return max(percent, int(need))
}

// sentinel is allocated for each collection and dropped at once: its
// cleanup runs after the collection that finds it gone. It holds a pointer
// so that it is not a tiny allocation, which could outlive it.
type sentinel struct {
	_ *byte
	_ [8]byte
}

// arm allocates the next sentinel.
func (p *Pacer) arm() {
	runtime.AddCleanup(new(sentinel), func(p *Pacer) {
		if p.stopped.Load() {
			return
		}
		p.adjust()
		p.arm()
	}, p)
}

// adjust sets GOGC from the live heap the last collection found.
func (p *Pacer) adjust() {
	metrics.Read(p.sample)
	var live uint64
	if p.sample[0].Value.Kind() == metrics.KindUint64 {
		live = p.sample[0].Value.Uint64()
	}
	if percent := PercentFor(live, p.percent, p.floor); percent != p.set {
		p.set = percent
		debug.SetGCPercent(percent)
	}
}
