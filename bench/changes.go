package main

import (
	"fmt"
	"math/rand/v2"

	"github.com/foldermirror/foldermirror/internal/googlefake"
)

// mixedChanges makes n changes to the My Drive library, as its users would,
// among the folders of its two deepest levels (which have few descendants
// or none, so that a change changes one folder or a few, as most changes
// in a domain do): of every ten, three renames, two moves, a share, an
// unshare, a restriction (copy or download), a new folder and a trash. The
// first renames probe, the folder whose new name the API figure waits
// for, and no other change touches it. seed varies the choices; a call
// after another changes only folders the earlier left in the library.
func (w *world) mixedChanges(n, seed int) (probe, name string) {
	rng := rand.New(rand.NewPCG(uint64(seed), 20))
	parents := w.inner
	if len(parents) == 0 {
		parents = w.leaves
	}
	probe = w.leaves[rng.IntN(len(w.leaves))]
	name = fmt.Sprintf("Renamed %d-%d", seed, rng.IntN(1_000_000))
	w.fake.Rename(probe, name)
	leafAt := func() int {
		for {
			if i := rng.IntN(len(w.leaves)); w.leaves[i] != probe {
				return i
			}
		}
	}
	leaf := func() string { return w.leaves[leafAt()] }
	for i := 1; i < n; i++ {
		switch i % 10 {
		case 0, 1, 2:
			w.fake.Rename(leaf(), fmt.Sprintf("Renamed %d-%d", seed, i))
		case 3, 4:
			w.fake.Move(leaf(), parents[rng.IntN(len(parents))])
		case 5:
			w.fake.Share(leaf(), poolGrant(rng))
		case 6:
			if len(w.shared) > 0 && w.shared[len(w.shared)-1].id != probe {
				s := w.shared[len(w.shared)-1]
				w.shared = w.shared[:len(w.shared)-1]
				w.fake.Unshare(s.id, s.permission)
			} else {
				w.fake.Share(leaf(), poolGrant(rng))
			}
		case 7:
			w.fake.Modify(leaf(), func(f *googlefake.File) {
				if rng.IntN(2) == 0 {
					f.CopyRequiresWriterPermission = !f.CopyRequiresWriterPermission
				} else {
					f.DownloadRestrictedForReaders = !f.DownloadRestrictedForReaders
				}
			})
		case 8:
			w.fake.CreateFolder(storageAccount, parents[rng.IntN(len(parents))], fmt.Sprintf("New %d-%d", seed, i))
		case 9:
			w.trashLeaf(leafAt())
		}
	}
	return probe, name
}

// trashLeaf trashes the i-th leaf and takes it out of the leaves the next
// changes choose from.
func (w *world) trashLeaf(i int) {
	w.fake.Trash(w.leaves[i])
	w.leaves[i] = w.leaves[len(w.leaves)-1]
	w.leaves = w.leaves[:len(w.leaves)-1]
}
