package schedule

import "github.com/prometheus/client_golang/prometheus"

// Failures is foldermirror_sync_failures_total, for the tests of package
// schedule_test to read with testutil.
func (m *Metrics) Failures() *prometheus.CounterVec { return m.failures }

// IncrementalTick does what a tick of the incremental schedule does.
func (sc *Scheduler) IncrementalTick() { sc.incrementalTick() }

// LastSuccess is foldermirror_sync_last_success_timestamp_seconds.
func (m *Metrics) LastSuccess() *prometheus.GaugeVec { return m.lastSuccess }
