package syncer

import "github.com/prometheus/client_golang/prometheus"

// UnreadableGroups is foldermirror_directory_unreadable_groups, for the
// tests of package syncer_test to read with testutil.
func (m *Metrics) UnreadableGroups() *prometheus.GaugeVec { return m.unreadableGroups }
