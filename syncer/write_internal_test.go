package syncer

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// sortByID orders folders as their IDs compare, those that share their
// first eight bytes, or are shorter, included.
func TestSortByID(t *testing.T) {
	st, err := newStage(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	ids := []string{"abcdefgh1", "abcdefgh0", "abcdefgh", "abcdefg", "a", "a\x00", "a\x00b", "", "b", "abcdefgh\x00"}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		ids = append(ids, fmt.Sprintf("1%07x%d", rng.Uint32N(16), i))
	}
	var folders []uint32
	for _, id := range ids {
		folders = append(folders, st.number(id))
	}
	rng.Shuffle(len(folders), func(i, j int) { folders[i], folders[j] = folders[j], folders[i] })
	sortByID(st, folders)
	got := make([]string, len(folders))
	for i, n := range folders {
		got[i] = st.ids.String(n)
	}
	if !slices.IsSorted(got) {
		t.Errorf("not in order of ID: %q", got[:12])
	}
}
