package main

import (
	"math"
	"slices"
	"testing"
	"time"
)

func TestParseLatencies(t *testing.T) {
	tests := []struct {
		in      string
		want    []time.Duration
		wantErr bool
	}{
		{in: "30ms", want: []time.Duration{30 * time.Millisecond}},
		{in: "100ms, 30ms,100ms", want: []time.Duration{30 * time.Millisecond, 100 * time.Millisecond}},
		{in: "1.5ms", want: []time.Duration{1500 * time.Microsecond}},
		{in: "30", wantErr: true},
		{in: "0ms", wantErr: true},
		{in: "-30ms", wantErr: true},
		{in: "30ms,", wantErr: true},
	}
	for _, tt := range tests {
		got, err := parseLatencies(tt.in)
		if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) {
			t.Errorf("parseLatencies(%q) = %v, %v; want %v (error %t)", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestLatencyText(t *testing.T) {
	for d, want := range map[time.Duration]string{
		30 * time.Millisecond:   "30 ms",
		100 * time.Millisecond:  "100 ms",
		1500 * time.Microsecond: "1.5 ms",
		2 * time.Second:         "2000 ms",
	} {
		if got := latencyText(d); got != want {
			t.Errorf("latencyText(%s) = %q, want %q", d, got, want)
		}
	}
}

// The full sync's wall-time limit: the 0.35 × the fewest × the
// latency, plus the fake's CPU, from 100 ms a call; twice the fewest ×
// the latency below, where the machine's CPU bounds the sync.
func TestFullSyncWall(t *testing.T) {
	for _, tc := range []struct {
		latency, fakeCPU time.Duration
		want             float64
	}{
		{30 * time.Millisecond, 8 * time.Second, 2 * 1001 * 0.03},
		{100 * time.Millisecond, 8 * time.Second, 0.35*1001*0.1 + 8},
		{time.Second, 0, 0.35 * 1001},
	} {
		if got, _, _ := fullSyncWall(1001, tc.latency, tc.fakeCPU); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("fullSyncWall(1001, %s, %s) = %.3f, want %.3f", tc.latency, tc.fakeCPU, got, tc.want)
		}
	}
}
