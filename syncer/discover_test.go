package syncer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/internal/googlefake"
	"github.com/foldermirror/foldermirror/syncer"
	"google.golang.org/api/googleapi"
)

// drivesCall is the count googlefake keeps of drives.list calls.
const drivesCall = "drive.drives.list"

// Discovery finds, in pages of 100, every shared drive the storage account
// is a member of, however it is one, hidden ones included, sorted by ID;
// not those it is not a member of.
func TestDiscoverDrives(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	fake.AddGroup("storage-group@example.com", storage)
	var want []fm.DiscoveredDrive
	for i := range 248 {
		name := fmt.Sprintf("drive %03d", i)
		want = append(want, fm.DiscoveredDrive{ID: fake.CreateSharedDrive(name, storage), Name: name})
	}
	viaGroup := fake.CreateSharedDrive("via group", admin)
	fake.Share(viaGroup, googlefake.Permission{Type: "group", Role: "reader", EmailAddress: "storage-group@example.com"})
	want = append(want, fm.DiscoveredDrive{ID: viaGroup, Name: "via group"})
	hidden := fake.CreateSharedDrive("hidden", storage)
	fake.HideDrive(hidden, storage, true)
	want = append(want, fm.DiscoveredDrive{ID: hidden, Name: "hidden", Hidden: true})
	fake.CreateSharedDrive("not a member", admin)
	fake.DeleteSharedDrive(fake.CreateSharedDrive("deleted", storage))
	fake.RepeatItemsAcrossPages(true) // each page begins with the last drive of the page before
	slices.SortFunc(want, func(a, b fm.DiscoveredDrive) int { return strings.Compare(a.ID, b.ID) })

	e := newEnv(t, fake)
	fake.ResetCalls()
	got, err := e.s.DiscoverDrives(context.Background(), storage)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("discovered %d drives, want %d:\n got %v\nwant %v", len(got), len(want), got, want)
	}
	if n := fake.CallCount(drivesCall); n != 3 {
		t.Errorf("%d drives.list calls for 250 drives, want 3 pages of 100 (the last two of 100 and 52, each with a drive of the page before)", n)
	}
}

// An account of no drive discovers an empty list, not nil: "none", which
// replaces what an earlier discovery found.
func TestDiscoverNoDrive(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	fake.CreateSharedDrive("not a member", admin)
	got, err := newEnv(t, fake).s.DiscoverDrives(context.Background(), storage)
	if err != nil || got == nil || len(got) != 0 {
		t.Errorf("discovered %#v, %v; want an empty list", got, err)
	}
}

// A failed discovery says which account's drives it could not list, and
// for a refused delegation, with which key (keyFile in a message stands
// for the key file's path).
func TestDiscoverDrivesFailures(t *testing.T) {
	const keyFile = "{key}"
	t.Parallel()
	for _, tc := range []struct {
		name  string
		setup func(e *env)
		want  []string
		code  int // of the *googleapi.Error it wraps, 0 if none
	}{
		{"a server error", func(e *env) { e.fake.SetFaults(1, 1, googlefake.Fault500) },
			[]string{"list the shared drives of storage account " + storage}, 500},
		{"delegation refused", func(e *env) { e.fake.RefuseDelegation(saEmail, storage); e.restartSyncer() },
			[]string{"storage account " + storage, "the key " + keyFile, "(unauthorized_client; is domain-wide delegation granted"}, 0},
		{"pages leading back", func(e *env) { e.fake.LoopDrivePages(true) },
			[]string{"storage account " + storage, "lead back to one read already"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := startFake(t)
			for i := range 150 {
				fake.CreateSharedDrive(fmt.Sprint("drive ", i), storage)
			}
			e := newEnv(t, fake)
			tc.setup(e)
			fake.ResetCalls()
			got, err := e.s.DiscoverDrives(context.Background(), storage)
			if err == nil {
				t.Fatalf("discovered %d drives, want an error", len(got))
			}
			for _, w := range tc.want {
				if w = strings.ReplaceAll(w, keyFile, e.cfg.Storage.CredentialsFile); !strings.Contains(err.Error(), w) {
					t.Errorf("error %q, want it to say %q", err, w)
				}
			}
			var gerr *googleapi.Error
			if tc.code != 0 && (!errors.As(err, &gerr) || gerr.Code != tc.code) {
				t.Errorf("error %v does not wrap Drive's %d", err, tc.code)
			}
			if n := fake.CallCount(drivesCall); n > 3 {
				t.Errorf("%d drives.list calls for 2 pages", n)
			}
		})
	}
}

// A discovery reads at most so many pages: one that goes on past them is an
// error, not the drives of the pages read. (Not parallel: it sets the
// bound.)
func TestDiscoverDrivesBound(t *testing.T) {
	fake := startFake(t)
	for i := range 101 {
		fake.CreateSharedDrive(fmt.Sprint("drive ", i), storage)
	}
	syncer.SetMaxDrivePages(t, 1)
	got, err := newEnv(t, fake).s.DiscoverDrives(context.Background(), storage)
	if want := "list the shared drives of storage account " + storage + ": Drive's pages go on past 1 pages of 100"; err == nil || err.Error() != want {
		t.Errorf("discovered %d drives, %v; want the error %q", len(got), err, want)
	}
}

// A library's sync refused by the token endpoint says why, as Google's
// answer gives it in its body (the service-account flow's reason).
func TestSyncSaysWhyDelegationWasRefused(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	root := fake.CreateFolder(storage, "", "Root")
	e := newEnv(t, fake, "id: lib, rootFolderId: "+root)
	fake.RefuseDelegation(saEmail, storage)
	e.restartSyncer()
	_, err := e.s.Sync(context.Background(), fm.SyncRequest{Library: "lib", Mode: fm.SyncFull}, nil)
	if err == nil || !strings.Contains(err.Error(), "storage account "+storage+": the token endpoint refused to act as it (unauthorized_client;") {
		t.Errorf("sync refused: %v; want the reason, unauthorized_client", err)
	}
}
