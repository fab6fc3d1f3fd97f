package httpapi_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

func TestMetrics(t *testing.T) {
	f := newFixture(t)
	f.get("/folder/v1/files/apollo", f.token("bob@example.com"))
	f.get("/folder/v1/files/apollo", f.token("bob@example.com"))
	f.get("/folder/v1/files/secret", f.token("bob@example.com"))
	f.get("/folder/v1/files/apollo", "")
	f.get("/folder/v1/files/apollo", f.token("dave@example.com"))
	route := "/folder/v1/files/:folderId"
	for _, tc := range []struct {
		name   string
		metric prometheus.Collector
		want   float64
	}{
		{`foldermirror_api_requests_total{code="200"}`, f.metrics.Requests().WithLabelValues(route, "200"), 2},
		{`foldermirror_api_requests_total{code="404"}`, f.metrics.Requests().WithLabelValues(route, "404"), 1},
		{`foldermirror_api_requests_total{code="401"}`, f.metrics.Requests().WithLabelValues(route, "401"), 2},
		{`foldermirror_auth_failures_total{reason="missing"}`, f.metrics.AuthFailures().WithLabelValues("missing"), 1},
		{`foldermirror_auth_failures_total{reason="unknown_user"}`, f.metrics.AuthFailures().WithLabelValues("unknown_user"), 1},
	} {
		if got := testutil.ToFloat64(tc.metric); got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, got, tc.want)
		}
	}
	// testutil reads no histogram: its one series of the route is read whole.
	var d dto.Metric
	if err := f.metrics.Durations().WithLabelValues(route).(prometheus.Metric).Write(&d); err != nil || d.GetHistogram().GetSampleCount() != 5 {
		t.Errorf("foldermirror_api_request_duration_seconds: %d durations observed, want 5 (%v)", d.GetHistogram().GetSampleCount(), err)
	}
}
