//go:build unix

package syncer_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/pprof"
	"syscall"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/googlefake"
	"golang.org/x/sys/unix"
)

// BenchmarkIncremental100k measures incremental syncs of 1,000 mixed
// changes to a My Drive library of 100,000 folders shaped as the bench's
// (bench/README.md, "The world"), on each index backend (PostgreSQL when
// FOLDERMIRROR_TEST_POSTGRES names a server), against the fake with 30 ms
// latency per call. An operation is a sync, from the request to its commit
// (Sync returns once the transaction committed); the changes made before
// each are not timed. The library is built once, and synced in full once on
// each backend. cpu-ms/op is the process's CPU during the sync, the fake's
// answers included; thread-cpu-ms/op that of the thread the sync's
// goroutine is locked to (its plan, transaction and commit, and the
// decoding of Drive's answers; not the fake's work, the collector's
// background workers, nor the sync's other goroutines), less noisy on a
// shared machine. The syncs run with the profiler label sync=incremental
// (go tool pprof -tagfocus sync=incremental).
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
			var cpu, thread time.Duration
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				fake.SetLatency(0)
				w.mixedChanges(rng, changes)
				fake.SetLatency(30 * time.Millisecond)
				runtime.LockOSThread()
				before, threadBefore := processCPU(b), threadCPU(b)
				b.StartTimer()
				var res *fm.SyncResult
				var err error
				pprof.Do(context.Background(), pprof.Labels("sync", "incremental"), func(ctx context.Context) {
					res, err = e.s.Sync(ctx, fm.SyncRequest{Library: "lib", Mode: fm.SyncAuto}, nil)
				})
				if err != nil || res.Full {
					b.Fatalf("%v %+v", err, res)
				}
				cpu += processCPU(b) - before
				thread += threadCPU(b) - threadBefore
				runtime.UnlockOSThread()
				calls += res.Calls
			}
			b.ReportMetric(float64(calls)/float64(b.N), "calls/op")
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(thread.Microseconds())/1000/float64(b.N), "thread-cpu-ms/op")
		})
	}
}

// levels is a library built by buildLevels: its root, the folders of its
// deepest level (leaves) and those of the level above (inner), and leaves
// with a permission of their own (shared).
type levels struct {
	fake          *googlefake.Server
	root          string
	inner, leaves []string
	shared        []sharedLeaf
}

// sharedLeaf is a leaf with a permission set on it.
type sharedLeaf struct{ id, permission string }

// The bench's world: its depth, its folder with many children, its pool of
// principals, and the share of the folders of each level (index 1: the
// root's children) shared with one of them.
const (
	levelsDepth   = 6
	levelsWide    = 1000
	levelsUsers   = 200
	levelsGroups  = 40
	levelsDomain  = "example.com"
	levelsStaff   = "staff@example.com"
	levelsLeafCap = 10_000
)

var levelsShares = []float64{0, 0.6, 0.4, 0.25, 0.12, 0.06}

// levelsRootGrants are the root's grants, which every folder inherits.
var levelsRootGrants = []googlefake.Permission{
	{Type: "domain", Role: "reader", Domain: levelsDomain, AllowFileDiscovery: true},
	{Type: "group", Role: "reader", EmailAddress: levelsStaff, DisplayName: "Staff"},
	{Type: "user", Role: "reader", EmailAddress: "alice@example.com", DisplayName: "Alice"},
	{Type: "user", Role: "reader", EmailAddress: "bob@example.com", DisplayName: "Bob"},
}

// buildLevels creates n folders as the bench's varied world does: a root
// shared with the domain, the staff group, alice and bob; a folder with
// levelsWide children, every other one re-shared with alice as a writer;
// the rest levelsDepth levels deep, some folders of each level shared with
// a user or group of a pool (fewer deeper down), each folder as it is made.
func buildLevels(fake *googlefake.Server, n int) *levels {
	fake.AddUser("alice@example.com")
	fake.AddUser("bob@example.com")
	for i := range levelsUsers {
		fake.AddUser(levelsUser(i))
	}
	for g := range levelsGroups {
		fake.AddGroup(levelsGroup(g), levelsUser(g), levelsUser(g+levelsGroups), levelsUser(g+2*levelsGroups))
	}
	fake.AddGroup(levelsStaff, "alice@example.com", "bob@example.com")
	rng := rand.New(rand.NewPCG(uint64(n), 10))
	w := &levels{fake: fake, root: fake.CreateFolder(storage, "", "Bench")}
	for _, p := range levelsRootGrants {
		fake.Share(w.root, p)
	}
	wide := fake.CreateFolder(storage, w.root, "wide")
	for i := range levelsWide {
		id := fake.CreateFolder(storage, wide, fmt.Sprintf("Child %04d", i))
		if i%2 == 0 {
			fake.Share(id, googlefake.Permission{Type: "user", Role: "writer", EmailAddress: "alice@example.com"})
		}
	}
	rest := n - 2 - levelsWide
	branching := 2
	for capacityOf(branching) < rest {
		branching++
	}
	parents := []string{w.root}
	for level := 1; level <= levelsDepth && rest > 0; level++ {
		count := min(len(parents)*branching, rest)
		next := make([]string, 0, count)
		for i := range count {
			id := fake.CreateFolder(storage, parents[i*len(parents)/count], fmt.Sprintf("Folder %d-%d", level, i))
			if rng.Float64() < levelsShares[min(level, len(levelsShares)-1)] {
				perm := fake.Share(id, levelsGrant(rng))
				if level >= levelsDepth-1 && len(w.shared) < levelsLeafCap {
					w.shared = append(w.shared, sharedLeaf{id: id, permission: perm})
				}
			}
			next = append(next, id)
		}
		rest -= count
		w.inner, parents = parents, next
	}
	w.leaves = parents
	return w
}

// capacityOf is how many folders a tree of branching b holds in
// levelsDepth levels below its root.
func capacityOf(b int) int {
	total, level := 0, 1
	for range levelsDepth {
		level *= b
		total += level
	}
	return total
}

func levelsUser(i int) string  { return fmt.Sprintf("user%03d@example.com", i) }
func levelsGroup(i int) string { return fmt.Sprintf("team%02d@example.com", i) }

// levelsGrant draws a grant of the pool: a user (most often), a group, or
// one of the root's principals again with a higher role.
func levelsGrant(rng *rand.Rand) googlefake.Permission {
	role := []string{"reader", "reader", "reader", "reader", "reader", "commenter", "commenter", "writer", "writer", "writer"}[rng.IntN(10)]
	switch r := rng.IntN(100); {
	case r < 80:
		return googlefake.Permission{Type: "user", Role: role, EmailAddress: levelsUser(rng.IntN(levelsUsers))}
	case r < 95:
		return googlefake.Permission{Type: "group", Role: role, EmailAddress: levelsGroup(rng.IntN(levelsGroups))}
	default:
		p := levelsRootGrants[1+rng.IntN(len(levelsRootGrants)-1)]
		p.Role = []string{"commenter", "writer"}[rng.IntN(2)]
		return p
	}
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
			w.fake.Modify(leaf(), func(f *googlefake.File) {
				if rng.IntN(2) == 0 {
					f.CopyRequiresWriterPermission = !f.CopyRequiresWriterPermission
				} else {
					f.DownloadRestrictedForReaders = !f.DownloadRestrictedForReaders
				}
			})
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

// share shares a leaf with a grant of the pool.
func (w *levels) share(id string, rng *rand.Rand) {
	w.shared = append(w.shared, sharedLeaf{id: id, permission: w.fake.Share(id, levelsGrant(rng))})
}

// processCPU returns the CPU time the process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// threadCPU returns the CPU time the calling thread has used.
func threadCPU(b *testing.B) time.Duration {
	b.Helper()
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ts.Nano())
}
