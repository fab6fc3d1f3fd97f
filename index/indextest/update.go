package indextest

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"

	fm "github.com/foldermirror/foldermirror"
)

// testReadYourWrites: within one UpdateLibrary, every read sees the writes
// made before it, of the folder written and of its old and new parents,
// and the counts follow each write; so after a bulk of writes too, however
// the index batches them; and whether or not the transaction read ahead
// first (when it is a fm.LibraryPrefetcher). What committed is what the
// transaction last read.
func testReadYourWrites(t *testing.T, b Backend) {
	for _, prefetch := range []bool{false, true} {
		t.Run(fmt.Sprintf("prefetch %v", prefetch), func(t *testing.T) {
			b.parallel(t)
			ctx := context.Background()
			idx := b.Open(t)
			FullSync(t, idx, "lib", rootState, 10,
				Folder("root", "", "Root", alice), Folder("a", "root", "a", alice, bob),
				Folder("a1", "a", "a1", alice, bob), Folder("a2", "a", "a2", alice, bob), Folder("b", "root", "b", alice))
			var inTx fm.LibraryState
			err := idx.UpdateLibrary(ctx, "lib", fm.Fence{}, func(tx fm.LibraryTx) error {
				rw := &readWriter{t: t, tx: tx, prefetch: prefetch}
				rw.writeAndRead()
				inTx = tx.State()
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			st, err := idx.Library(ctx, "lib")
			if err != nil {
				t.Fatal(err)
			}
			if st.Folders != inTx.Folders || st.Permissions != inTx.Permissions {
				t.Errorf("committed counts %d folders, %d permissions; the transaction read %d and %d",
					st.Folders, st.Permissions, inTx.Folders, inTx.Permissions)
			}
			checkCounts(t, idx, "lib")
			for id, want := range map[string]string{"a1": "b", "c": "root", "d": "c", "bulk399": "bulk"} {
				if f, err := idx.Folder(ctx, "lib", id); err != nil || f.ParentID != want {
					t.Errorf("%s committed: %+v, %v; want it under %s", id, f, err, want)
				}
			}
			for _, id := range []string{"a2", "bulk400"} {
				if _, err := idx.Folder(ctx, "lib", id); fm.ErrorCode(err) != fm.ENOTFOUND {
					t.Errorf("%s committed: %v, want ENOTFOUND", id, err)
				}
			}
			if f, err := idx.Folder(ctx, "lib", "b"); err != nil || f.Name != "B" || !f.RestrictedDownload {
				t.Errorf("b committed: %+v, %v", f, err)
			}
		})
	}
}

const (
	alice = "alice@e.com"
	bob   = "bob@e.com"
	carol = "carol@e.com"
)

// readWriter writes to a transaction and checks what it reads back.
type readWriter struct {
	t        *testing.T
	tx       fm.LibraryTx
	prefetch bool
}

// writeAndRead writes to the tree the full sync of testReadYourWrites
// made, checking what the transaction reads after each write.
func (rw *readWriter) writeAndRead() {
	all := []string{"root", "a", "a1", "a2", "b", "c", "d", "nope"}
	rw.readAhead(all)
	rw.children("a", "a1", "a2")
	rw.absent("c")
	rw.counts(5, 8)

	dan := fm.Permission{ID: "d", Type: "user", Role: "writer", EmailAddress: "dan@e.com"}
	c := Folder("c", "a", "c", carol)
	c.Permissions, c.OwnPermissions = append(c.Permissions, dan), []fm.Permission{dan}
	rw.put(c)
	rw.folder("c", "a", "c")
	rw.permissions("c", c.Permissions, c.OwnPermissions)
	rw.permissions("a", Folder("", "", "", alice, bob).Permissions, []fm.Permission{})
	rw.children("a", "a1", "a2", "c")
	rw.counts(6, 10)

	rw.put(Folder("a1", "b", "A1", alice, bob)) // moved and renamed, same list
	rw.folder("a1", "b", "A1")
	rw.children("a", "a2", "c")
	rw.children("b", "a1")
	rw.counts(6, 10)

	shared := Folder("a2", "a", "a2", alice, bob, carol) // its list changes
	rw.put(shared)
	rw.permissions("a2", shared.Permissions, []fm.Permission{})
	rw.counts(6, 11)

	rw.replaceB()

	rw.must(rw.tx.Delete("a2"))
	rw.absent("a2")
	rw.children("a", "c")
	rw.must(rw.tx.Delete("a2")) // gone already: nothing changes
	for _, id := range []string{"a2", "nope"} {
		if err := rw.tx.Replace(&fm.Folder{ID: id, ParentID: "a", Name: id}); fm.ErrorCode(err) != fm.ENOTFOUND {
			rw.t.Errorf("Replace of %s, which the tree has not: %v, want ENOTFOUND", id, err)
		}
	}
	rw.absent("a2")
	rw.counts(5, 8)

	rw.must(rw.tx.Delete("c")) // c goes, and comes back elsewhere, with a child
	rw.put(Folder("c", "root", "c"))
	rw.put(Folder("d", "c", "d"))
	rw.readAhead(all)
	rw.children("root", "a", "b", "c")
	rw.children("a")
	rw.children("c", "d")
	rw.children("d")
	rw.folder("c", "root", "c")
	rw.permissions("c", []fm.Permission{}, []fm.Permission{})
	rw.counts(6, 6)

	rw.bulk()
}

// replaceB renames and restricts b, whose sets stay, and checks that a
// folder read is the caller's copy.
func (rw *readWriter) replaceB() {
	b := rw.folder("b", "root", "b")
	sets := [2]fm.PermissionSetKey{b.PermissionSet, b.OwnSet}
	b.Name, b.RestrictedDownload, b.PermissionSet = "B", true, fm.PermissionSetKey{7} // the key is ignored
	rw.must(rw.tx.Replace(b))
	b.Name = "scribbled" // after Replace: the caller's copy
	got := rw.folder("b", "root", "B")
	if got == nil {
		return
	}
	if !got.RestrictedDownload || [2]fm.PermissionSetKey{got.PermissionSet, got.OwnSet} != sets {
		rw.t.Errorf("b replaced: %+v; want it restricted, with its sets", got)
	}
	got.Name = "scribbled too"
	rw.folder("b", "root", "B")
	rw.permissions("b", Folder("", "", "", alice).Permissions, []fm.Permission{})
	rw.counts(6, 11)
}

// bulk writes more than any batch, under a folder of its own: 700
// folders, 300 of which then go.
func (rw *readWriter) bulk() {
	rw.put(Folder("bulk", "root", "bulk", carol))
	var want []string
	for i := range 700 {
		id := fmt.Sprintf("bulk%03d", i)
		rw.put(Folder(id, "bulk", id, carol))
		if i < 400 {
			want = append(want, id)
		}
	}
	for i := 400; i < 700; i++ {
		rw.must(rw.tx.Delete(fmt.Sprintf("bulk%03d", i)))
	}
	rw.children("bulk", want...)
	rw.counts(6+1+400, 6+1+400)
	rw.folder("bulk399", "bulk", "bulk399")
	rw.absent("bulk400")
}

func (rw *readWriter) must(err error) {
	rw.t.Helper()
	if err != nil {
		rw.t.Fatal(err)
	}
}

func (rw *readWriter) put(sf fm.SyncedFolder) {
	rw.t.Helper()
	rw.must(rw.tx.Put(sf))
}

// readAhead has the transaction read ahead ids, and their children, if
// the test does and the transaction can.
func (rw *readWriter) readAhead(ids []string) {
	rw.t.Helper()
	if pf, ok := rw.tx.(fm.LibraryPrefetcher); ok && rw.prefetch {
		rw.must(pf.Prefetch(ids, ids))
	}
}

// folder checks that the transaction reads a folder under parent named
// name, and returns it.
func (rw *readWriter) folder(id, parent, name string) *fm.Folder {
	rw.t.Helper()
	f, err := rw.tx.Folder(id)
	if err != nil || f.ID != id || f.ParentID != parent || f.Name != name {
		rw.t.Errorf("folder %s within the transaction: %+v, %v; want %q under %s", id, f, err, name, parent)
		return nil
	}
	return f
}

// absent checks that the transaction reads no folder id.
func (rw *readWriter) absent(id string) {
	rw.t.Helper()
	if f, err := rw.tx.Folder(id); fm.ErrorCode(err) != fm.ENOTFOUND {
		rw.t.Errorf("folder %s within the transaction: %+v, %v; want ENOTFOUND", id, f, err)
	}
	if _, _, err := rw.tx.Permissions(id); fm.ErrorCode(err) != fm.ENOTFOUND {
		rw.t.Errorf("permissions of %s within the transaction: %v; want ENOTFOUND", id, err)
	}
}

func (rw *readWriter) children(id string, want ...string) {
	rw.t.Helper()
	kids, err := rw.tx.Children(id)
	slices.Sort(kids)
	if err != nil || !slices.Equal(kids, want) {
		rw.t.Errorf("children of %s within the transaction: %v, %v; want %v", id, kids, err, want)
	}
}

func (rw *readWriter) permissions(id string, want, wantOwn []fm.Permission) {
	rw.t.Helper()
	perms, own, err := rw.tx.Permissions(id)
	if err != nil || !reflect.DeepEqual(perms, want) || !reflect.DeepEqual(own, wantOwn) {
		rw.t.Errorf("permissions of %s within the transaction: %v and own %v, %v; want %v and %v", id, perms, own, err, want, wantOwn)
	}
	f, err := rw.tx.Folder(id)
	if err == nil && (f.PermissionSet != fm.NewPermissionSet(want).Key || f.OwnSet != fm.NewPermissionSet(wantOwn).Key) {
		rw.t.Errorf("folder %s within the transaction refers to sets other than its lists': %+v", id, f)
	}
}

func (rw *readWriter) counts(folders, perms int) {
	rw.t.Helper()
	if st := rw.tx.State(); st.Folders != folders || st.Permissions != perms {
		rw.t.Errorf("counts within the transaction: %d folders, %d permissions; want %d and %d", st.Folders, st.Permissions, folders, perms)
	}
}

// checkCounts checks that a library's counts are those of its folders.
func checkCounts(t *testing.T, idx Index, lib string) {
	t.Helper()
	ctx := context.Background()
	st, err := idx.Library(ctx, lib)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := idx.Snapshot(ctx, lib)
	if err != nil {
		t.Fatal(err)
	}
	perms := 0
	for _, f := range snap {
		perms += len(f.Permissions)
	}
	if st.Folders != len(snap) || st.Permissions != perms {
		t.Errorf("the library counts %d folders and %d permissions; it has %d and %d", st.Folders, st.Permissions, len(snap), perms)
	}
}

// testFoldersReader: an index that reads many folders at once
// (fm.FoldersReader) reads those of ids it has, and no other.
func testFoldersReader(t *testing.T, b Backend) {
	ctx := context.Background()
	idx := b.Open(t)
	fr, ok := idx.(fm.FoldersReader)
	if !ok {
		t.Skipf("%T reads one folder at a time", idx)
	}
	folders := []fm.SyncedFolder{Folder("root", "", "Root", alice)}
	var ids []string
	for i := range 1200 {
		id := fmt.Sprintf("f%04d", i)
		folders = append(folders, Folder(id, "root", id))
		ids = append(ids, id, "no"+id)
	}
	FullSync(t, idx, "lib", rootState, 500, folders...)
	got, err := fr.Folders(ctx, "lib", append(ids, "root", "f0001")) // f0001 twice
	if err != nil {
		t.Fatal(err)
	}
	var gotIDs []string
	for _, f := range got {
		gotIDs = append(gotIDs, f.ID)
		if want, _ := idx.Folder(ctx, "lib", f.ID); want == nil || *want != f {
			t.Errorf("folder %s read with others: %+v; alone: %+v", f.ID, f, want)
		}
	}
	slices.Sort(gotIDs)
	if len(gotIDs) != 1201 || gotIDs[0] != "f0000" || gotIDs[1199] != "f1199" || gotIDs[1200] != "root" {
		t.Errorf("read %d folders (%v...), want the 1,201 of the library", len(gotIDs), gotIDs[:min(3, len(gotIDs))])
	}
	if got, err := fr.Folders(ctx, "never", ids[:3]); err != nil || len(got) != 0 {
		t.Errorf("folders of a library never synced: %v, %v", got, err)
	}
}

// testParentsReader: an index that tells which of many folders have
// children (fm.ParentsReader) names those of ids, and no other.
func testParentsReader(t *testing.T, b Backend) {
	ctx := context.Background()
	idx := b.Open(t)
	pr, ok := idx.(fm.ParentsReader)
	if !ok {
		t.Skipf("%T cannot tell which folders have children", idx)
	}
	folders := []fm.SyncedFolder{Folder("root", "", "Root", alice)}
	var ids []string
	for i := range 1200 {
		id := fmt.Sprintf("f%04d", i)
		parent := "root"
		if i%3 != 0 {
			parent = fmt.Sprintf("f%04d", i-i%3) // f0000 has f0001 and f0002, ...
		}
		folders = append(folders, Folder(id, parent, id))
		ids = append(ids, id, "no"+id)
	}
	FullSync(t, idx, "lib", rootState, 500, folders...)
	// f0000 twice; f000 the beginning of parents' IDs; "" the root's parent.
	got, err := pr.Parents(ctx, "lib", append(ids, "root", "f0000", "f000", ""))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if len(got) != 401 || got[0] != "f0000" || got[1] != "f0003" || got[399] != "f1197" || got[400] != "root" {
		t.Errorf("%d parents (%v...), want root and f0000, f0003... f1197", len(got), got[:min(3, len(got))])
	}
	if got, err := pr.Parents(ctx, "never", ids[:3]); err != nil || len(got) != 0 {
		t.Errorf("parents of a library never synced: %v, %v", got, err)
	}
	if got, err := pr.Parents(ctx, "lib", nil); err != nil || len(got) != 0 {
		t.Errorf("parents among no folders: %v, %v", got, err)
	}
}
