package intern

import (
	"hash/maphash"
	"slices"
)

// Tagged numbers strings as a Table does, for a while: each slot of its
// index keeps, beside a number, a tag of its string's hash, so that
// finding a string compares it only with the strings of its tag, rather
// than with each on its way. Strings compared are read from memory far
// apart: in a table of a million, each costs about as much as the rest of
// the look-up. Its index takes twice the room of a Table's, so it is for
// making a table (numbering many strings at once), not for keeping one.
type Tagged struct {
	list
	// slots index the numbers by hash: 0 is empty, else a tag in the high
	// 32 bits and n+1 in the low ones for number n.
	slots []uint64
	seed  maphash.Seed
}

// NewTagged returns a table with room for about n strings.
func NewTagged(n int) *Tagged {
	return &Tagged{list: list{ends: make([]uint32, 0, n)}, slots: make([]uint64, slotsFor(n)), seed: maphash.MakeSeed()}
}

// Reserve makes room for about bytes more bytes of strings.
func (t *Tagged) Reserve(bytes int) { t.data = slices.Grow(t.data, bytes) }

// Intern returns the number of s, giving it the next one if the table does
// not hold it yet (added then tells so).
func (t *Tagged) Intern(s string) (n uint32, added bool) {
	h := maphash.String(t.seed, s)
	i, found := t.find(s, h)
	if found {
		return uint32(t.slots[i]) - 1, false
	}
	n = t.add(s)
	t.slots[i] = h&^0xffffffff | uint64(n+1)
	if len(t.ends)*4 > len(t.slots)*3 {
		t.grow()
	}
	return n, true
}

// Lookup returns the number of s, and whether the table holds it.
func (t *Tagged) Lookup(s string) (uint32, bool) {
	i, found := t.find(s, maphash.String(t.seed, s))
	return uint32(t.slots[i]) - 1, found
}

// Reset empties the table and readies it for about n strings, keeping
// the memory it has where that is not far more than n strings need.
func (t *Tagged) Reset(n int) {
	t.data, t.ends = t.data[:0], t.ends[:0]
	if want := slotsFor(n); len(t.slots) < want || len(t.slots) > 4*want {
		t.slots = make([]uint64, want)
	} else {
		clear(t.slots)
	}
}

// Release drops the table's index, keeping its strings (Bytes, Parts), for
// a table done numbering: Intern and Lookup must not be called again
// before Reset.
func (t *Tagged) Release() { t.slots = nil }

// find returns the slot of s, whose hash is h: the one holding it (found),
// or the empty one where it would go.
func (t *Tagged) find(s string, h uint64) (i uint64, found bool) {
	mask, tag := uint64(len(t.slots)-1), h&^0xffffffff
	for i = h & mask; ; i = (i + 1) & mask {
		v := t.slots[i]
		switch {
		case v == 0:
			return i, false
		case v&^0xffffffff == tag && bytesEqual(t.Bytes(uint32(v)-1), s):
			return i, true
		}
	}
}

// grow doubles the index and puts every number in its new slot.
func (t *Tagged) grow() {
	old := t.slots
	t.slots = make([]uint64, len(old)*2)
	mask := uint64(len(t.slots) - 1)
	for _, v := range old {
		if v == 0 {
			continue
		}
		n := uint32(v) - 1
		i := maphash.Bytes(t.seed, t.Bytes(n)) & mask
		for t.slots[i] != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = v
	}
}
