package syncer

import (
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the syncer's Prometheus metrics.
type Metrics struct {
	requests    *prometheus.CounterVec
	retries     *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	failures    *prometheus.CounterVec
	lastSuccess *prometheus.GaugeVec
	drift       *prometheus.GaugeVec
	folders     *prometheus.GaugeVec
	permissions *prometheus.GaugeVec
	// unreadableGroups counts, by domain, the nested groups its last
	// directory sync could not read.
	unreadableGroups *prometheus.GaugeVec
}

// NewMetrics registers the syncer's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "foldermirror_google_requests_total",
			Help: "Requests sent to Google's APIs (Drive, Directory, OAuth), retries included, by method and HTTP status ('error': no answer).",
		}, []string{"method", "code"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "foldermirror_google_retries_total",
			Help: "Requests to Google's APIs retried after a transient failure, by method.",
		}, []string{"method"}),
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
		unreadableGroups: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "foldermirror_directory_unreadable_groups",
			Help: "Groups nested in a domain's groups that its admin may not read (another organisation's, or gone), as of its last directory sync: they contribute no members.",
		}, []string{"domain"}),
	}
	reg.MustRegister(m.requests, m.retries, m.duration, m.failures, m.lastSuccess, m.drift, m.folders, m.permissions,
		m.unreadableGroups)
	return m
}

// apiMethod names the Google API method a request calls.
func apiMethod(r *http.Request) string {
	p := r.URL.Path
	switch {
	case strings.HasSuffix(p, "/changes/startPageToken"):
		return "drive.changes.getStartPageToken"
	case strings.HasSuffix(p, "/changes"):
		return "drive.changes.list"
	case strings.HasSuffix(p, "/permissions"):
		return "drive.permissions.list"
	case strings.HasSuffix(p, "/files"):
		return "drive.files.list"
	case strings.Contains(p, "/files/"):
		return "drive.files.get"
	case strings.Contains(p, "/drives/"):
		return "drive.drives.get"
	case strings.HasSuffix(p, "/members"):
		return "directory.members.list"
	case strings.HasSuffix(p, "/users"):
		return "directory.users.list"
	case strings.HasSuffix(p, "/groups"):
		return "directory.groups.list"
	case r.Method == http.MethodPost:
		return "oauth2.token"
	}
	return "other"
}
