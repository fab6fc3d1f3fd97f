// Package intern numbers strings compactly: a Table keeps its strings back to
// back in one byte slice, with an open-addressing index of their numbers. It
// holds no pointer per string, so that a million IDs cost the garbage
// collector nothing to scan and their memory little more than their bytes
// (about 8 bytes each beyond them, against some 60 for a map[string]uint32).
package intern

import (
	"hash/maphash"
	"math/bits"
	"slices"
	"unsafe"
)

// Table numbers the strings interned in it 0, 1, 2... in the order they
// come. It is not safe for concurrent writers; readers may share a table no
// one writes to.
type Table struct {
	list
	// slots index the numbers by hash: 0 is empty, n+1 holds number n.
	slots []uint32
	// tags hold a byte of each slot's string's hash: a probe compares the
	// strings only when it matches, not at each slot in use it passes.
	tags []uint8
	seed maphash.Seed
}

// list holds strings numbered 0, 1, 2..., back to back: in data, or, in
// a chunked list, in chunks of chunkSize bytes.
type list struct {
	data []byte
	// ends[n] is where string n ends in data; it starts where n-1 ends.
	// In a chunked list they are offsets in the chunks taken end to end,
	// and a string that would cross the end of a chunk starts the next
	// (see chunkedStart).
	ends []uint32
	// chunks, in a chunked list, hold the strings in place of data: chunk
	// c holds the bytes from c*chunkSize. A string longer than a chunk
	// has chunks of its own, one array whose parts they are.
	chunks  [][]byte
	chunked bool
}

// chunkBits sizes a chunked list's chunks: 1 MiB.
const (
	chunkBits = 20
	chunkSize = 1 << chunkBits
	chunkMask = chunkSize - 1
)

// New returns a table with room for about n strings.
func New(n int) *Table {
	slots := slotsFor(n)
	return &Table{list: list{ends: make([]uint32, 0, n)}, slots: make([]uint32, slots), tags: make([]uint8, slots), seed: maphash.MakeSeed()}
}

// NewChunked returns a table with room for about n strings that keeps
// them in chunks of a MiB rather than in one slice, for a table whose size
// is not known ahead: it grows without copying its strings, which a slice
// growing by append does, holding the old array and the new at once, the
// last time when the table is largest. Its strings cannot be had as one
// slice (Parts, Reserve).
func NewChunked(n int) *Table {
	t := New(n)
	t.chunked = true
	return t
}

// slotsFor is a power of two above n/0.75, so that at most three slots in
// four are in use.
func slotsFor(n int) int {
	return 1 << bits.Len(uint(max(n, 6)*4/3))
}

// Reserve makes room for about bytes more bytes of strings, so that a table
// whose size is known ahead fills without copying its data as it grows. A
// chunked table needs none: it does nothing.
func (t *Table) Reserve(bytes int) {
	if !t.chunked {
		t.data = slices.Grow(t.data, bytes)
	}
}

// Len returns how many strings the table holds.
func (t *list) Len() int { return len(t.ends) }

// add appends s and returns its number.
func (t *list) add(s string) uint32 {
	if t.chunked {
		return t.addChunked(s)
	}
	t.data = append(t.data, s...)
	t.ends = append(t.ends, uint32(len(t.data)))
	return uint32(len(t.ends) - 1)
}

// size returns where the strings end: the next string starts there, or at
// the next chunk.
func (t *list) size() uint32 {
	if len(t.ends) == 0 {
		return 0
	}
	return t.ends[len(t.ends)-1]
}

// addChunked appends s to a chunked list and returns its number.
func (t *list) addChunked(s string) uint32 {
	start := t.size()
	if len(s) > 0 {
		start = chunkedStart(start, start+uint32(len(s)))
		if int(start>>chunkBits) == len(t.chunks) {
			t.newChunks(len(s))
		}
		copy(t.chunks[start>>chunkBits][start&chunkMask:], s)
	}
	t.ends = append(t.ends, start+uint32(len(s)))
	return uint32(len(t.ends) - 1)
}

// chunkEnd returns the end of the chunk off is in, or off if a chunk
// starts there.
func chunkEnd(off uint32) uint32 { return (off + chunkMask) &^ chunkMask }

// newChunks adds the chunks a string of n bytes needs: one, or as many as
// it fills, parts of one array.
func (t *list) newChunks(n int) {
	room := make([]byte, (n+chunkMask)&^chunkMask)
	for off := 0; off < len(room); off += chunkSize {
		t.chunks = append(t.chunks, room[off:])
	}
}

// chunkedStart returns where the string ending at end starts, the one
// before it ending at prev: there, or, if it would not fit in the rest of
// prev's chunk, at the next chunk (an empty string is never moved).
func chunkedStart(prev, end uint32) uint32 {
	if end > chunkEnd(prev) {
		return chunkEnd(prev)
	}
	return prev
}

// Intern returns the number of s, giving it the next one if the table does
// not hold it yet (added then tells so).
func (t *Table) Intern(s string) (n uint32, added bool) {
	if len(t.slots) == 0 {
		*t = *New(0)
	}
	i, tag := t.find(s)
	if t.slots[i] != 0 {
		return t.slots[i] - 1, false
	}
	n = t.add(s)
	t.slots[i], t.tags[i] = n+1, tag
	if len(t.ends)*4 > len(t.slots)*3 {
		t.grow()
	}
	return n, true
}

// Lookup returns the number of s, and whether the table holds it.
func (t *Table) Lookup(s string) (uint32, bool) {
	if len(t.slots) == 0 {
		return 0, false
	}
	i, _ := t.find(s)
	n := t.slots[i]
	return n - 1, n != 0
}

// Bytes returns string n as bytes of the table's own: they must not be
// changed, and stay valid until the next Intern.
func (t *list) Bytes(n uint32) []byte {
	start, end := uint32(0), t.ends[n]
	if n > 0 {
		start = t.ends[n-1]
	}
	if t.chunked {
		start = chunkedStart(start, end)
		from := start & chunkMask
		return t.chunks[start>>chunkBits][from : from+end-start : from+end-start]
	}
	return t.data[start:end:end]
}

// String returns string n.
func (t *list) String(n uint32) string { return string(t.Bytes(n)) }

// Reset empties the table and readies it for about n strings, keeping
// the memory it has where that is not far more than n strings need.
func (t *Table) Reset(n int) {
	t.data, t.ends, t.chunks = t.data[:0], t.ends[:0], nil
	if want := slotsFor(n); len(t.slots) < want || len(t.slots) > 4*want {
		t.slots, t.tags = make([]uint32, want), make([]uint8, want)
	} else {
		clear(t.slots)
		clear(t.tags)
	}
	if t.seed == (maphash.Seed{}) {
		t.seed = maphash.MakeSeed()
	}
}

// DataLen returns the bytes of the strings interned, for a copy to reserve
// (in a chunked table, with the ends of chunks they left unused).
func (t *list) DataLen() int {
	if t.chunked {
		return int(t.size())
	}
	return len(t.data)
}

// Parts returns the strings back to back and where each ends, to be kept
// and made a table again by FromParts. They are the table's own: they
// must not be changed. A chunked table has no such parts.
func (t *list) Parts() (data []byte, ends []uint32) {
	if t.chunked {
		panic("intern: Parts of a chunked table")
	}
	return t.data, t.ends
}

// Size returns the bytes the table holds, for memory accounting.
func (t *Table) Size() int {
	return cap(t.data) + len(t.chunks)*chunkSize + 4*cap(t.ends) + 5*len(t.slots)
}

// find returns the slot of s, the one holding it or the empty one where it
// would go, and its tag.
func (t *Table) find(s string) (int, uint8) {
	mask := uint64(len(t.slots) - 1)
	h := maphash.String(t.seed, s)
	tag := tagOf(h)
	for i := h & mask; ; i = (i + 1) & mask {
		n := t.slots[i]
		if n == 0 || (t.tags[i] == tag && bytesEqual(t.Bytes(n-1), s)) {
			return int(i), tag
		}
	}
}

// tagOf is a hash's tag: its top byte, which its slot does not depend on.
func tagOf(h uint64) uint8 { return uint8(h >> 56) }

// grow doubles the index and puts every number in its new slot.
func (t *Table) grow() {
	t.slots, t.tags = make([]uint32, len(t.slots)*2), make([]uint8, len(t.slots)*2)
	mask := uint64(len(t.slots) - 1)
	for n := range uint32(len(t.ends)) {
		h := maphash.Bytes(t.seed, t.Bytes(n))
		i := h & mask
		for t.slots[i] != 0 {
			i = (i + 1) & mask
		}
		t.slots[i], t.tags[i] = n+1, tagOf(h)
	}
}

// bytesEqual compares without converting b to a string (which would copy it).
func bytesEqual(b []byte, s string) bool {
	return len(b) == len(s) && unsafe.String(unsafe.SliceData(b), len(b)) == s
}

// FromParts returns the table of distinct strings, data back to back,
// string n ending at ends[n], numbered so; it takes data and ends as its
// own, and does not compare the strings. False if ends do not rise to
// len(data).
func FromParts(data []byte, ends []uint32) (*Table, bool) {
	if n := len(ends); n > 0 && int(ends[n-1]) != len(data) || n == 0 && len(data) != 0 {
		return nil, false
	}
	slots := slotsFor(len(ends))
	t := &Table{list: list{data: data, ends: ends}, slots: make([]uint32, slots), tags: make([]uint8, slots), seed: maphash.MakeSeed()}
	mask := uint64(slots - 1)
	start := uint32(0)
	for n, end := range ends {
		if end < start || int(end) > len(data) {
			return nil, false
		}
		h := maphash.Bytes(t.seed, data[start:end])
		i := h & mask
		for t.slots[i] != 0 {
			i = (i + 1) & mask
		}
		t.slots[i], t.tags[i] = uint32(n)+1, tagOf(h)
		start = end
	}
	return t, true
}
