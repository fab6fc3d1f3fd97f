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

// BenchmarkLoad measures what a daemon does for each library at start: a
// catalog's first Update, which reads the library from a bbolt index and
// makes its Library, in worlds shaped like the bench's (fmtest.World). The
// world of 1,000,000 folders is skipped with -short (making its index
// takes about a minute).
func BenchmarkLoad(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			if n > 100_000 && testing.Short() {
				b.Skip("-short: the world of 1,000,000 folders is not made")
			}
			db, st := worldIndex(b, n)
			b.ReportAllocs()
			for b.Loop() {
				l, err := New(db, "lib", nil).Update(context.Background(), &st)
				if err != nil {
					b.Fatal(err)
				}
				if l.Len() != n {
					b.Fatalf("the catalog holds %d folders, the index %d", l.Len(), n)
				}
			}
		})
	}
}
