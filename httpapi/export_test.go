package httpapi

import "github.com/prometheus/client_golang/prometheus"

// Requests is foldermirror_api_requests_total, for the tests of package
// httpapi_test to read with testutil.
func (m *Metrics) Requests() *prometheus.CounterVec { return m.requests }

// Durations is foldermirror_api_request_duration_seconds, for the tests of
// package httpapi_test.
func (m *Metrics) Durations() *prometheus.HistogramVec { return m.duration }

// AuthFailures is foldermirror_auth_failures_total, for the tests of package
// httpapi_test to read with testutil.
func (m *Metrics) AuthFailures() *prometheus.CounterVec { return m.authFailures }
