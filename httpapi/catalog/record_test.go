package catalog

import (
	"strings"
	"testing"
)

// TestRecordRoundTrip decodes records of strings whose lengths take one
// byte of uvarint, two, and three.
func TestRecordRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 127, 128, 300, 16383, 16384, 70_000} {
		name, key, def := strings.Repeat("n", n), strings.Repeat("k", n/2), strings.Repeat("d", n/3)
		for _, tc := range []struct{ name, escaped string }{
			{name, name},
			{name + `"`, name + `\"`},
		} {
			rec := appendRecord([]byte{7}, tc.name, key, def)
			gotName, gotEscaped, gotKey, gotDef := decodeRecord(rec[1:])
			if gotName != tc.name || gotEscaped != tc.escaped || gotKey != key || gotDef != def {
				t.Errorf("length %d: decoded (%.20q, %.20q, %.20q, %.20q) of lengths %d, %d, %d, %d; want lengths %d, %d, %d, %d",
					n, gotName, gotEscaped, gotKey, gotDef, len(gotName), len(gotEscaped), len(gotKey), len(gotDef),
					len(tc.name), len(tc.escaped), len(key), len(def))
			}
		}
	}
}
