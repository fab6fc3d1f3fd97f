package bolt_test

import (
	"bytes"
	"context"
	"io"
	"testing"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/index/bolt"
	"github.com/foldermirror/foldermirror/internal/fmtest"
)

// readCatalog returns the catalog db keeps of a library, and the size
// ReadCatalog said it has.
func readCatalog(t *testing.T, db *bolt.DB, lib string) ([]byte, int64, error) {
	t.Helper()
	var got []byte
	var size int64
	err := db.ReadCatalog(context.Background(), lib, func(r io.Reader, n int64) error {
		var err error
		size = n
		got, err = io.ReadAll(r)
		return err
	})
	return got, size, err
}

// A catalog kept is read back as it was saved, whatever the parts' sizes
// (chunked at a megabyte); it replaces the one kept before, outlives a
// full sync, and goes with its library.
func TestCatalogKept(t *testing.T) {
	ctx := context.Background()
	db := fmtest.OpenBolt(t, t.TempDir())
	if err := db.SaveCatalog(ctx, "lib", [][]byte{[]byte("x")}); fm.ErrorCode(err) != fm.ENOTFOUND {
		t.Fatalf("a catalog of a library never synced: %v, want ENOTFOUND", err)
	}
	fullSync(t, db, "lib", state, 10, folder("root", "", "Root"))
	if _, _, err := readCatalog(t, db, "lib"); fm.ErrorCode(err) != fm.ENOTFOUND {
		t.Fatalf("no catalog kept yet: %v, want ENOTFOUND", err)
	}
	large := bytes.Repeat([]byte("0123456789abcdef"), 200_000) // 3.2 MB
	for _, parts := range [][][]byte{
		{[]byte("head"), large, nil, []byte("tail")},
		{[]byte("a second, smaller one")},
	} {
		if err := db.SaveCatalog(ctx, "lib", parts); err != nil {
			t.Fatal(err)
		}
		want := bytes.Join(parts, nil)
		got, size, err := readCatalog(t, db, "lib")
		if err != nil || !bytes.Equal(got, want) || size != int64(len(want)) {
			t.Fatalf("read back %d bytes (size %d), err %v; saved %d", len(got), size, err, len(want))
		}
	}
	fullSync(t, db, "lib", state, 10, folder("root", "", "Root"), folder("new", "root", "New"))
	if got, _, err := readCatalog(t, db, "lib"); err != nil || string(got) != "a second, smaller one" {
		t.Fatalf("after a full sync: %q, %v", got, err)
	}
	if err := db.DeleteLibrary(ctx, "lib", fm.Fence{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := readCatalog(t, db, "lib"); fm.ErrorCode(err) != fm.ENOTFOUND {
		t.Fatalf("the library deleted, its catalog: %v, want ENOTFOUND", err)
	}
}

// endingAfter is a context that ends once Err was asked n times.
type endingAfter struct {
	context.Context
	n int
}

func (c *endingAfter) Err() error {
	if c.n--; c.n < 0 {
		return context.Canceled
	}
	return nil
}

// A save cut short between its transactions leaves no catalog, not a part
// of one, nor the one kept before.
func TestCatalogSaveCutShort(t *testing.T) {
	ctx := context.Background()
	db := fmtest.OpenBolt(t, t.TempDir())
	fullSync(t, db, "lib", state, 10, folder("root", "", "Root"))
	if err := db.SaveCatalog(ctx, "lib", [][]byte{[]byte("the one before")}); err != nil {
		t.Fatal(err)
	}
	large := bytes.Repeat([]byte{7}, 40<<20) // three transactions' worth
	if err := db.SaveCatalog(&endingAfter{Context: ctx, n: 2}, "lib", [][]byte{large}); err == nil {
		t.Fatal("a save whose context ended succeeded")
	}
	if got, _, err := readCatalog(t, db, "lib"); fm.ErrorCode(err) != fm.ENOTFOUND {
		t.Fatalf("after a save cut short: %d bytes, %v; want ENOTFOUND", len(got), err)
	}
	if err := db.SaveCatalog(ctx, "lib", [][]byte{large}); err != nil {
		t.Fatal(err)
	}
	if got, _, err := readCatalog(t, db, "lib"); err != nil || !bytes.Equal(got, large) {
		t.Fatalf("saved again whole: %d bytes, %v", len(got), err)
	}
}
