package bolt_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/index/bolt"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	bbolt "go.etcd.io/bbolt"
)

// The unreadable groups are kept with the directory.
func TestDirectoryKeepsUnreadableGroups(t *testing.T) {
	dir := t.TempDir()
	db := fmtest.OpenBolt(t, dir)
	err := db.ReplaceDirectory(context.Background(), &fm.DirectorySnapshot{Domain: "beta.example",
		Users: map[string]fm.DirectoryUser{}, Unreadable: []string{"a@gamma.org", "b@gamma.org"}}, fm.Fence{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	var got []string
	rawBolt(t, dir, func(tx *bbolt.Tx) error {
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
func rawBolt(t *testing.T, dir string, fn func(*bbolt.Tx) error) {
	t.Helper()
	b, err := bbolt.Open(filepath.Join(dir, bolt.FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Update(fn); err != nil {
		t.Fatal(err)
	}
}

// A directory stored by a foldermirror that did not keep user IDs (one
// byte a user: suspended or not) is read with its users and their
// suspensions but no IDs (their Google tokens are refused until the next
// directory sync), with a warning that says so.
func TestDirectoryWithoutIDs(t *testing.T) {
	dir := t.TempDir()
	db := fmtest.OpenBolt(t, dir)
	err := db.ReplaceDirectory(context.Background(), &fm.DirectorySnapshot{Domain: "example.com",
		Users: map[string]fm.DirectoryUser{"ann@example.com": {ID: "101"}, "sid@example.com": {ID: "102", Suspended: true}}}, fm.Fence{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	rawBolt(t, dir, func(tx *bbolt.Tx) error {
		users := tx.Bucket([]byte("directory")).Bucket([]byte("example.com")).Bucket([]byte("users"))
		return errors.Join(users.Put([]byte("ann@example.com"), []byte{0}), users.Put([]byte("sid@example.com"), []byte{1}))
	})
	var logs fmtest.LogBuffer
	old, err := bolt.Open(dir, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	for email, want := range map[string]fm.DirectoryEntry{
		"ann@example.com": {Known: true, InDirectory: true}, "sid@example.com": {InDirectory: true},
	} {
		if got, err := old.Lookup(context.Background(), email); err != nil || got.Known != want.Known || got.InDirectory != want.InDirectory || got.ID != "" {
			t.Errorf("%s in a directory without IDs: %+v %v, want %+v", email, got, err, want)
		}
	}
	if got := logs.String(); !strings.Contains(got, "did not keep user IDs") || !strings.Contains(got, "usersWithoutID=2") {
		t.Errorf("log of a directory without IDs: %q", got)
	}
}
