package schedule

import "github.com/prometheus/client_golang/prometheus"

// Failures is foldermirror_sync_failures_total, for the tests of package
// schedule_test to read with testutil.
func (m *Metrics) Failures() *prometheus.CounterVec { return m.failures }
