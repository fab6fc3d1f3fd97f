package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/index/indextest"
	"github.com/foldermirror/foldermirror/index/postgres"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/pgtest"
)

// replicas returns a database and two replicas of it, a and b, with long
// leases: a lease lapses only when the test says so.
func replicas(t *testing.T) (url string, a, b *postgres.DB) {
	t.Helper()
	url = pgtest.NewDatabase(t)
	a = fmtest.OpenPostgres(t, url, postgres.Options{Holder: "replica-a"})
	b = fmtest.OpenPostgres(t, url, postgres.Options{Holder: "replica-b"})
	return url, a, b
}

// acquire takes a lease, failing the test if it cannot.
func acquire(t *testing.T, db *postgres.DB, name string) fm.Lease {
	t.Helper()
	l, err := db.Acquire(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Release)
	return l
}

// wantLeaseLost fails the test unless err says that the lease was lost.
func wantLeaseLost(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, fm.ErrLeaseLost) || !strings.Contains(err.Error(), "lease was lost") {
		t.Errorf("%s: %v; want an error saying the lease was lost", what, err)
	}
}

// wantTree fails the test unless a fresh replica of the database reads
// the library as want: its state and its whole tree, every permission set
// found.
func wantTree(t *testing.T, url string, want *fm.LibraryState, folders []fm.SyncedFolder) {
	t.Helper()
	ctx := context.Background()
	c := fmtest.OpenPostgres(t, url, postgres.Options{})
	got, err := c.Library(ctx, "lib")
	if err != nil || got.StartPageToken != want.StartPageToken || got.Revision != want.Revision || got.Folders != want.Folders {
		t.Errorf("state %+v %v, want %+v", got, err, want)
	}
	snap, err := c.Snapshot(ctx, "lib")
	if err != nil {
		t.Fatalf("the library cannot be read: %v", err)
	}
	if got, want := describe(snap), describe(folders); !slices.Equal(got, want) {
		t.Errorf("tree %q, want %q", got, want)
	}
}

// describe describes folders, sorted, one line each: ID, parent, name and
// permissions.
func describe(folders []fm.SyncedFolder) []string {
	var lines []string
	for _, f := range folders {
		lines = append(lines, fmt.Sprintf("%s<%s %s %v", f.ID, f.ParentID, f.Name, f.Permissions))
	}
	slices.Sort(lines)
	return lines
}

// Fencing a full sync (the review's scenario): A begins a full sync, its
// lease lapses, B takes the lease and syncs the library (and releases the
// lease, or still holds it), then A goes on: each of A's writes fails
// saying the lease was lost, and the index keeps B's tree, state and
// revision, readable whole.
func TestFencedFullSync(t *testing.T) {
	t.Parallel()
	for _, release := range []bool{true, false} {
		t.Run(map[bool]string{true: "B released the lease", false: "B holds the lease"}[release], func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			url, a, b := replicas(t)
			indextest.FullSync(t, a, "lib", fm.LibraryState{RootID: "root", StartPageToken: "0"}, 10, indextest.Folder("root", "", "Root"))
			la := acquire(t, a, "lib")
			w, err := a.BeginFullSync(ctx, "lib", la.Fence())
			if err != nil {
				t.Fatal(err)
			}
			defer w.Abort() //nolint:errcheck // the test checks what the index keeps
			sets, folders, _ := indextest.FullSyncParts([]fm.SyncedFolder{
				indextest.Folder("a", "root", "a", "alice@example.com"), indextest.Folder("root", "", "Root")})
			if err := w.PutPermissionSets(sets); err != nil {
				t.Fatal(err)
			}

			pgtest.LapseLease(t, url, "lib")
			lb := acquire(t, b, "lib")
			bTree := []fm.SyncedFolder{indextest.Folder("b", "root", "b", "bob@example.com"), indextest.Folder("root", "", "Root")}
			indextest.FencedFullSync(t, b, "lib", lb.Fence(), fm.LibraryState{RootID: "root", StartPageToken: "b-token"}, 10, bTree...)
			if release {
				lb.Release()
			}
			want, _ := b.Library(ctx, "lib")

			wantLeaseLost(t, "A's folders put after its lease lapsed", w.PutFolders(folders))
			_, err = w.Commit(fm.LibraryState{RootID: "root", StartPageToken: "a-token"})
			wantLeaseLost(t, "A's commit after its lease lapsed", err)
			wantTree(t, url, want, bTree)
		})
	}
}

// Fencing an incremental sync's update, a directory sync, and a
// discovery of shared drives: once A's lease lapsed and B took it (and
// released it, or holds it), A's write fails saying the lease was lost
// and B's stays.
func TestFencedUpdateAndDirectory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	setToken := func(token string, put fm.SyncedFolder) func(fm.LibraryTx) error {
		return func(tx fm.LibraryTx) error {
			st := tx.State()
			st.StartPageToken = token
			tx.SetState(st)
			return tx.Put(put)
		}
	}
	directory := func(user string) *fm.DirectorySnapshot {
		return &fm.DirectorySnapshot{Domain: "example.com", Users: map[string]fm.DirectoryUser{user: {ID: "1"}}}
	}
	for _, tc := range []struct {
		name  string
		lease string
		// write writes as the replica named, under fence.
		write func(db *postgres.DB, replica string, fence fm.Fence) error
		// check checks that B's write stayed.
		check func(t *testing.T, url string)
	}{
		{"update", "lib",
			func(db *postgres.DB, replica string, fence fm.Fence) error {
				return db.UpdateLibrary(ctx, "lib", fence, setToken(replica+"-token", indextest.Folder(replica, "root", replica)))
			},
			func(t *testing.T, url string) {
				wantTree(t, url, &fm.LibraryState{StartPageToken: "b-token", Revision: 2, Folders: 2},
					[]fm.SyncedFolder{indextest.Folder("b", "root", "b"), indextest.Folder("root", "", "Root")})
			}},
		{"directory", fm.DirectoryLease("example.com"),
			func(db *postgres.DB, replica string, fence fm.Fence) error {
				return db.ReplaceDirectory(ctx, directory(replica+"@example.com"), fence)
			},
			func(t *testing.T, url string) {
				c := fmtest.OpenPostgres(t, url, postgres.Options{})
				if got, _ := c.Lookup(ctx, "b@example.com"); !got.Known {
					t.Error("B's directory was replaced")
				}
			}},
		{"discovery", fm.DiscoveryLease("storage@example.com"),
			func(db *postgres.DB, replica string, fence fm.Fence) error {
				return db.PutDiscovery(ctx, fm.Discovery{Domain: "example.com", StorageAccount: "storage@example.com",
					Drives: []fm.DiscoveredDrive{{ID: replica, Name: replica}}}, fence)
			},
			func(t *testing.T, url string) {
				c := fmtest.OpenPostgres(t, url, postgres.Options{})
				if got, rev, err := c.DiscoveredDrives(ctx, "example.com"); len(got) != 1 || got[0].ID != "b" || rev != 1 || err != nil {
					t.Errorf("drives %+v at revision %d, %v; want B's alone, at revision 1", got, rev, err)
				}
			}},
	} {
		for _, release := range []bool{true, false} {
			t.Run(tc.name+map[bool]string{true: ", B released the lease", false: ", B holds the lease"}[release], func(t *testing.T) {
				t.Parallel()
				url, a, b := replicas(t)
				indextest.FullSync(t, a, "lib", fm.LibraryState{RootID: "root", StartPageToken: "0"}, 10, indextest.Folder("root", "", "Root"))
				la := acquire(t, a, tc.lease)
				pgtest.LapseLease(t, url, tc.lease)
				lb := acquire(t, b, tc.lease)
				if err := tc.write(b, "b", lb.Fence()); err != nil {
					t.Fatal(err)
				}
				if release {
					lb.Release()
				}
				wantLeaseLost(t, "A's write after its lease lapsed", tc.write(a, "a", la.Fence()))
				tc.check(t, url)
			})
		}
	}
}

// A lease that lapsed fences its holder's writes even when no other
// process took it, and is not renewed again.
func TestLapsedLeaseFences(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, a, _ := replicas(t)
	indextest.FullSync(t, a, "lib", fm.LibraryState{RootID: "root"}, 10, indextest.Folder("root", "", "Root"))
	la := acquire(t, a, "lib")
	if err := a.UpdateLibrary(ctx, "lib", la.Fence(), func(fm.LibraryTx) error { return nil }); err != nil {
		t.Fatalf("a write under the lease: %v", err)
	}
	pgtest.LapseLease(t, url, "lib")
	err := a.UpdateLibrary(ctx, "lib", la.Fence(), func(tx fm.LibraryTx) error { return tx.Delete("root") })
	wantLeaseLost(t, "a write after the lease lapsed", err)
	if err := postgres.Renew(ctx, la); !errors.Is(err, fm.ErrLeaseLost) {
		t.Errorf("renewing a lapsed lease: %v; want it lost", err)
	}
	if _, err := a.Folder(ctx, "lib", "root"); err != nil {
		t.Errorf("the root after the fenced write: %v", err)
	}
}

// Two full syncs begun at once write distinct generations, and the one
// that commits second fails instead of committing over the first's: a
// commit compares the library's row with the one its sync began from.
func TestFullSyncsBegunAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, a, b := replicas(t)
	indextest.FullSync(t, a, "lib", fm.LibraryState{RootID: "root", StartPageToken: "0"}, 10, indextest.Folder("root", "", "Root"))
	writers := make([]fm.FullSyncWriter, 2)
	var wg sync.WaitGroup
	for i, db := range []*postgres.DB{a, b} {
		wg.Go(func() {
			w, err := db.BeginFullSync(ctx, "lib", fm.Fence{})
			if err != nil {
				t.Error(err)
				return
			}
			writers[i] = w
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if ga, gb := postgres.Generation(writers[0]), postgres.Generation(writers[1]); ga == gb {
		t.Fatalf("two full syncs begun at once write one generation, %d", ga)
	}
	tree := []fm.SyncedFolder{indextest.Folder("root", "", "Root"), indextest.Folder("x", "root", "x", "ann@example.com")}
	sets, folders, _ := indextest.FullSyncParts(tree)
	for _, w := range writers {
		defer w.Abort() //nolint:errcheck // the test checks what the index keeps
		if err := w.PutPermissionSets(sets); err != nil {
			t.Fatal(err)
		}
		if err := w.PutFolders(folders); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := writers[1].Commit(fm.LibraryState{RootID: "root", StartPageToken: "first"}); err != nil {
		t.Fatal(err)
	}
	want, _ := b.Library(ctx, "lib")
	_, err := writers[0].Commit(fm.LibraryState{RootID: "root", StartPageToken: "second"})
	if err == nil || !strings.Contains(err.Error(), "another sync committed the library") {
		t.Errorf("the second commit: %v; want it refused", err)
	}
	wantTree(t, url, want, tree)
}

// Every process has an identity of its own: two opened with the default
// options, on one host with one pid, do not both hold a lease.
func TestProcessIdentity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	a := fmtest.OpenPostgres(t, url, postgres.Options{})
	b := fmtest.OpenPostgres(t, url, postgres.Options{})
	acquire(t, a, "lib")
	if _, err := b.Acquire(ctx, "lib"); !errors.Is(err, fm.ErrLeaseHeld) {
		t.Errorf("a second process of the host and pid took a held lease: %v", err)
	}
	holders, err := b.Holders(ctx)
	if err != nil || !regexp.MustCompile(`^\S+ pid \d+ #[0-9a-f]{8}$`).MatchString(holders["lib"]) {
		t.Errorf("holders %q %v; want the holder named as host, pid and a random part", holders, err)
	}
}

// A replica that takes a library's lease reads the library's state as the
// last holder committed it, not as its cache last had it: deciding whether
// a library was ever synced, and from which token, on a stale state made
// replicas sync again what another had just synced (3 replicas, 10,000
// new drives: 2,733 full syncs too many). The row read under the lease is
// told to OnChange by the next refresh, as a row it read would be.
func TestLeaseReadsTheLibraryAsCommitted(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	var mu sync.Mutex
	var told []string
	a := fmtest.OpenPostgres(t, url, postgres.Options{Holder: "replica-a"})
	b := fmtest.OpenPostgres(t, url, postgres.Options{Holder: "replica-b", OnChange: func(id string) {
		mu.Lock()
		defer mu.Unlock()
		told = append(told, id)
	}})
	ctx := context.Background()
	la := acquire(t, a, "lib")
	indextest.FencedFullSync(t, a, "lib", la.Fence(), fm.LibraryState{RootID: "root", StartPageToken: "7"}, 10,
		indextest.Folder("root", "", "Root", "alice@example.com"))
	la.Release()
	want, err := a.Library(ctx, "lib")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Library(ctx, "lib"); fm.ErrorCode(err) != fm.ENOTFOUND {
		t.Fatalf("before its lease, replica b (no refresh since) reads the library: %v; want it not synced yet", err)
	}
	acquire(t, b, "lib")
	got, err := b.Library(ctx, "lib")
	if err != nil || got.StartPageToken != want.StartPageToken || got.Revision != want.Revision {
		t.Fatalf("under its lease, replica b reads %+v, %v; want %+v", got, err, want)
	}
	if err := postgres.Refresh(ctx, b); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(told, []string{"lib"}) {
		t.Errorf("replica b's refresh told OnChange of %v, want [lib]", told)
	}
}
