package drivelist

import "testing"

// TestHasControl puts a control byte at each place of strings of 0 to 20
// bytes, around bytes on either side of 0x20 and above 0x7f, so that both
// the eight-byte path and the byte-at-a-time rest are held to the rule.
func TestHasControl(t *testing.T) {
	fills := []byte{0x20, 0x21, 0x7f, 0x80, 0xa0, 0xff}
	for n := range 21 {
		for _, fill := range fills {
			b := make([]byte, n)
			for i := range b {
				b[i] = fill
			}
			if hasControl(b) {
				t.Fatalf("hasControl(% x) = true, want false", b)
			}
			for i := range b {
				for _, c := range []byte{0x00, 0x01, 0x1f} {
					b[i] = c
					if !hasControl(b) {
						t.Fatalf("hasControl(% x) = false, want true (0x%02x at %d)", b, c, i)
					}
				}
				b[i] = fill
			}
		}
	}
}
