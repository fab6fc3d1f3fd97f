package schedule

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the scheduler's Prometheus metrics: how its runs went.
type Metrics struct {
	duration    *prometheus.HistogramVec
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
			Help:    "Duration of syncs that succeeded, by library (or directory:DOMAIN) and kind.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 14),
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
	reg.MustRegister(m.duration, m.failures, m.lastSuccess, m.drift, m.folders, m.permissions)
	return m
}
