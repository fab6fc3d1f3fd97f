package syncer

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the syncer's Prometheus metrics.
type Metrics struct {
	// unreadableGroups counts, by domain, the nested groups its last
	// directory sync could not read.
	unreadableGroups *prometheus.GaugeVec
}

// NewMetrics registers the syncer's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		unreadableGroups: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "foldermirror_directory_unreadable_groups",
			Help: "Groups nested in a domain's groups that its admin may not read (another organisation's, or gone), as of its last directory sync: they contribute no members.",
		}, []string{"domain"}),
	}
	reg.MustRegister(m.unreadableGroups)
	return m
}
