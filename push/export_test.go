package push

import (
	"time"

	fm "github.com/foldermirror/foldermirror"
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
// begin at least.
func SetRereadEvery(s *Service, d time.Duration) {
	s.rereads.mu.Lock()
	defer s.rereads.mu.Unlock()
	s.rereads.every = d
}

// SetRereadTimeout sets the bound of each re-read.
func SetRereadTimeout(s *Service, d time.Duration) {
	s.rereads.mu.Lock()
	defer s.rereads.mu.Unlock()
	s.rereads.timeout = d
}

// SetUnknownWait sets how long a notification of an unknown ID waits for a
// re-read at most.
func SetUnknownWait(s *Service, d time.Duration) {
	s.rereads.mu.Lock()
	defer s.rereads.mu.Unlock()
	s.rereads.wait = d
}

// Waiting returns how many notifications wait for a re-read.
func Waiting(s *Service) int {
	s.rereads.mu.Lock()
	defer s.rereads.mu.Unlock()
	return s.rereads.waiting
}

// SetMaxWaiting sets how many notifications wait for a re-read at most.
func SetMaxWaiting(s *Service, n int) {
	s.rereads.mu.Lock()
	defer s.rereads.mu.Unlock()
	s.rereads.limit = n
}

// RenewalMargin is renewalMargin, for the tests.
var RenewalMargin = renewalMargin

// Notifications is foldermirror_push_notifications_total.
func (m *Metrics) Notifications() *prometheus.CounterVec { return m.notifications }

// Channels is foldermirror_push_channels.
func (m *Metrics) Channels() prometheus.Gauge { return m.channels }

// RenewAt is when s renews ch.
func RenewAt(s *Service, ch fm.PushChannel) time.Time { return s.renewAt(ch) }

// StoreRetryEvery is how soon the keeper tries again to stop a channel
// Drive did not stop.
const StoreRetryEvery = storeRetryEvery

// TendAtOnce is how many feeds the keeper tends at once.
const TendAtOnce = tendAtOnce
