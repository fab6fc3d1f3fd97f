package syncer

import "github.com/prometheus/client_golang/prometheus"

// Failures is foldermirror_sync_failures_total, for the tests of package
// syncer_test to read with testutil.
func (m *Metrics) Failures() *prometheus.CounterVec { return m.failures }

// UnreadableGroups is foldermirror_directory_unreadable_groups, for the
// tests of package syncer_test to read with testutil.
func (m *Metrics) UnreadableGroups() *prometheus.GaugeVec { return m.unreadableGroups }
