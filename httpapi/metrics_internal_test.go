package httpapi

import "testing"

func TestStatusLabels(t *testing.T) {
	for code, want := range map[int]string{200: "200", 304: "304", 599: "599", 600: "600", 0: "0", -1: "-1", 1000: "1000"} {
		if got := statusLabel(code); got != want {
			t.Errorf("statusLabel(%d) = %q, want %q", code, got, want)
		}
	}
}
