package catalog

import (
	"context"
	"fmt"
	"testing"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/index/bolt"
	"github.com/foldermirror/foldermirror/index/indextest"
	"github.com/foldermirror/foldermirror/internal/fmtest"
)

// worldIndex returns a bbolt index holding fmtest.World(n) as library
// "lib", fully synced.
func worldIndex(tb testing.TB, n int) (*bolt.DB, fm.LibraryState) {
	tb.Helper()
	root, folders := fmtest.World(n)
	db := fmtest.OpenBolt(tb, tb.TempDir())
	indextest.FullSync(tb, db, "lib", fm.LibraryState{RootID: root}, 5000, folders...)
	st, err := db.Library(context.Background(), "lib")
	if err != nil {
		tb.Fatal(err)
	}
	return db, *st
}

// readerOnly is an index that keeps no catalogs.
type readerOnly struct{ fm.IndexReader }

// BenchmarkLoad measures what a daemon does for each library at start (a
// catalog's first Update) on a bbolt index, in worlds shaped like the
// bench's (fmtest.World): "read" reads the library whole from the index
// and makes its Library; "kept" reads the catalog the index keeps. "save"
// is what a sync adds once it commits a library whose catalog the index
// cannot lead from: the library read whole, and its catalog saved. The
// world of 1,000,000 folders is skipped with -short (making its index
// takes about a minute).
func BenchmarkLoad(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			if n > 100_000 && testing.Short() {
				b.Skip("-short: the world of 1,000,000 folders is not made")
			}
			db, st := worldIndex(b, n)
			b.Run("read", func(b *testing.B) { benchmarkUpdate(b, readerOnly{db}, &st, n) })
			b.Run("save", func(b *testing.B) { benchmarkSave(b, db, n) })
			b.Run("kept", func(b *testing.B) { benchmarkUpdate(b, db, &st, n) })
		})
	}
}

// benchmarkUpdate measures a new catalog's first Update.
func benchmarkUpdate(b *testing.B, idx fm.IndexReader, st *fm.LibraryState, n int) {
	b.ReportAllocs()
	for b.Loop() {
		l, err := New(idx, "lib", nil).Update(context.Background(), st)
		if err != nil {
			b.Fatal(err)
		}
		if l.Len() != n {
			b.Fatalf("the catalog holds %d folders, the index %d", l.Len(), n)
		}
	}
}

// benchmarkSave measures a library read whole and its catalog saved.
func benchmarkSave(b *testing.B, db *bolt.DB, n int) {
	b.ReportAllocs()
	for b.Loop() {
		c := New(db, "lib", nil)
		l, err := c.readAll(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		c.current.Store(l)
		if err := c.Save(context.Background()); err != nil {
			b.Fatal(err)
		}
		if l.Len() != n {
			b.Fatalf("the catalog holds %d folders, the index %d", l.Len(), n)
		}
	}
}
