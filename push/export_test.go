package push

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Step asks the keeper of s to look now (to try to take the lease, or to
// look at every feed), as a Retry would but without retrying the watches
// that failed; the channel returned is closed once it has.
func Step(s *Service) <-chan struct{} {
	done := make(chan struct{})
	s.steps <- done
	return done
}

// SetRereadEvery sets how far apart the receiver's re-reads of the store
// are at least.
func SetRereadEvery(s *Service, d time.Duration) {
	s.rereadMu.Lock()
	defer s.rereadMu.Unlock()
	s.rereadEvery = d
}

// RenewalMargin is renewalMargin, for the tests.
var RenewalMargin = renewalMargin

// Notifications is foldermirror_push_notifications_total.
func (m *Metrics) Notifications() *prometheus.CounterVec { return m.notifications }

// Channels is foldermirror_push_channels.
func (m *Metrics) Channels() prometheus.Gauge { return m.channels }
