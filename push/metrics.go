package push

import "github.com/prometheus/client_golang/prometheus"

// The results of foldermirror_push_notifications_total: what the receiver
// made of a request.
const (
	resultChange      = "change"          // accepted; the feed's libraries are synced
	resultSync        = "sync"            // accepted: a channel's first message, which starts nothing
	resultMalformed   = "malformed"       // a header missing: 400
	resultMethod      = "method"          // not a POST: 405
	resultUnknown     = "unknown_channel" // no stored channel of that ID: 404
	resultUnconfirmed = "unconfirmed"     // an ID of the keeper's form no re-read of the store told of in time: 503, which Drive retries
	resultBadToken    = "bad_token"       // the token is not the channel's: 403
	resultExpired     = "expired"         // the channel expired: 404
)

// Metrics are the push notifications' Prometheus metrics.
type Metrics struct {
	notifications *prometheus.CounterVec
	channels      prometheus.Gauge
}

// NewMetrics registers the push notifications' metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		notifications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "foldermirror_push_notifications_total",
			Help: "Requests to the push notification path, by result: change, sync (accepted), malformed, method, unknown_channel, bad_token, expired (refused), unconfirmed (503: the index could not tell in time; Drive retries).",
		}, []string{"result"}),
		channels: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "foldermirror_push_channels",
			Help: "Unexpired push channels stored, as this process last read them.",
		}),
	}
	for _, r := range []string{resultChange, resultSync, resultMalformed, resultMethod, resultUnknown, resultBadToken, resultExpired, resultUnconfirmed} {
		m.notifications.WithLabelValues(r)
	}
	reg.MustRegister(m.notifications, m.channels)
	return m
}
