package googleclient

import (
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the Prometheus metrics of the requests sent to Google.
type Metrics struct {
	requests *prometheus.CounterVec
	retries  *prometheus.CounterVec
}

// NewMetrics registers the metrics of the requests sent to Google with reg.
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
	}
	reg.MustRegister(m.requests, m.retries)
	return m
}

// apiMethod names the Google API method a request calls, by its path:
// Drive's and the Directory API's as their discovery documents name them
// (drive.files.list, ...), the token endpoint's oauth2.token, and "other"
// for any path none of these has.
func apiMethod(r *http.Request) string {
	p := r.URL.Path
	switch {
	case strings.HasSuffix(p, "/changes/startPageToken"):
		return "drive.changes.getStartPageToken"
	case strings.HasSuffix(p, "/changes/watch"):
		return "drive.changes.watch"
	case strings.HasSuffix(p, "/channels/stop"):
		return "drive.channels.stop"
	case strings.HasSuffix(p, "/changes"):
		return "drive.changes.list"
	case strings.HasSuffix(p, "/permissions"):
		return "drive.permissions.list"
	case strings.HasSuffix(p, "/files"):
		return "drive.files.list"
	case strings.Contains(p, "/files/"):
		return "drive.files.get"
	case strings.HasSuffix(p, "/drives"):
		return "drive.drives.list"
	case strings.Contains(p, "/drives/"):
		return "drive.drives.get"
	case strings.HasSuffix(p, "/members"):
		return "directory.members.list"
	case strings.HasSuffix(p, "/users"):
		return "directory.users.list"
	case strings.HasSuffix(p, "/groups"):
		return "directory.groups.list"
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/token"):
		return "oauth2.token"
	}
	return "other"
}
