package catalog

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"reflect"
	"testing"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/index/bolt"
	"github.com/foldermirror/foldermirror/index/indextest"
)

// countingIndex is a bbolt index that counts the libraries it reads whole
// and the catalogs it saves.
type countingIndex struct {
	*bolt.DB
	reads, saves int
}

func (c *countingIndex) ReadLibrary(ctx context.Context, libraryID string, r fm.LibraryReader) (*fm.LibraryState, error) {
	c.reads++
	return c.DB.ReadLibrary(ctx, libraryID, r)
}

func (c *countingIndex) SaveCatalog(ctx context.Context, libraryID string, parts [][]byte) error {
	c.saves++
	return c.DB.SaveCatalog(ctx, libraryID, parts)
}

// keepAll has catalogs of every size kept, for the test.
func keepAll(t *testing.T) {
	t.Helper()
	old, oldAfterSync := keepFrom, keepAfterSyncFrom
	keepFrom, keepAfterSyncFrom = 1, 1
	t.Cleanup(func() { keepFrom, keepAfterSyncFrom = old, oldAfterSync })
}

// Keep leaves a library smaller than keepAfterSyncFrom to be read whole at
// the next start: it neither reads nor saves it.
func TestKeepLeavesSmallLibraries(t *testing.T) {
	keepAll(t)
	keepAfterSyncFrom = 1 << 30
	w := newWorld(t, 11)
	idx := &countingIndex{DB: w.db}
	if err := Keep(context.Background(), idx, "lib"); err != nil || idx.reads != 0 || idx.saves != 0 {
		t.Fatalf("Keep of a small library: %v, %d reads, %d saves; want none", err, idx.reads, idx.saves)
	}
}

// update brings c to the index's revision.
func update(t *testing.T, c *Catalog, db *bolt.DB) *Library {
	t.Helper()
	st, err := db.Library(context.Background(), "lib")
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.Update(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// sameBase fails the test unless a and b hold the same folders in the same
// places, the same records and the same grants.
func sameBase(t *testing.T, when string, a, b *Library) {
	t.Helper()
	ad, ae := a.base.ids.Parts()
	bd, be := b.base.ids.Parts()
	for _, c := range []struct {
		what string
		a, b any
	}{
		{"IDs", ad, bd}, {"ID ends", ae, be}, {"sizes", a.base.size, b.base.size}, {"parents", a.base.parent, b.base.parent},
		{"sets", a.base.set, b.base.set}, {"flags", a.base.flags, b.base.flags}, {"records", a.base.record, b.base.record},
		{"arena", a.base.arena, b.base.arena}, {"revision", a.base.revision, b.base.revision},
		{"set keys", a.grants.keys, b.grants.keys}, {"grants", a.grants.all, b.grants.all},
		{"grant starts", a.grants.start, b.grants.start}, {"principals", a.grants.principals.names, b.grants.principals.names},
	} {
		if !reflect.DeepEqual(c.a, c.b) {
			t.Fatalf("%s: the %s differ:\n%v\n%v", when, c.what, c.a, c.b)
		}
	}
}

// A catalog read from the one the index keeps holds what one read from
// the whole library holds, and catches up with the changes since it was
// kept, incremental and full syncs alike; a catalog that follows the index
// saves only the bases it makes (each compaction), not each change.
func TestKeptCatalogAnswersAsRead(t *testing.T) {
	keepAll(t)
	for _, small := range []bool{false, true} {
		t.Run(fmt.Sprintf("compact often %v", small), func(t *testing.T) {
			if small {
				defer func(share, least int) { compactShare, minDeltaToCompact = share, least }(compactShare, minDeltaToCompact)
				compactShare, minDeltaToCompact = 4, 8
			}
			for seed := range uint64(catalogSeeds) {
				w := newWorld(t, seed)
				idx := &countingIndex{DB: w.db}
				follower := New(idx, "lib", nil)
				read := update(t, follower, w.db)
				if err := follower.Save(context.Background()); err != nil || idx.saves != 1 {
					t.Fatalf("seed %d: saving the first catalog: %v, %d saves", seed, err, idx.saves)
				}
				kept := update(t, New(idx, "lib", nil), w.db)
				sameBase(t, fmt.Sprintf("seed %d, kept", seed), read, kept)
				bases := map[*base]bool{read.base: true}
				for step := range 60 {
					w.step()
					l := update(t, follower, w.db)
					bases[l.base] = true
					if err := follower.Save(context.Background()); err != nil {
						t.Fatal(err)
					}
					if idx.saves != len(bases) {
						t.Fatalf("seed %d step %d: %d saves for %d bases", seed, step, idx.saves, len(bases))
					}
					fresh := update(t, New(idx, "lib", nil), w.db)
					check(t, fmt.Sprintf("seed %d step %d, from the catalog kept", seed, step), fresh, w.m, "root")
				}
				if idx.reads != 1 {
					t.Fatalf("seed %d: the library was read whole %d times, want once", seed, idx.reads)
				}
			}
		})
	}
}

// A catalog kept is not used, but the library read whole, when it is
// corrupt, of another format, or made at a revision the index cannot lead
// from to its own; the catalog then made is the library's.
func TestKeptCatalogNotUsed(t *testing.T) {
	keepAll(t)
	w := newWorld(t, 7)
	idx := &countingIndex{DB: w.db}
	c := New(idx, "lib", nil)
	l := update(t, c, w.db)
	if err := c.Save(context.Background()); err != nil {
		t.Fatal(err)
	}
	good := keptBytes(t, w.db)
	flip := func(at int) func(t *testing.T) [][]byte {
		return func(*testing.T) [][]byte {
			b := bytes.Clone(good)
			b[at] ^= 0x20
			return [][]byte{b}
		}
	}
	cases := []struct {
		name string
		kept func(t *testing.T) [][]byte
	}{
		{"magic", flip(0)},
		{"format", flip(8)},
		{"byte order", flip(12)},
		{"checksum", flip(16)},
		{"revision", flip(headerLen)},
		{"count of folders", flip(headerLen + 8)},
		{"an ID", flip(headerLen + countsLen + 3)},
		{"a byte in the middle", flip(len(good) / 2)},
		{"the last byte", flip(len(good) - 1)},
		{"cut short", func(*testing.T) [][]byte { return [][]byte{good[:len(good)-1]} }},
		{"a byte more", func(*testing.T) [][]byte { return [][]byte{good, {0}} }},
		{"the next format", func(*testing.T) [][]byte {
			b := bytes.Clone(good)
			b[8]++ // savedFormat, in either byte order
			return [][]byte{b}
		}},
		{"a revision the index has not reached", func(*testing.T) [][]byte {
			ahead := *l.base
			ahead.revision += 5
			return encodeSaved(&ahead, l.grants)
		}},
		{"a revision before a full sync of a new root", func(t *testing.T) [][]byte {
			w.moveRoot(t)
			return [][]byte{good}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := w.db.SaveCatalog(context.Background(), "lib", tc.kept(t)); err != nil {
				t.Fatal(err)
			}
			reads := idx.reads
			got := update(t, New(idx, "lib", nil), w.db)
			if idx.reads != reads+1 {
				t.Fatalf("the library was read whole %d times, want once", idx.reads-reads)
			}
			check(t, tc.name, got, w.m, w.root())
		})
	}
}

// keptBytes returns the catalog the index keeps.
func keptBytes(t *testing.T, db *bolt.DB) []byte {
	t.Helper()
	var kept []byte
	err := db.ReadCatalog(context.Background(), "lib", func(r io.Reader, _ int64) error {
		var err error
		kept, err = io.ReadAll(r)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return kept
}

// root returns the ID of the world's root.
func (w *world) root() string {
	for id, f := range w.m {
		if f.ParentID == "" {
			return id
		}
	}
	return ""
}

// moveRoot syncs the world again whole, its root a new folder above the
// old one: the index starts its log afresh.
func (w *world) moveRoot(t *testing.T) {
	t.Helper()
	old := w.root()
	top := w.folder("top-"+old, "")
	f := w.m[old]
	f.ParentID = top.ID
	w.m[old], w.m[top.ID] = f, top
	var all []fm.SyncedFolder
	for _, id := range w.ids() {
		all = append(all, w.m[id])
	}
	indextest.FullSync(t, w.db, "lib", fm.LibraryState{RootID: top.ID}, 50, all...)
}

// An index that keeps no catalogs (PostgreSQL) has each catalog read
// whole, and Save does nothing.
func TestIndexKeepsNoCatalog(t *testing.T) {
	keepAll(t)
	w := newWorld(t, 3)
	idx := &countingIndex{DB: w.db}
	for range 2 {
		c := New(readerOnly{idx}, "lib", nil)
		check(t, "read", update(t, c, w.db), w.m, "root")
		if err := c.Save(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if idx.reads != 2 || idx.saves != 0 {
		t.Fatalf("%d reads and %d saves, want 2 and none", idx.reads, idx.saves)
	}
}

// Keep, after a sync, has the index keep a catalog it can lead from: the
// first time from the library read whole, then from the one kept, saving a
// new one only when the changes since make a new base.
func TestKeep(t *testing.T) {
	keepAll(t)
	ctx := context.Background()
	w := newWorld(t, 11)
	idx := &countingIndex{DB: w.db}
	if err := Keep(ctx, readerOnly{idx}, "lib"); err != nil || idx.reads != 0 {
		t.Fatalf("Keep on an index that keeps no catalogs: %v, %d reads", err, idx.reads)
	}
	for i, want := range []struct{ reads, saves int }{{1, 1}, {1, 1}} {
		if err := Keep(ctx, idx, "lib"); err != nil {
			t.Fatal(err)
		}
		if idx.reads != want.reads || idx.saves != want.saves {
			t.Fatalf("Keep %d: %d reads, %d saves; want %d, %d", i, idx.reads, idx.saves, want.reads, want.saves)
		}
	}
	defer func(share, least int) { compactShare, minDeltaToCompact = share, least }(compactShare, minDeltaToCompact)
	compactShare, minDeltaToCompact = 1<<20, 0 // every change makes a new base
	added := w.folder("added", "root")
	w.m[added.ID] = added
	if err := w.db.UpdateLibrary(ctx, "lib", fm.Fence{}, func(tx fm.LibraryTx) error { return tx.Put(added) }); err != nil {
		t.Fatal(err)
	}
	if err := Keep(ctx, idx, "lib"); err != nil || idx.saves != 2 {
		t.Fatalf("Keep after a change: %v, %d saves, want 2", err, idx.saves)
	}
	check(t, "kept after a change", update(t, New(idx, "lib", nil), w.db), w.m, "root")
	if idx.reads != 1 {
		t.Fatalf("the library read whole %d times, want once", idx.reads)
	}
}

// A kept catalog changed at random, its checksum made right again, is
// refused or read into a Library whose every folder can be walked and
// viewed: what decodeSaved lets through does not make readers fail.
func FuzzDecodeSaved(f *testing.F) {
	set := fm.NewPermissionSet([]fm.Permission{{ID: "1", Type: "user", Role: "reader", EmailAddress: "a@e.com"}})
	ld := newLoader(newGrantTable(), 0)
	_ = ld.PermissionSet(set)
	for i, parent := range []string{"", "root", "root", "a", "b", "a"} {
		id := []string{"root", "a", "b", "c", "d", "e"}[i]
		_ = ld.Folder(&fm.Folder{ID: id, ParentID: parent, Name: `Name "` + id, PermissionSet: set.Key})
	}
	b, err := ld.base("root")
	if err != nil {
		f.Fatal(err)
	}
	kept := bytes.Join(encodeSaved(b, ld.grants.view()), nil)
	f.Add(kept, uint16(0), byte(0))
	f.Add(kept, uint16(headerLen+9), byte(0x40))
	f.Add(kept, uint16(len(kept)-1), byte(1))
	f.Fuzz(func(t *testing.T, kept []byte, at uint16, xor byte) {
		kept = bytes.Clone(kept)
		if len(kept) > int(at) {
			kept[at] ^= xor
		}
		if len(kept) >= headerLen {
			binary.NativeEndian.PutUint32(kept[16:], crc32.Update(0, castagnoli, kept[headerLen:]))
		}
		s, err := decodeSaved(bytes.NewReader(kept), int64(len(kept)))
		if err != nil {
			return
		}
		l := &Library{base: s.base, grants: s.grants.view()}
		l.All(func(r Ref) bool {
			l.View(r)
			l.Grants(r)
			l.Children(r, func(Ref) bool { return true })
			return true
		})
	})
}
