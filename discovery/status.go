package discovery

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// DomainStatus is what /status says of a domain's discovery.
type DomainStatus struct {
	Domain         string `json:"domain"`
	StorageAccount string `json:"storageAccount"`
	// Found counts the drives the account is a member of; Included those
	// the patterns include (the domain's discovered libraries, a drive also
	// configured under libraries included); Excluded the others.
	Found    int `json:"found"`
	Included int `json:"included"`
	Excluded int `json:"excluded"`
	// LastDiscovery is when the last discovery ended, by any process;
	// LastError why it failed, if it did.
	LastDiscovery time.Time `json:"lastDiscovery,omitzero"`
	LastError     string    `json:"lastError,omitempty"`
}

// Status returns each discovering domain's status, in the configuration's
// order.
func (d *Discoverer) Status() []DomainStatus {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]DomainStatus, 0, len(d.opts.Rules))
	for i := range d.opts.Rules {
		r := &d.opts.Rules[i]
		st := DomainStatus{Domain: r.Domain, StorageAccount: r.StorageAccount}
		if rec, ok := d.known[r.Domain]; ok {
			st.LastDiscovery, st.LastError, st.Found = rec.At, rec.Error, len(rec.Drives)
			for _, dr := range rec.Drives {
				if r.Includes(dr.Name) {
					st.Included++
				}
			}
			st.Excluded = st.Found - st.Included
		}
		out = append(out, st)
	}
	return out
}

// Metrics are discovery's Prometheus metrics.
type Metrics struct {
	libraries *prometheus.GaugeVec
	failures  *prometheus.CounterVec
}

// NewMetrics registers discovery's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		libraries: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "foldermirror_discovered_libraries",
			Help: "Shared drives discovered and served as libraries, by domain.",
		}, []string{"domain"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "foldermirror_discovery_failures_total",
			Help: "Shared drive discoveries that failed, by domain.",
		}, []string{"domain"}),
	}
	reg.MustRegister(m.libraries, m.failures)
	return m
}
