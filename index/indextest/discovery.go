package indextest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
)

// discoveryTests are the suite's tests of the DiscoveryStore.
var discoveryTests = []test{
	{"DiscoveryRoundTrip", testDiscoveryRoundTrip},
	{"DiscoveryRevision", testDiscoveryRevision},
	{"DiscoveryFenced", testDiscoveryFenced},
	{"DeleteLibrary", testDeleteLibrary},
	{"DeleteLibraryFenced", testDeleteLibraryFenced},
}

// discoveredAt is when the suite's discoveries end: to the microsecond,
// as an index keeps times at least.
var discoveredAt = time.Date(2031, 5, 6, 7, 8, 9, 123456000, time.UTC)

// A discovery is kept as it was put, for each domain apart, across a
// reopening: its account, time and error, its drives sorted by ID (byte
// by byte), the first of two of one ID, their names byte for byte, and
// whether they are hidden. A new index has none, and a discovery names a
// domain.
func testDiscoveryRoundTrip(t *testing.T, b Backend) {
	ctx := context.Background()
	idx := b.Open(t)
	wantDiscoveries(t, idx, "a new index")
	wantDrives(t, idx, "a new index", "example.com", 0)

	drives := []fm.DiscoveredDrive{
		{ID: "0b", Name: "lower b"},
		{ID: "0B", Name: "Q3 \x00 plans 🙂", Hidden: true},
		{ID: "0a", Name: "lower a"},
		{ID: "0b", Name: "lower b, given twice"},
		{ID: "0A", Name: ""},
	}
	ex := fm.Discovery{Domain: "example.com", StorageAccount: "storage@example.com", At: discoveredAt, Drives: drives}
	other := fm.Discovery{Domain: "other.example", StorageAccount: "store@other.example", At: discoveredAt.Add(time.Hour),
		Error: "drives.list: 403 Forbidden", Drives: []fm.DiscoveredDrive{{ID: "0z", Name: "Z"}}}
	putDiscovery(t, idx, ex, fm.Fence{})
	putDiscovery(t, idx, other, fm.Fence{})
	if err := idx.PutDiscovery(ctx, fm.Discovery{StorageAccount: "storage@example.com"}, fm.Fence{}); err == nil {
		t.Error("a discovery of no domain was put")
	}

	ex.Revision, other.Revision = 1, 1
	sorted := []fm.DiscoveredDrive{drives[4], drives[1], drives[2], drives[0]}
	check := func(idx Index, when string) {
		t.Helper()
		wantDiscoveries(t, idx, when, ex, other)
		wantDrives(t, idx, when, "example.com", 1, sorted...)
		wantDrives(t, idx, when, "other.example", 1, other.Drives...)
		wantDrives(t, idx, when+", a domain never discovered", "never.example", 0)
	}
	check(idx, "two domains' discoveries put")
	check(b.Reopen(t, idx), "after reopening")
}

// The revision grows when the drives put differ from those stored, and
// only then; a discovery put without drives (one that failed) records its
// time and error and keeps the drives; every put records the account.
func testDiscoveryRevision(t *testing.T, b Backend) {
	idx := b.Open(t)
	driveA, driveB, driveC := fm.DiscoveredDrive{ID: "0a", Name: "A"}, fm.DiscoveredDrive{ID: "0b", Name: "B"}, fm.DiscoveredDrive{ID: "0c", Name: "C"}
	renamed, hidden := fm.DiscoveredDrive{ID: "0b", Name: "B renamed"}, fm.DiscoveredDrive{ID: "0a", Name: "A", Hidden: true}
	for i, step := range []struct {
		what     string
		drives   []fm.DiscoveredDrive // nil: a failed discovery, which keeps them
		error    string
		revision uint64
		want     []fm.DiscoveredDrive
	}{
		{"the first discovery", []fm.DiscoveredDrive{driveB, driveA}, "", 1, []fm.DiscoveredDrive{driveA, driveB}},
		{"the same drives again, in another order", []fm.DiscoveredDrive{driveA, driveB}, "", 1, []fm.DiscoveredDrive{driveA, driveB}},
		{"a drive renamed", []fm.DiscoveredDrive{driveA, renamed}, "", 2, []fm.DiscoveredDrive{driveA, renamed}},
		{"a drive hidden", []fm.DiscoveredDrive{hidden, renamed}, "", 3, []fm.DiscoveredDrive{hidden, renamed}},
		{"a failed discovery", nil, "drives.list: 503 backendError", 3, []fm.DiscoveredDrive{hidden, renamed}},
		{"a drive added", []fm.DiscoveredDrive{hidden, renamed, driveC}, "", 4, []fm.DiscoveredDrive{hidden, renamed, driveC}},
		{"a drive left", []fm.DiscoveredDrive{renamed, driveC}, "", 5, []fm.DiscoveredDrive{renamed, driveC}},
		{"a drive left and another added", []fm.DiscoveredDrive{driveA, driveC}, "", 6, []fm.DiscoveredDrive{driveA, driveC}},
		{"no drive found", []fm.DiscoveredDrive{}, "", 7, nil},
		{"no drive found again", []fm.DiscoveredDrive{}, "", 7, nil},
	} {
		d := fm.Discovery{Domain: "example.com", StorageAccount: fmt.Sprintf("storage%d@example.com", i),
			At: discoveredAt.Add(time.Duration(i) * time.Minute), Error: step.error, Drives: step.drives, Revision: 99}
		putDiscovery(t, idx, d, fm.Fence{})
		d.Revision = step.revision
		wantDiscoveries(t, idx, step.what, d)
		wantDrives(t, idx, step.what, "example.com", step.revision, step.want...)
	}
}

// A discovery is written under the lease of its storage account, fenced
// as every write (see fm.Fence): an index processes share refuses the
// zero Fence while a process holds the lease, and a fence given back or of
// another lease, writing nothing; one process alone writes under any.
func testDiscoveryFenced(t *testing.T, b Backend) {
	ctx := context.Background()
	idx := b.Open(t)
	d := fm.Discovery{Domain: "example.com", StorageAccount: "storage@example.com", At: discoveredAt,
		Drives: []fm.DiscoveredDrive{{ID: "0a", Name: "A"}}}
	l, err := idx.Leases().Acquire(ctx, fm.DiscoveryLease(d.StorageAccount))
	if err != nil {
		t.Fatal(err)
	}
	putDiscovery(t, idx, d, l.Fence())
	other, err := idx.Leases().Acquire(ctx, fm.DiscoveryLease("other@example.com"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Release()
	refused := fm.Discovery{Domain: d.Domain, StorageAccount: d.StorageAccount, Error: "refused",
		Drives: []fm.DiscoveredDrive{{ID: "0z", Name: "Z"}}}
	err = idx.PutDiscovery(ctx, refused, fm.Fence{})
	wantFenced(t, b, "a write without a lease while the process holds it", err, fm.ErrLeaseHeld)
	err = idx.PutDiscovery(ctx, refused, other.Fence())
	wantFenced(t, b, "a write under another account's lease", err, nil)
	l.Release()
	err = idx.PutDiscovery(ctx, refused, l.Fence())
	wantFenced(t, b, "a write under a lease given back", err, fm.ErrLeaseLost)
	if b.Shared {
		d.Revision = 1
		wantDiscoveries(t, idx, "after the fenced writes", d)
		wantDrives(t, idx, "after the fenced writes", d.Domain, 1, d.Drives...)
	}
}

// Deleting a library removes all the index keeps of it: every read
// answers ENOTFOUND, before and after a reopening, and an update too;
// other libraries stay. A new full sync of it then writes it anew, at a
// revision above the last it had, from which a reader holding the old
// tree is told to read it again. Deleting a library never synced, or
// deleted already, is no error.
func testDeleteLibrary(t *testing.T, b Backend) {
	ctx := context.Background()
	idx := b.Open(t)
	FullSync(t, idx, "lib", rootState, 10, Folder("root", "", "Root", "ann@example.com"), Folder("old", "root", "Old"))
	err := idx.UpdateLibrary(ctx, "lib", fm.Fence{}, func(tx fm.LibraryTx) error { return tx.Put(Folder("new", "root", "New")) })
	if err != nil {
		t.Fatal(err)
	}
	FullSync(t, idx, "kept", rootState, 10, Folder("root", "", "Kept"))
	before, err := idx.Library(ctx, "lib")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"lib", "lib", "never-synced"} {
		if err := idx.DeleteLibrary(ctx, id, fm.Fence{}); err != nil {
			t.Errorf("DeleteLibrary(%s): %v", id, err)
		}
	}
	wantDeleted(t, idx, "lib")
	idx = b.Reopen(t, idx)
	wantDeleted(t, idx, "lib")
	if f, err := idx.Folder(ctx, "kept", "root"); err != nil || f.Name != "Kept" {
		t.Errorf("another library's root: %+v, %v", f, err)
	}

	FullSync(t, idx, "lib", rootState, 10, Folder("root", "", "Root again"))
	st, err := idx.Library(ctx, "lib")
	if err != nil || st.Revision <= before.Revision || st.Folders != 1 {
		t.Errorf("the library synced again: %+v, %v; want a revision above %d and 1 folder", st, err, before.Revision)
	}
	if cs, err := idx.Changes(ctx, "lib", before.Revision); err != nil || !cs.Reread {
		t.Errorf("changes since the deleted library's last revision: %+v, %v; want the library read again", cs, err)
	}
	var c collector
	if _, err := idx.ReadLibrary(ctx, "lib", &c); err != nil || len(c.folders) != 1 || c.folders["root"].Name != "Root again" {
		t.Errorf("the library synced again reads %v, %v; want its new root alone", c.folders, err)
	}
}

// A library is deleted under its lease, fenced as every write: an index
// processes share refuses the zero Fence while a process holds the lease,
// and a fence given back, deleting nothing.
func testDeleteLibraryFenced(t *testing.T, b Backend) {
	ctx := context.Background()
	idx := b.Open(t)
	FullSync(t, idx, "lib", rootState, 10, Folder("root", "", "Root"))
	l, err := idx.Leases().Acquire(ctx, "lib")
	if err != nil {
		t.Fatal(err)
	}
	wantFenced(t, b, "a deletion without a lease while the process holds it", idx.DeleteLibrary(ctx, "lib", fm.Fence{}), fm.ErrLeaseHeld)
	l.Release()
	wantFenced(t, b, "a deletion under a lease given back", idx.DeleteLibrary(ctx, "lib", l.Fence()), fm.ErrLeaseLost)
	if b.Shared {
		if _, err := idx.Folder(ctx, "lib", "root"); err != nil {
			t.Errorf("the library after the fenced deletions: %v", err)
		}
	}
	again, err := idx.Leases().Acquire(ctx, "lib")
	if err != nil {
		t.Fatal(err)
	}
	err = idx.DeleteLibrary(ctx, "lib", again.Fence())
	again.Release()
	if err != nil {
		t.Fatalf("a deletion under the lease: %v", err)
	}
	wantDeleted(t, idx, "lib")
}

// wantFenced fails the test unless err is what a write refused by its
// fence gives (wrapping want, if set) on an index processes share, and
// nil on one a process holds alone, whose writes ignore their fence.
func wantFenced(t *testing.T, b Backend, what string, err, want error) {
	t.Helper()
	switch {
	case !b.Shared && err != nil:
		t.Errorf("%s: %v; want it made, the fence ignored", what, err)
	case b.Shared && err == nil:
		t.Errorf("%s was made; want it refused", what)
	case b.Shared && want != nil && !errors.Is(err, want):
		t.Errorf("%s: %v; want it refused with %q", what, err, want)
	}
}

// wantDeleted fails the test unless every read of the library answers
// ENOTFOUND, and an update too.
func wantDeleted(t *testing.T, idx Index, lib string) {
	t.Helper()
	ctx := context.Background()
	for _, tc := range []struct {
		read string
		err  error
	}{
		{"Library", second(idx.Library(ctx, lib))},
		{"ReadLibrary", second(idx.ReadLibrary(ctx, lib, &collector{}))},
		{"Changes", second(idx.Changes(ctx, lib, 0))},
		{"Folder", second(idx.Folder(ctx, lib, "root"))},
		{"Permissions", second(idx.Permissions(ctx, lib, "root"))},
		{"UpdateLibrary", idx.UpdateLibrary(ctx, lib, fm.Fence{}, func(fm.LibraryTx) error { return nil })},
	} {
		if fm.ErrorCode(tc.err) != fm.ENOTFOUND {
			t.Errorf("%s of the deleted library %s: %v; want ENOTFOUND", tc.read, lib, tc.err)
		}
	}
}

// putDiscovery puts d under fence, failing the test if it cannot.
func putDiscovery(t *testing.T, idx fm.DiscoveryStore, d fm.Discovery, fence fm.Fence) {
	t.Helper()
	if err := idx.PutDiscovery(context.Background(), d, fence); err != nil {
		t.Fatalf("PutDiscovery(%s): %v", d.Domain, err)
	}
}

// wantDiscoveries fails the test unless idx keeps exactly the discoveries
// want, in any order, without their drives.
func wantDiscoveries(t *testing.T, idx fm.DiscoveryStore, when string, want ...fm.Discovery) {
	t.Helper()
	got, err := idx.Discoveries(context.Background())
	if err != nil {
		t.Fatalf("%s: Discoveries: %v", when, err)
	}
	if slices.ContainsFunc(got, func(d fm.Discovery) bool { return d.Drives != nil }) {
		t.Errorf("%s: Discoveries returns drives", when)
	}
	if g, w := describeDiscoveries(got), describeDiscoveries(want); !slices.Equal(g, w) {
		t.Errorf("%s: discoveries\n%s\nwant\n%s", when, strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
}

// describeDiscoveries describes discoveries but for their drives, sorted
// by domain, one line each, with the time in UTC to the nanosecond.
func describeDiscoveries(discoveries []fm.Discovery) []string {
	discoveries = slices.SortedFunc(slices.Values(discoveries), func(x, y fm.Discovery) int { return cmp.Compare(x.Domain, y.Domain) })
	lines := make([]string, 0, len(discoveries))
	for _, d := range discoveries {
		lines = append(lines, fmt.Sprintf("%s %s %s %q revision %d", d.Domain, d.StorageAccount,
			d.At.UTC().Format(time.RFC3339Nano), d.Error, d.Revision))
	}
	return lines
}

// wantDrives fails the test unless idx keeps the drives want, in that
// order, at revision, for domain.
func wantDrives(t *testing.T, idx fm.DiscoveryStore, when, domain string, revision uint64, want ...fm.DiscoveredDrive) {
	t.Helper()
	got, rev, err := idx.DiscoveredDrives(context.Background(), domain)
	if err != nil {
		t.Fatalf("%s: DiscoveredDrives(%s): %v", when, domain, err)
	}
	if !slices.Equal(got, want) || rev != revision {
		t.Errorf("%s: drives of %s\n%+v at revision %d\nwant\n%+v at revision %d", when, domain, got, rev, want, revision)
	}
}
