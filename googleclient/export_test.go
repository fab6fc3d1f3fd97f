package googleclient

import "github.com/prometheus/client_golang/prometheus"

// Requests is foldermirror_google_requests_total, for the tests of package
// googleclient_test to read with testutil.
func (m *Metrics) Requests() *prometheus.CounterVec { return m.requests }
