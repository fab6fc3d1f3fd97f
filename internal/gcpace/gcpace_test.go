package gcpace_test

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/foldermirror/foldermirror/internal/gcpace"
)

func TestPercentFor(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		name    string
		live    uint64
		percent int
		floor   uint64
		want    int
	}{
		{"a large heap grows by its percentage", 200 * mb, 50, 32 * mb, 50},
		{"where the percentage is the floor", 64 * mb, 50, 32 * mb, 50},
		{"a small heap grows by the floor", 16 * mb, 50, 32 * mb, 200},
		{"rounded up", 7 * mb, 50, 32 * mb, 458},
		{"nearly empty: no more than the runtime's minimum heap scaled to the floor", 1 << 10, 50, 32 * mb, 800},
		{"nothing live yet", 0, 50, 32 * mb, 800},
		{"no floor", 1 * mb, 100, 0, 100},
		{"a floor below the minimum heap", 0, 100, 2 * mb, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := gcpace.PercentFor(tc.live, tc.percent, tc.floor); got != tc.want {
				t.Errorf("PercentFor(%d, %d, %d) = %d, want %d", tc.live, tc.percent, tc.floor, got, tc.want)
			}
		})
	}
}

// gcPercent returns GOGC as the runtime has it.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestPacerFollowsTheLiveHeap checks that GOGC follows the live heap after
// each collection: raised while little is live, back to the percentage once
// much is, and back to it when the pacer stops.
func TestPacerFollowsTheLiveHeap(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	const percent, floor = 50, 16 << 20
	p := gcpace.Start(percent, floor)
	defer p.Stop()

	waitFor := func(what string, ok func(int) bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			runtime.GC()
			if ok(gcPercent()) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: GOGC is %d with %d bytes live", what, gcPercent(), liveHeap())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("little live", func(p int) bool {
		return p == gcpace.PercentFor(liveHeap(), percent, floor) && p > percent
	})

	held := make([]*[1 << 20]byte, 64) // 64 MB live: a floor of 16 MB is a quarter of it
	for i := range held {
		held[i] = new([1 << 20]byte)
	}
	waitFor("much live", func(p int) bool { return p == percent })
	runtime.KeepAlive(held)

	p.Stop()
	if got := gcPercent(); got != percent {
		t.Errorf("after Stop, GOGC is %d, want %d", got, percent)
	}
}
