// Package indextest is the conformance suite every index backend passes:
// the behaviour the syncer and the API rely on, whatever keeps the index.
package indextest

import (
	"cmp"
	"context"
	"slices"
	"testing"

	fm "github.com/foldermirror/foldermirror"
)

// Index is what the suite tests: an index as the daemon uses it
// (fm.Index), and the reads tests and checks use.
type Index interface {
	fm.Index
	// Snapshot returns every folder of a library with its permissions,
	// sorted by ID.
	Snapshot(ctx context.Context, libraryID string) ([]fm.SyncedFolder, error)
}

// LogPruner is what a backend's tests add to its index so that the suite
// can prune a library's log as the index does past fm.MaxLogEntries,
// without writing that many entries. Every index the suite opens has it.
type LogPruner interface {
	// PruneLog prunes a library's log to at most keep entries.
	PruneLog(libraryID string, keep uint64) error
	// LogBounds returns the first revision a library's log holds and its
	// number of entries.
	LogBounds(libraryID string) (start, entries uint64)
}

// Backend opens indexes for the suite.
type Backend struct {
	// Open returns a new, empty index, closed when the test ends.
	Open func(t *testing.T) Index
	// Reopen closes idx and opens the same index again, closed when the
	// test ends: what was committed must still be there.
	Reopen func(t *testing.T, idx Index) Index
	// Shared: processes share the index, and its leases fence their
	// writes (see fm.Fence). An index one process holds alone ignores
	// the fences.
	Shared bool
	// Parallel runs the suite's tests, and the cases of each, at once
	// (t.Parallel): each has an index of its own. For a backend whose
	// tests mostly wait for a server (Open and Reopen must then be safe to
	// call at once).
	Parallel bool
}

// parallel marks t as one to run at once with the others when b asks.
func (b Backend) parallel(t *testing.T) {
	if b.Parallel {
		t.Parallel()
	}
}

// test is a test of the suite.
type test struct {
	name string
	test func(*testing.T, Backend)
}

// updateTests are the suite's tests of UpdateLibrary.
var updateTests = []test{
	{"Revision", testRevision},
	{"UpdateLibrary", testUpdateLibrary},
	{"ReadYourWrites", testReadYourWrites},
	{"FailedUpdateChangesNothing", testFailedUpdateChangesNothing},
	{"PermissionSetsAreShared", testPermissionSetsAreShared},
	{"SetsChangedTwiceInAnUpdate", testSetsChangedTwiceInAnUpdate},
	{"Changes", testChanges},
}

// Run runs every test of the suite against backend b.
func Run(t *testing.T, b Backend) {
	run(t, b, append([]test{
		{"Reads", testReads},
		{"FoldersReader", testFoldersReader},
		{"ParentsReader", testParentsReader},
		{"ReadLibrary", testReadLibrary},
		{"ReadersSeeOldTreeUntilCommit", testReadersSeeOldTreeUntilCommit},
		{"AbortLeavesTheOldTree", testAbortLeavesTheOldTree},
		{"WriterChecksOrder", testWriterChecksOrder},
		{"FinishedWriterRefusesMore", testFinishedWriterRefusesMore},
		{"DriftAndRevision", testDriftAndRevision},
		{"PermissionsKeepDrivesOrder", testPermissionsKeepDrivesOrder},
		{"Snapshot", testSnapshot},
		{"ChangesAcrossFullSyncs", testChangesAcrossFullSyncs},
		{"LogPruning", testLogPruning},
		{"Directory", testDirectory},
		{"DirectoryGroupsAcrossDomains", testDirectoryGroupsAcrossDomains},
		{"LeasedWrites", testLeasedWrites},
		{"PushChannels", testPushChannels},
	}, slices.Concat(discoveryTests, updateTests)...))
}

// RunUpdates runs the suite's tests of UpdateLibrary alone against
// backend b: for a backend to run them again configured otherwise (with
// smaller batches of writes, say).
func RunUpdates(t *testing.T, b Backend) { run(t, b, updateTests) }

func run(t *testing.T, b Backend, tests []test) {
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b.parallel(t)
			tc.test(t, b)
		})
	}
}

// Folder returns a synced folder granting reader to each user, with no
// permission of its own.
func Folder(id, parent, name string, readers ...string) fm.SyncedFolder {
	sf := fm.SyncedFolder{Folder: fm.Folder{ID: id, ParentID: parent, Name: name}}
	for i, r := range readers {
		sf.Permissions = append(sf.Permissions, fm.Permission{ID: "p" + string(rune('0'+i)), Type: "user", Role: "reader", EmailAddress: r})
	}
	return sf
}

// FullSync replaces the library's tree with folders, handed to the writer
// as a full sync does (sets, then folders by ID, then links by parent, in
// batches of batch), and returns the drift.
func FullSync(t testing.TB, idx fm.IndexWriter, lib string, state fm.LibraryState, batch int, folders ...fm.SyncedFolder) fm.Drift {
	t.Helper()
	return FencedFullSync(t, idx, lib, fm.Fence{}, state, batch, folders...)
}

// FencedFullSync is FullSync under fence.
func FencedFullSync(t testing.TB, idx fm.IndexWriter, lib string, fence fm.Fence, state fm.LibraryState, batch int, folders ...fm.SyncedFolder) fm.Drift {
	t.Helper()
	w, err := idx.BeginFullSync(context.Background(), lib, fence)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort() //nolint:errcheck // a no-op after Commit
	sets, records, links := FullSyncParts(folders)
	for part := range slices.Chunk(sets, batch) {
		if err := w.PutPermissionSets(part); err != nil {
			t.Fatal(err)
		}
	}
	for part := range slices.Chunk(records, batch) {
		if err := w.PutFolders(part); err != nil {
			t.Fatal(err)
		}
	}
	for part := range slices.Chunk(links, batch) {
		if err := w.PutChildren(part); err != nil {
			t.Fatal(err)
		}
	}
	d, err := w.Commit(state)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// FullSyncParts splits folders into what a FullSyncWriter takes, in the
// orders it takes them.
func FullSyncParts(folders []fm.SyncedFolder) ([]fm.PermissionSet, []fm.Folder, []fm.ChildLink) {
	seen := map[fm.PermissionSetKey]bool{}
	var sets []fm.PermissionSet
	var records []fm.Folder
	var links []fm.ChildLink
	for _, sf := range folders {
		f := sf.Folder
		for _, list := range [][]fm.Permission{sf.Permissions, sf.OwnPermissions} {
			s := fm.NewPermissionSet(list)
			if !seen[s.Key] {
				seen[s.Key] = true
				sets = append(sets, s)
			}
		}
		f.PermissionSet = fm.NewPermissionSet(sf.Permissions).Key
		f.OwnSet = fm.NewPermissionSet(sf.OwnPermissions).Key
		records = append(records, f)
		if f.ParentID != "" {
			links = append(links, fm.ChildLink{ParentID: f.ParentID, ChildID: f.ID})
		}
	}
	slices.SortFunc(records, func(a, b fm.Folder) int { return cmp.Compare(a.ID, b.ID) })
	slices.SortFunc(links, func(a, b fm.ChildLink) int {
		return cmp.Or(cmp.Compare(a.ParentID, b.ParentID), cmp.Compare(a.ChildID, b.ChildID))
	})
	return sets, records, links
}

// rootState is the state the suite's full syncs commit.
var rootState = fm.LibraryState{RootID: "root", StartPageToken: "7"}

func second[T any](_ T, err error) error { return err }
