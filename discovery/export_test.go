package discovery

import "github.com/prometheus/client_golang/prometheus"

// Libraries is foldermirror_discovered_libraries, for the tests to read.
func (m *Metrics) Libraries() *prometheus.GaugeVec { return m.libraries }
