package httpapi

import (
	"hash/maphash"
	"math/bits"
)

// holders tells which libraries may hold a folder ID. It keeps, for each
// folder of each library it is given, an entry of 4 bytes: 12 bits of the
// ID's hash, its fingerprint, and the library's number. A lookup yields
// the number of each library that holds the ID and, now and then, of one
// that does not (another ID has the fingerprint), so that the caller looks
// in those. A table that fills is made again, larger, from every folder
// (see libraries.reindex): a million folders cost it 5 to 11 MB, where a
// map of fingerprints costs about 19.
type holders struct {
	seed maphash.Seed
	// slots is an open-addressing table, looked in from the slot the hash
	// names on: emptySlot ends a search, deadSlot (a removed entry) does
	// not.
	slots      []uint32
	live, dead int
}

// An entry is fingerprint<<numberBits | (number+1), never emptySlot or
// deadSlot: numbers go up to maxHeldNumber.
const (
	emptySlot     = 0
	deadSlot      = ^uint32(0)
	numberBits    = 20
	numberMask    = 1<<numberBits - 1
	maxHeldNumber = numberMask - 2
)

// minHolderSlots is the size of the smallest table. (A variable, so that
// tests can make tables fill often.)
var minHolderSlots = 512

// newHolders returns a table with room for n entries filling at most half
// of it.
func newHolders(seed maphash.Seed, n int) *holders {
	return &holders{seed: seed, slots: make([]uint32, 1<<bits.Len(uint(max(2*n, minHolderSlots)-1)))}
}

// fits tells whether n more entries keep the table at most three quarters
// full.
func (h *holders) fits(n int) bool { return (h.live+h.dead+n)*4 <= len(h.slots)*3 }

// add adds an entry for a folder of library num; the table must fit it.
func (h *holders) add(id string, num uint32) {
	hash := maphash.String(h.seed, id)
	for i := h.home(hash); ; i = h.next(i) {
		if s := h.slots[i]; s == emptySlot || s == deadSlot {
			if s == deadSlot {
				h.dead--
			}
			h.slots[i] = entry(hash, num)
			h.live++
			return
		}
	}
}

// remove removes an entry added for a folder of library num.
func (h *holders) remove(id string, num uint32) {
	hash := maphash.String(h.seed, id)
	e := entry(hash, num)
	for i := h.home(hash); h.slots[i] != emptySlot; i = h.next(i) {
		if h.slots[i] == e {
			h.slots[i] = deadSlot
			h.live--
			h.dead++
			return
		}
	}
}

// lookup calls fn with the number of each entry of the ID's fingerprint:
// a library may be named more than once.
func (h *holders) lookup(id string, fn func(num uint32)) {
	hash := maphash.String(h.seed, id)
	fp := entry(hash, 0) &^ numberMask
	for i := h.home(hash); h.slots[i] != emptySlot; i = h.next(i) {
		if s := h.slots[i]; s != deadSlot && s&^numberMask == fp {
			fn(s&numberMask - 1)
		}
	}
}

func (h *holders) home(hash uint64) int { return int(hash & uint64(len(h.slots)-1)) }

func (h *holders) next(i int) int { return (i + 1) & (len(h.slots) - 1) }

// entry returns the entry of an ID of that hash for library num: its
// fingerprint is the hash's top bits (its bottom ones choose its slot).
func entry(hash uint64, num uint32) uint32 {
	return uint32(hash>>(64-(32-numberBits)))<<numberBits | (num + 1)
}
