package syncer_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/googlefake"
)

// BenchmarkIncremental100k measures incremental syncs of 1,000 mixed
// changes to a My Drive library of 100,000 folders, on each index backend
// (PostgreSQL when FOLDERMIRROR_TEST_POSTGRES names a server), against the
// fake with 30 ms latency per call. An operation is a sync, from the
// request to its commit (Sync returns once the transaction committed); the
// changes made before each are not timed. The library is built once, and
// synced in full once on each backend.
//
//	FOLDERMIRROR_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/postgres \
//	go test -run '^$' -bench Incremental100k -benchtime 5x ./syncer/
func BenchmarkIncremental100k(b *testing.B) {
	const folders, changes = 100_000, 1000
	fake := startFake(b)
	w := buildLevels(fake, folders)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, backend := range fmtest.Backends(b) {
		b.Run(backend, func(b *testing.B) {
			e := newEnvOn(b, backend, fake, "id: lib, rootFolderId: "+w.root)
			e.sync("lib")
			var calls int64
			for b.Loop() {
				b.StopTimer()
				fake.SetLatency(0)
				w.mixedChanges(rng, changes)
				fake.SetLatency(30 * time.Millisecond)
				b.StartTimer()
				res, err := e.s.Sync(context.Background(), fm.SyncRequest{Library: "lib", Mode: fm.SyncAuto}, nil)
				if err != nil || res.Full {
					b.Fatalf("%v %+v", err, res)
				}
				calls += res.Calls
			}
			b.ReportMetric(float64(calls)/float64(b.N), "calls/op")
		})
	}
}

// levels is a library built by buildLevels: its root, the folders of its
// deepest level (leaves) and those of the level above (inner).
type levels struct {
	fake          *googlefake.Server
	root          string
	inner, leaves []string
	shared        []sharedLeaf
}

// sharedLeaf is a leaf mixedChanges shared, and the permission it added.
type sharedLeaf struct{ id, permission string }

// buildLevels creates n folders under a new root shared with the domain:
// ten children a folder, breadth first, each tenth one shared with a user
// of its own.
func buildLevels(fake *googlefake.Server, n int) *levels {
	w := &levels{fake: fake, root: fake.CreateFolder(storage, "", "Bench")}
	fake.Share(w.root, googlefake.Permission{Type: "domain", Role: "reader", Domain: "example.com", AllowFileDiscovery: true})
	level := []string{w.root}
	for made := 0; made < n; {
		var next []string
		for _, parent := range level {
			for i := 0; i < 10 && made < n; i++ {
				id := fake.CreateFolder(storage, parent, fmt.Sprintf("folder %d", made))
				if made%10 == 0 {
					fake.Share(id, googlefake.Permission{Type: "user", Role: "writer", EmailAddress: fmt.Sprintf("user%d@example.com", made)})
				}
				next = append(next, id)
				made++
			}
		}
		w.inner, level = level, next
	}
	w.leaves = level
	return w
}

// mixedChanges makes n changes among the two deepest levels, as the bench
// harness does (bench/changes.go): of every ten, three renames, two moves,
// a share, an unshare, a restriction, a new folder and a trash.
func (w *levels) mixedChanges(rng *rand.Rand, n int) {
	leaf := func() string { return w.leaves[rng.IntN(len(w.leaves))] }
	for i := range n {
		switch i % 10 {
		case 0, 1, 2:
			w.fake.Rename(leaf(), fmt.Sprint("renamed ", rng.Int()))
		case 3, 4:
			w.fake.Move(leaf(), w.inner[rng.IntN(len(w.inner))])
		case 5:
			w.share(leaf(), rng)
		case 6:
			if len(w.shared) == 0 {
				w.share(leaf(), rng)
				break
			}
			s := w.shared[len(w.shared)-1]
			w.shared = w.shared[:len(w.shared)-1]
			w.fake.Unshare(s.id, s.permission)
		case 7:
			w.fake.Modify(leaf(), func(f *googlefake.File) { f.DownloadRestrictedForReaders = !f.DownloadRestrictedForReaders })
		case 8:
			w.fake.CreateFolder(storage, w.inner[rng.IntN(len(w.inner))], "new")
		case 9:
			j := rng.IntN(len(w.leaves))
			w.fake.Trash(w.leaves[j])
			w.leaves[j] = w.leaves[len(w.leaves)-1]
			w.leaves = w.leaves[:len(w.leaves)-1]
		}
	}
}

// share shares a leaf with one of 50 users.
func (w *levels) share(id string, rng *rand.Rand) {
	p := googlefake.Permission{Type: "user", Role: "reader", EmailAddress: fmt.Sprintf("u%d@example.com", rng.IntN(50))}
	w.shared = append(w.shared, sharedLeaf{id: id, permission: w.fake.Share(id, p)})
}
