package index_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/index"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	bolt "go.etcd.io/bbolt"
)

// The unreadable groups are kept with the directory.
func TestDirectoryKeepsUnreadableGroups(t *testing.T) {
	dir := t.TempDir()
	db := fmtest.OpenBolt(t, dir)
	err := db.ReplaceDirectory(context.Background(), &fm.DirectorySnapshot{Domain: "beta.example",
		Users: map[string]bool{}, Unreadable: []string{"a@gamma.org", "b@gamma.org"}}, fm.Fence{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	var got []string
	rawBolt(t, dir, func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("directory")).Bucket([]byte("beta.example")).Bucket([]byte("unreadable")).
			ForEach(func(k, _ []byte) error { got = append(got, string(k)); return nil })
	})
	if !slices.Equal(got, []string{"a@gamma.org", "b@gamma.org"}) {
		t.Errorf("unreadable groups stored: %v", got)
	}
	fmtest.OpenBolt(t, dir) // and read back without complaint
}

// rawBolt opens the index file of dir with bbolt and runs fn in a write
// transaction.
func rawBolt(t *testing.T, dir string, fn func(*bolt.Tx) error) {
	t.Helper()
	b, err := bolt.Open(filepath.Join(dir, index.FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Update(fn); err != nil {
		t.Fatal(err)
	}
}
