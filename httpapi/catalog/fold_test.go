package catalog

import (
	"cmp"
	"strings"
	"testing"
)

func FuzzCompareFolded(f *testing.F) {
	for _, s := range [][2]string{{"a", "B"}, {"Ärger", "ärger2"}, {"x y", "x"}, {"\xff", "\uFFFD"}, {"İ", "i̇"}, {"ǅ", "ǆ"}, {"", "a"}, {"Σ", "σς"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		want := strings.Compare(strings.ToLower(a), strings.ToLower(b))
		if got := compareFolded(a, b); got != want {
			t.Errorf("compareFolded(%q, %q) = %d, strings.Compare of the lower-cased = %d", a, b, got, want)
		}
	})
}

// Names whose keys differ are in the order of their keys.
func FuzzNameKey(f *testing.F) {
	for _, s := range [][2]string{{"a", "B"}, {"Budget 1-2", "budget 1-3"}, {"Ärger", "ärgerlich"}, {"a\x00", "a"}, {"\xff", "\uFFFD"},
		{"İstanbul", "i̇stanbul"}, {"ǅǅǅǅ", "ǆǆǆǆ"}, {"", "a"}, {"abcdefgh", "abcdefg"}, {"日本語の名前", "日本語"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ka, kb := nameKey(a), nameKey(b)
		if want := compareFolded(a, b); ka != kb && cmp.Compare(ka, kb) != want {
			t.Errorf("nameKey(%q) = %x, nameKey(%q) = %x; the names compare %d", a, ka, b, kb, want)
		}
		if compareFolded(a, b) == 0 && ka != kb {
			t.Errorf("%q and %q compare equal, their keys %x and %x differ", a, b, ka, kb)
		}
	})
}
