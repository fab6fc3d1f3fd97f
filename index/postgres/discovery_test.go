package postgres_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/index/indextest"
	"github.com/foldermirror/foldermirror/index/postgres"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/pgtest"
)

// dropSchema5 drops the tables migration 5 makes, to make a database
// an earlier foldermirror migrated.
const dropSchema5 = "DROP TABLE discovered_drives, discoveries, retired_libraries"

// A database an earlier foldermirror migrated, without discoveries, is
// migrated: its libraries kept, discoveries stored from then on, and a
// library deleted.
func TestMigrationAddsDiscoveries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	db := fmtest.OpenPostgres(t, url, postgres.Options{})
	for _, lib := range []string{"lib", "deleted"} {
		indextest.FullSync(t, db, lib, fm.LibraryState{RootID: "root", StartPageToken: "42"}, 10, indextest.Folder("root", "", "Root"))
	}
	db.Close()
	pgtest.Exec(t, url, dropSchema5, "UPDATE foldermirror_schema_version SET version = 4")

	db = fmtest.OpenPostgres(t, url, postgres.Options{})
	if st, err := db.Library(ctx, "lib"); err != nil || st.StartPageToken != "42" {
		t.Errorf("the library after the migration: %+v, %v; want it kept", st, err)
	}
	d := fm.Discovery{Domain: "example.com", StorageAccount: "storage@example.com", Drives: []fm.DiscoveredDrive{{ID: "0a", Name: "A"}}}
	if err := db.PutDiscovery(ctx, d, fm.Fence{}); err != nil {
		t.Errorf("a discovery put after the migration: %v", err)
	}
	if err := db.DeleteLibrary(ctx, "deleted", fm.Fence{}); err != nil {
		t.Errorf("a library deleted after the migration: %v", err)
	}
}

// A discovery that finds the drives the last one found writes none of
// their rows; one that finds a drive renamed, one left and one added
// writes the renamed drive's row and the added one's, deletes the left
// one's, and leaves the others' as they were.
func TestDiscoveryWritesOnlyWhatChanged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := fmtest.OpenPostgres(t, pgtest.NewDatabase(t), postgres.Options{})
	drives := make([]fm.DiscoveredDrive, 1000)
	for i := range drives {
		drives[i] = fm.DiscoveredDrive{ID: fmt.Sprintf("0d%04d", i), Name: fmt.Sprint("drive ", i)}
	}
	put := func(drives []fm.DiscoveredDrive) map[string]string {
		t.Helper()
		d := fm.Discovery{Domain: "example.com", StorageAccount: "storage@example.com", Drives: drives}
		if err := db.PutDiscovery(ctx, d, fm.Fence{}); err != nil {
			t.Fatal(err)
		}
		versions, err := postgres.DriveRowVersions(ctx, db, "example.com")
		if err != nil {
			t.Fatal(err)
		}
		return versions
	}
	first := put(drives)
	reversed := slices.Clone(drives)
	slices.Reverse(reversed)
	if again := put(reversed); !maps.Equal(again, first) {
		t.Errorf("the same drives put again rewrote %d rows, want none", len(differing(first, again)))
	}

	next := slices.Clone(drives[1:]) // 0d0000 left
	next[0].Name = "renamed"         // 0d0001
	next = append(next, fm.DiscoveredDrive{ID: "0e", Name: "added"})
	if got, want := differing(first, put(next)), []string{"0d0000", "0d0001", "0e"}; !slices.Equal(got, want) {
		t.Errorf("a drive renamed, one left and one added: rows %v written or deleted, want %v", got, want)
	}
}

// differing returns the IDs whose row versions differ between a and b, or
// that one of them lacks, sorted.
func differing(a, b map[string]string) []string {
	var ids []string
	for id := range maps.Keys(a) {
		if b[id] != a[id] {
			ids = append(ids, id)
		}
	}
	for id := range maps.Keys(b) {
		if _, ok := a[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// A library one replica deletes, another that follows the database's
// commits forgets, and is told of: its Library and ReadLibrary answer
// ENOTFOUND, while the other libraries stay.
func TestReplicasForgetDeletedLibraries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	a := fmtest.OpenPostgres(t, url, postgres.Options{})
	for _, lib := range []string{"lib", "kept"} {
		indextest.FullSync(t, a, lib, fm.LibraryState{RootID: "root"}, 10, indextest.Folder("root", "", "Root"))
	}
	changed := make(chan string, 10)
	b := fmtest.OpenPostgres(t, url, postgres.Options{Poll: 50 * time.Millisecond, OnChange: func(lib string) { changed <- lib }})
	if _, err := b.Library(ctx, "lib"); err != nil {
		t.Fatalf("the other replica reads the library: %v", err)
	}
	watching, stop := context.WithCancel(ctx)
	defer stop()
	go b.Watch(watching)

	if err := a.DeleteLibrary(ctx, "lib", fm.Fence{}); err != nil {
		t.Fatal(err)
	}
	select {
	case lib := <-changed:
		if lib != "lib" {
			t.Errorf("told of %q, want lib", lib)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the other replica was not told of the deletion within 10 s")
	}
	if _, err := b.Library(ctx, "lib"); fm.ErrorCode(err) != fm.ENOTFOUND {
		t.Errorf("the other replica's Library of the deleted library: %v; want ENOTFOUND", err)
	}
	if _, err := b.ReadLibrary(ctx, "lib", discard{}); fm.ErrorCode(err) != fm.ENOTFOUND {
		t.Errorf("the other replica's ReadLibrary of the deleted library: %v; want ENOTFOUND", err)
	}
	if _, err := b.Library(ctx, "kept"); err != nil {
		t.Errorf("the other replica's Library of another library: %v", err)
	}
}

// discard is an fm.LibraryReader that keeps nothing.
type discard struct{}

func (discard) PermissionSet(fm.PermissionSet) error { return nil }
func (discard) Folder(*fm.Folder) error              { return nil }

// BenchmarkDiscovery measures the discoveries of 10,000 shared drives.
func BenchmarkDiscovery(b *testing.B) {
	indextest.BenchDiscovery(b, fmtest.OpenPostgres(b, pgtest.NewDatabase(b), postgres.Options{}))
}
