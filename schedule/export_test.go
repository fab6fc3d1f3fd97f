package schedule

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Failures is foldermirror_sync_failures_total, for the tests of package
// schedule_test to read with testutil.
func (m *Metrics) Failures() *prometheus.CounterVec { return m.failures }

// Syncs is foldermirror_syncs_total.
func (m *Metrics) Syncs() *prometheus.CounterVec { return m.syncs }

// IncrementalTick does what a tick of the incremental schedule does.
func (sc *Scheduler) IncrementalTick() { sc.incrementalTick() }

// LastSuccess is foldermirror_sync_last_success_timestamp_seconds.
func (m *Metrics) LastSuccess() *prometheus.GaugeVec { return m.lastSuccess }

// SetAfter replaces the scheduler's time.After, with which a pending
// notified run waits for its gap; call it before any run.
func (sc *Scheduler) SetAfter(after func(time.Duration) <-chan time.Time) { sc.after = after }
