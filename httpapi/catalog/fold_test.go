package catalog

import (
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
