//go:build long

package tests

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/index/bolt"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/googlefake"
)

// crashWorld is a My Drive library over three pages of folders and a shared
// drive whose folders have permissions of their own, with its config.
type crashWorld struct {
	fake      *googlefake.Server
	dir       string
	libraries []string
	mine      []string // folders of the My Drive library
	team      []string // folders of the shared drive
}

func newCrashWorld(t *testing.T) *crashWorld {
	fake := fmtest.StartGoogle(t)
	fake.Seed(21)
	w := &crashWorld{fake: fake, dir: t.TempDir(), libraries: []string{"mine", "team"}}
	fake.AddUser(e2eStorage)
	root := fake.CreateFolder(e2eStorage, "", "Mine")
	w.mine = []string{root}
	for i := range 2500 {
		w.mine = append(w.mine, fake.CreateFolder(e2eStorage, w.mine[i/6], fmt.Sprint("m", i)))
	}
	d := fake.CreateSharedDrive("Team", e2eStorage)
	w.team = []string{d}
	for i := range 300 {
		id := fake.CreateFolder(e2eStorage, w.team[i/5], fmt.Sprint("t", i))
		fake.Share(id, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: fmt.Sprintf("r%d@example.com", i%9)})
		w.team = append(w.team, id)
	}
	for _, name := range []string{"live", "expected"} {
		c := fmtest.Config(t, fake, w.dir)
		c.Path, c.DataDir = filepath.Join(w.dir, name+".yaml"), filepath.Join(w.dir, name)
		c.Domains = []config.Domain{{Name: "example.com"}}
		c.Libraries = []config.Library{
			{ID: "mine", Domain: "example.com", StorageAccount: e2eStorage, RootFolderID: root},
			{ID: "team", Domain: "example.com", StorageAccount: e2eStorage, SharedDriveID: d},
		}
		fmtest.WriteConfig(t, c)
	}
	return w
}

// mutate changes both libraries a little.
func (w *crashWorld) mutate(rng *rand.Rand) {
	for range 20 {
		folders := &w.mine
		if rng.IntN(2) == 0 {
			folders = &w.team
		}
		id := (*folders)[1+rng.IntN(len(*folders)-1)]
		switch rng.IntN(4) {
		case 0:
			w.fake.Rename(id, fmt.Sprint("renamed ", rng.Int()))
		case 1:
			w.fake.Share(id, googlefake.Permission{Type: "user", Role: "writer", EmailAddress: fmt.Sprintf("w%d@example.com", rng.IntN(5))})
		case 2:
			*folders = append(*folders, w.fake.CreateFolder(e2eStorage, id, "new"))
		default:
			w.fake.Modify(id, func(f *googlefake.File) { f.CopyRequiresWriterPermission = !f.CopyRequiresWriterPermission })
		}
	}
}

// snapshots reads every library of a data directory.
func (w *crashWorld) snapshots(t *testing.T, data string) map[string][]fm.SyncedFolder {
	t.Helper()
	db, err := bolt.Open(filepath.Join(w.dir, data), quietLogger())
	if err != nil {
		t.Fatalf("the index after a crash does not open: %v", err)
	}
	defer db.Close()
	out := map[string][]fm.SyncedFolder{}
	for _, lib := range w.libraries {
		snap, err := db.Snapshot(context.Background(), lib)
		if err != nil && fm.ErrorCode(err) != fm.ENOTFOUND {
			t.Fatal(err)
		}
		out[lib] = snap
	}
	return out
}

// TestCrashesLeaveOldOrNewState kills the built binary with SIGKILL at random
// points of full and incremental syncs; each time the index opens, holds for
// each library its old state or its new one (never a mix), and the next
// sync catches up.
func TestCrashesLeaveOldOrNewState(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	w := newCrashWorld(t)
	w.fake.SetLatency(2 * time.Millisecond)
	run := func(cfg string, args ...string) *exec.Cmd {
		return exec.Command(bin, append([]string{"sync", "--config", filepath.Join(w.dir, cfg+".yaml")}, args...)...)
	}
	if out, err := run("live", "--full").CombinedOutput(); err != nil {
		t.Fatalf("first sync: %v\n%s", err, out)
	}
	rng := rand.New(rand.NewPCG(4, 2))
	kills, outcomes := 0, map[string]int{}
	for round := range 16 {
		mode := []string{"--full"}
		if round%2 == 1 {
			mode = nil // incremental
		}
		w.mutate(rng)
		old := w.snapshots(t, "live")
		os.RemoveAll(filepath.Join(w.dir, "expected"))
		if out, err := run("expected", "--full").CombinedOutput(); err != nil {
			t.Fatalf("round %d: expected sync: %v\n%s", round, err, out)
		}
		want := w.snapshots(t, "expected")

		cmd := run("live", mode...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rng.IntN(900)) * time.Millisecond)
		if cmd.Process.Kill() == nil {
			kills++
		}
		cmd.Wait()
		got := w.snapshots(t, "live")
		for _, lib := range w.libraries {
			switch {
			case reflect.DeepEqual(got[lib], want[lib]):
				outcomes["new"]++
			case reflect.DeepEqual(got[lib], old[lib]):
				outcomes["old"]++
			default:
				t.Fatalf("round %d (%v): %s is neither its old state nor its new one", round, mode, lib)
			}
		}
		if out, err := run("live", mode...).CombinedOutput(); err != nil {
			t.Fatalf("round %d: the sync after the crash: %v\n%s", round, err, out)
		}
		got = w.snapshots(t, "live")
		for _, lib := range w.libraries {
			if !reflect.DeepEqual(got[lib], want[lib]) {
				t.Fatalf("round %d (%v): %s did not catch up after the crash", round, mode, lib)
			}
		}
	}
	t.Logf("%d kills; libraries found in their old state %d times, in their new one %d times", kills, outcomes["old"], outcomes["new"])
}
