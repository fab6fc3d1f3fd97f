package httpapi_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// value returns the value of the metric of that name with those labels.
func value(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range families {
		if fam.GetName() != name {
			continue
		}
	next:
		for _, m := range fam.GetMetric() {
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; ok && v != l.GetValue() {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return 0
}

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
		labels map[string]string
		want   float64
	}{
		{"foldermirror_api_requests_total", map[string]string{"route": route, "code": "200"}, 2},
		{"foldermirror_api_requests_total", map[string]string{"route": route, "code": "404"}, 1},
		{"foldermirror_api_requests_total", map[string]string{"route": route, "code": "401"}, 2},
		{"foldermirror_api_request_duration_seconds", map[string]string{"route": route}, 5},
		{"foldermirror_auth_failures_total", map[string]string{"reason": "missing"}, 1},
		{"foldermirror_auth_failures_total", map[string]string{"reason": "unknown_user"}, 1},
	} {
		if got := value(t, f.metrics, tc.name, tc.labels); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
}
