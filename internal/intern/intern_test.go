package intern

import (
	"fmt"
	"testing"
)

func TestTable(t *testing.T) {
	tab := New(2) // grows many times
	const n = 20_000
	for i := range n {
		s := fmt.Sprintf("1Ab%dcD", i)
		got, added := tab.Intern(s)
		if !added || got != uint32(i) {
			t.Fatalf("Intern(%q) = %d, %v; want %d, true", s, got, added, i)
		}
	}
	if tab.Len() != n {
		t.Fatalf("Len %d", tab.Len())
	}
	for i := range n {
		s := fmt.Sprintf("1Ab%dcD", i)
		if got, added := tab.Intern(s); added || got != uint32(i) {
			t.Fatalf("second Intern(%q) = %d, %v", s, got, added)
		}
		if got, ok := tab.Lookup(s); !ok || got != uint32(i) {
			t.Fatalf("Lookup(%q) = %d, %v", s, got, ok)
		}
		if tab.String(uint32(i)) != s {
			t.Fatalf("String(%d) = %q", i, tab.String(uint32(i)))
		}
	}
	for _, s := range []string{"", "1Ab", "1Ab20000cD", "x"} {
		if _, ok := tab.Lookup(s); ok {
			t.Errorf("Lookup(%q) found a string never interned", s)
		}
	}
	if got, added := tab.Intern(""); !added || tab.String(got) != "" {
		t.Error("the empty string is not interned like any other")
	}
	var empty Table
	if _, ok := empty.Lookup("a"); ok {
		t.Error("the zero table holds something")
	}
	if n, added := empty.Intern("a"); n != 0 || !added || empty.String(0) != "a" {
		t.Error("the zero table does not take a string")
	}
}

func BenchmarkIntern(b *testing.B) {
	ids := make([]string, 1<<16)
	for i := range ids {
		ids[i] = fmt.Sprintf("1%032d", i*7919)
	}
	tab := New(len(ids))
	for _, id := range ids {
		tab.Intern(id)
	}
	i := 0
	for b.Loop() {
		tab.Lookup(ids[i&(len(ids)-1)])
		i++
	}
}
