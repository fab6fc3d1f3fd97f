package syncer_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/internal/googlefake"
)

// BenchmarkIncremental measures incremental syncs of a My Drive library of
// 2,000 folders against the fake with 30 ms latency per call: with no
// change, one rename, 100 mixed changes, and a 1,000-folder subtree moved
// in. Setup between syncs is not timed.
//
//	go test -run '^$' -bench Incremental -benchtime 3x ./syncer/
func BenchmarkIncremental(b *testing.B) {
	fake := startFake(b)
	root := buildTree(fake, 2000)
	outside := fake.CreateFolder(storage, "", "Outside")
	subtree := fake.CreateFolder(storage, outside, "Moving")
	grow(fake, subtree, 999)
	e := newEnv(b, fake, "id: lib, rootFolderId: "+root)
	e.sync("lib")
	ids := folderIDs(b, e, "lib")
	rng := rand.New(rand.NewPCG(1, 2))

	for _, bc := range []struct {
		name   string
		before func()
		after  func()
	}{
		{"no change", func() {}, func() {}},
		{"1 rename", func() { fake.Rename(ids[rng.IntN(len(ids))], fmt.Sprint("renamed ", rng.Int())) }, func() {}},
		{"100 mixed", func() { mixedChanges(fake, rng, ids, 100) }, func() {}},
		{"1000-folder subtree moved in", func() { fake.Move(subtree, root) }, func() {
			fake.Move(subtree, outside)
			e.incremental("lib")
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var calls int64
			for b.Loop() {
				b.StopTimer()
				fake.SetLatency(0)
				bc.before()
				fake.SetLatency(30 * time.Millisecond)
				b.StartTimer()
				res, err := e.s.Sync(context.Background(), fm.SyncRequest{Library: "lib", Mode: fm.SyncAuto}, nil)
				if err != nil || res.Full {
					b.Fatalf("%v %+v", err, res)
				}
				calls += res.Calls
				b.StopTimer()
				fake.SetLatency(0)
				bc.after()
				b.StartTimer()
			}
			b.ReportMetric(float64(calls)/float64(b.N), "calls/op")
		})
	}
}

func grow(fake *googlefake.Server, parent string, n int) {
	queue := []string{parent}
	for made := 0; made < n; {
		p := queue[0]
		queue = queue[1:]
		for i := 0; i < 10 && made < n; i++ {
			queue = append(queue, fake.CreateFolder(storage, p, fmt.Sprint("sub ", made)))
			made++
		}
	}
}

func folderIDs(b *testing.B, e *env, lib string) []string {
	snap, err := e.db.Snapshot(context.Background(), lib)
	if err != nil {
		b.Fatal(err)
	}
	var ids []string
	for _, f := range snap {
		if f.ParentID != "" {
			ids = append(ids, f.ID)
		}
	}
	return ids
}

// mixedChanges makes n changes: renames, moves, shares, restrictions,
// trash and untrash, new folders.
func mixedChanges(fake *googlefake.Server, rng *rand.Rand, ids []string, n int) {
	for i := 0; i < n; {
		id := ids[rng.IntN(len(ids))]
		func() {
			defer func() { _ = recover() }() // a move into its own subtree: pick again
			switch i % 6 {
			case 0:
				fake.Rename(id, fmt.Sprint("renamed ", rng.Int()))
			case 1:
				fake.Move(id, ids[rng.IntN(len(ids))])
			case 2:
				fake.Share(id, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: fmt.Sprintf("u%d@example.com", rng.IntN(50))})
			case 3:
				fake.Modify(id, func(f *googlefake.File) { f.CopyRequiresWriterPermission = !f.CopyRequiresWriterPermission })
			case 4:
				fake.Trash(id)
				fake.Untrash(id)
			default:
				fake.CreateFolder(storage, id, "new")
			}
			i++
		}()
	}
}
