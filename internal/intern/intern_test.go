package intern

import (
	"bytes"
	"fmt"
	"strconv"
	"testing"
	"unsafe"
)

// numbering is what a Table and a Tagged share.
type numbering interface {
	Intern(s string) (uint32, bool)
	Lookup(s string) (uint32, bool)
	String(n uint32) string
	Len() int
}

// Both kinds of table number strings in the order they come, find them
// again, and grow as they fill.
func TestTable(t *testing.T) {
	for _, tc := range []struct {
		name string
		new  func(n int) numbering
	}{
		{"Table", func(n int) numbering { return New(n) }},
		{"Tagged", func(n int) numbering { return NewTagged(n) }},
		{"Chunked", func(n int) numbering { return NewChunked(n) }},
	} {
		t.Run(tc.name, func(t *testing.T) { testTable(t, tc.new) })
	}
}

func testTable(t *testing.T, newTable func(n int) numbering) {
	tab := newTable(2) // grows many times
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
}

// A chunked table keeps each string whole whatever its length and wherever
// a chunk ends, and never moves a string it holds.
func TestChunkedKeepsStringsWhole(t *testing.T) {
	lengths := []int{
		chunkSize - 10, 10, // ends exactly at a chunk's end
		0, 5, // the empty string where no chunk is yet, then one after it
		chunkSize - 8, 4, // 4 bytes do not fit in the 3 left: the next chunk
		chunkSize - 8, 3, // 3 do
		2*chunkSize + 3, 100, 100, // longer than a chunk, then two in its last chunk's rest
		chunkSize, 1, // a chunk exactly, then the next
	}
	for i := range 3000 {
		lengths = append(lengths, 1+i*37%700)
	}
	tab := NewChunked(2)
	var want []string
	for i, n := range lengths {
		b := bytes.Repeat([]byte{byte('a' + i%26)}, n)
		if digits := strconv.Itoa(i); n > len(digits) {
			copy(b, digits) // distinct, of length n
		}
		if got, added := tab.Intern(string(b)); !added || got != uint32(i) {
			t.Fatalf("Intern(string %d, %d bytes) = %d, %v", i, n, got, added)
		}
		want = append(want, string(b))
	}
	first := unsafe.SliceData(tab.Bytes(0))
	for i, s := range want {
		if got := tab.String(uint32(i)); got != s {
			t.Fatalf("string %d: got %d bytes starting %.8q, want %d bytes starting %.8q", i, len(got), got, len(s), s)
		}
		if n, ok := tab.Lookup(s); !ok || n != uint32(i) {
			t.Fatalf("Lookup(string %d) = %d, %v", i, n, ok)
		}
	}
	if unsafe.SliceData(tab.Bytes(0)) != first {
		t.Error("string 0 moved as the table grew")
	}
}

// A chunked table of short strings leaves less than a string's length
// unused at the end of each chunk.
func TestChunkedWastesLittle(t *testing.T) {
	tab, total, longest := NewChunked(0), 0, 0
	for i := range 40_000 {
		s := fmt.Sprintf("%0*d", 1+i*37%700, i)
		tab.Intern(s)
		total, longest = total+len(s), max(longest, len(s))
	}
	if most := (total + chunkSize - longest - 1) / (chunkSize - longest); len(tab.chunks) > most {
		t.Errorf("%d chunks for %d bytes of strings of at most %d bytes, want at most %d", len(tab.chunks), total, longest, most)
	}
}

// The zero Table takes strings.
func TestZeroTable(t *testing.T) {
	var empty Table
	if _, ok := empty.Lookup("a"); ok {
		t.Error("the zero table holds something")
	}
	if n, added := empty.Intern("a"); n != 0 || !added || empty.String(0) != "a" {
		t.Error("the zero table does not take a string")
	}
}

// A table made again from its parts finds each string at its number; parts
// whose ends do not rise to the data's length are refused.
func TestFromParts(t *testing.T) {
	tagged := NewTagged(10)
	for i := range 5000 {
		tagged.Intern(fmt.Sprint("s", i*31))
	}
	data, ends := tagged.Parts()
	tab, ok := FromParts(data, ends)
	if !ok || tab.Len() != 5000 {
		t.Fatalf("FromParts: %v, %d strings", ok, tab.Len())
	}
	for i := range 5000 {
		if n, ok := tab.Lookup(fmt.Sprint("s", i*31)); !ok || n != uint32(i) {
			t.Fatalf("Lookup(s%d) = %d, %v; want %d", i*31, n, ok, i)
		}
	}
	if _, ok := tab.Lookup("s1"); ok {
		t.Error("a string never given is found")
	}
	for _, bad := range []struct {
		data string
		ends []uint32
	}{
		{"abc", []uint32{1, 2}},
		{"abc", []uint32{2, 1, 3}},
		{"abc", []uint32{9, 1, 3}},
		{"abc", nil},
		{"", []uint32{1}},
	} {
		if _, ok := FromParts([]byte(bad.data), bad.ends); ok {
			t.Errorf("FromParts(%q, %v) took them", bad.data, bad.ends)
		}
	}
	if tab, ok := FromParts(nil, nil); !ok || tab.Len() != 0 {
		t.Error("FromParts refuses an empty table")
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

// A table reset holds nothing of what it held, numbers from 0 again, and
// keeps its slots unless far more than asked for.
func TestReset(t *testing.T) {
	tab := New(1000)
	for i := range 1000 {
		tab.Intern(fmt.Sprint("old", i))
	}
	tab.Reset(10)
	if tab.Len() != 0 {
		t.Fatalf("Len %d after Reset", tab.Len())
	}
	if _, ok := tab.Lookup("old5"); ok {
		t.Error("a string interned before Reset is still found")
	}
	for i := range 20 {
		if n, added := tab.Intern(fmt.Sprint("new", i)); !added || n != uint32(i) {
			t.Fatalf("Intern after Reset: %d, %v; want %d, true", n, added, i)
		}
	}
	if got := tab.String(7); got != "new7" {
		t.Errorf("String(7) = %q", got)
	}
	if got, want := len(tab.slots), slotsFor(10); got != want*2 { // grown once by the 20 strings
		t.Errorf("a table reset for 10 strings, then given 20, has %d slots, want %d", got, want*2)
	}
}

// BenchmarkInternMillion interns a million new IDs, as a full sync of a
// million folders numbers them, into a table that grows as they come, then
// looks each up again: a table far larger than the processor's caches.
func BenchmarkInternMillion(b *testing.B) {
	ids := make([]string, 1_000_000)
	for i := range ids {
		ids[i] = fmt.Sprintf("1%016x%016x", uint64(i)*0x9E3779B97F4A7C15, i)
	}
	for _, tc := range []struct {
		name string
		new  func(n int) *Table
	}{{"contiguous", New}, {"chunked", NewChunked}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tab := tc.new(0)
				for _, id := range ids {
					tab.Intern(id)
				}
				for _, id := range ids {
					tab.Intern(id)
				}
			}
		})
	}
}
