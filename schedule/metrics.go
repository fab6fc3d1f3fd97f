package schedule

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the scheduler's Prometheus metrics: how its runs went.
//
// A series per library costs the process some 400 bytes (a histogram of
// 14 buckets, 1.4 KB) and the Prometheus server as much again; with
// thousands of discovered libraries, the durations are therefore kept by
// kind alone, and a library's series are deleted when it leaves the set.
type Metrics struct {
	duration    *prometheus.HistogramVec
	syncs       *prometheus.CounterVec
	failures    *prometheus.CounterVec
	lastSuccess *prometheus.GaugeVec
	drift       *prometheus.GaugeVec
	folders     *prometheus.GaugeVec
	permissions *prometheus.GaugeVec
}

// NewMetrics registers the scheduler's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "foldermirror_sync_duration_seconds",
			Help:    "Duration of syncs that succeeded, of every library together, by kind (full, incremental, directory).",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 14),
		}, []string{"kind"}),
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "foldermirror_syncs_total",
			Help: "Syncs that succeeded, by library (or directory:DOMAIN) and kind.",
		}, []string{"library", "kind"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "foldermirror_sync_failures_total",
			Help: "Syncs that failed, by library (or directory:DOMAIN) and kind.",
		}, []string{"library", "kind"}),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "foldermirror_sync_last_success_timestamp_seconds",
			Help: "When the last successful sync of each kind ended.",
		}, []string{"library", "kind"}),
		drift: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "foldermirror_sync_drift_folders",
			Help: "Folders the last full sync of a library found different from the index.",
		}, []string{"library"}),
		folders: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "foldermirror_library_folders",
			Help: "Folders of each library in the index.",
		}, []string{"library"}),
		permissions: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "foldermirror_library_permissions",
			Help: "Drive permissions of each library's folders in the index.",
		}, []string{"library"}),
	}
	reg.MustRegister(m.duration, m.syncs, m.failures, m.lastSuccess, m.drift, m.folders, m.permissions)
	return m
}

// forget deletes the series of a library that left the set.
func (m *Metrics) forget(library string) {
	match := prometheus.Labels{"library": library}
	m.syncs.DeletePartialMatch(match)
	m.failures.DeletePartialMatch(match)
	m.lastSuccess.DeletePartialMatch(match)
	m.drift.DeletePartialMatch(match)
	m.folders.DeletePartialMatch(match)
	m.permissions.DeletePartialMatch(match)
}
