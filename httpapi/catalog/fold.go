package catalog

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// compareNames orders sibling folders as the API lists them: by name
// lower-cased as Go's strings.ToLower does (Unicode simple case folding,
// invalid UTF-8 read as U+FFFD), then by ID. It gives the order of
// strings.Compare on the lower-cased names without making them.
func compareNames(aName, aID, bName, bID string) int {
	if c := compareFolded(aName, bName); c != 0 {
		return c
	}
	return strings.Compare(aID, bID)
}

// compareFolded compares strings.ToLower(a) with strings.ToLower(b): rune
// by rune, since UTF-8 keeps the order of code points.
func compareFolded(a, b string) int {
	for len(a) > 0 && len(b) > 0 {
		ra, rb := rune(a[0]), rune(b[0])
		na, nb := 1, 1
		if ra >= utf8.RuneSelf {
			ra, na = utf8.DecodeRuneInString(a)
		}
		if rb >= utf8.RuneSelf {
			rb, nb = utf8.DecodeRuneInString(b)
		}
		if ra, rb = lower(ra), lower(rb); ra != rb {
			if ra < rb {
				return -1
			}
			return 1
		}
		a, b = a[na:], b[nb:]
	}
	switch {
	case len(a) > 0:
		return 1
	case len(b) > 0:
		return -1
	}
	return 0
}

func lower(r rune) rune {
	if r < utf8.RuneSelf {
		if 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		return r
	}
	return unicode.ToLower(r)
}

// nameKey returns the first 8 bytes of a name lower-cased as compareFolded
// reads it (in UTF-8, invalid bytes read as U+FFFD), big-endian, padded
// with zeros: of two names, the one of the lower key comes first; names of
// equal keys are compared whole.
func nameKey(name string) uint64 {
	var k uint64
	var buf [utf8.UTFMax]byte
	shift := 56
	for i := 0; i < len(name) && shift >= 0; {
		r, w := rune(name[i]), 1
		if r >= utf8.RuneSelf {
			r, w = utf8.DecodeRuneInString(name[i:])
		}
		i += w
		for _, c := range utf8.AppendRune(buf[:0], lower(r)) {
			if shift < 0 {
				break
			}
			k |= uint64(c) << shift
			shift -= 8
		}
	}
	return k
}
