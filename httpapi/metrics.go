package httpapi

import (
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the API's Prometheus metrics.
type Metrics struct {
	requests     *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	authFailures *prometheus.CounterVec
	streams      prometheus.Gauge
	streamsCut   prometheus.Counter
	// answersInFlight counts the requests holding a slot (answerSlots).
	answersInFlight prometheus.Gauge
}

// NewMetrics registers the API's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "foldermirror_api_requests_total",
			Help: "API requests answered, by route and HTTP status.",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "foldermirror_api_request_duration_seconds",
			Help:    "Time to answer API requests (whole body written), by route.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"route"}),
		authFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "foldermirror_auth_failures_total",
			Help: "Requests whose credentials were missing or refused, by reason.",
		}, []string{"reason"}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "foldermirror_api_streams",
			Help: "Answers too long to be sent whole being streamed now.",
		}),
		streamsCut: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "foldermirror_api_streams_cut_total",
			Help: "Streamed answers cut because their client had not read them by their deadline.",
		}),
		answersInFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "foldermirror_api_answers_in_flight",
			Help: "Requests being answered now, each until its answer has left its connection's send queue.",
		}),
	}
	reg.MustRegister(m.requests, m.duration, m.authFailures, m.streams, m.streamsCut, m.answersInFlight)
	return m
}

// observe records each request's route, status and duration, those of a
// response cut short (a panic going by) too.
func (m *Metrics) observe() gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		defer func() {
			route := c.FullPath()
			if route == "" {
				route = "unmatched"
			}
			m.requests.WithLabelValues(route, statusLabel(c.Writer.Status())).Inc()
			m.duration.WithLabelValues(route).Observe(time.Since(start).Seconds())
		}()
		c.Next()
	}
}

// statusLabels are the labels of the HTTP status codes, made once rather
// than by strconv.Itoa for each request.
var statusLabels = func() (labels [600]string) {
	for code := range labels {
		labels[code] = strconv.Itoa(code)
	}
	return labels
}()

// statusLabel returns an HTTP status code's label.
func statusLabel(code int) string {
	if code >= 0 && code < len(statusLabels) {
		return statusLabels[code]
	}
	return strconv.Itoa(code)
}
