package index_test

import (
	"context"
	"slices"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
)

func TestDirectory(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := openTemp(t, dir)
	err := db.ReplaceDirectory(ctx, &fm.DirectorySnapshot{
		Domain:   "example.com",
		Users:    map[string]bool{"alice@example.com": false, "sid@example.com": true},
		Groups:   map[string][]string{"alice@example.com": {"eng@example.com", "all@example.com"}, "pat@partner.org": {"eng@example.com"}},
		SyncedAt: time.Unix(1700000000, 0).UTC(),
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = db.ReplaceDirectory(ctx, &fm.DirectorySnapshot{Domain: "partner.org",
		Users: map[string]bool{"pat@partner.org": false}, Groups: map[string][]string{"pat@partner.org": {"staff@partner.org"}}})

	check := func(when string) {
		t.Helper()
		for _, tc := range []struct {
			email  string
			known  bool
			groups []string
		}{
			{"Alice@Example.com", true, []string{"all@example.com", "eng@example.com"}},
			{"sid@example.com", false, nil},
			{"pat@partner.org", true, []string{"eng@example.com", "staff@partner.org"}},
			{"nobody@example.com", false, nil},
		} {
			known, groups, err := db.Lookup(ctx, tc.email)
			slices.Sort(groups)
			if err != nil || known != tc.known || !slices.Equal(groups, tc.groups) {
				t.Errorf("%s: Lookup(%s) = %v %v %v, want %v %v", when, tc.email, known, groups, err, tc.known, tc.groups)
			}
		}
	}
	check("before reopening")
	db.Close()
	db = openTemp(t, dir)
	check("after reopening")

	// A new snapshot replaces the old one whole.
	_ = db.ReplaceDirectory(ctx, &fm.DirectorySnapshot{Domain: "example.com", Users: map[string]bool{"sid@example.com": false}})
	if known, groups, _ := db.Lookup(ctx, "alice@example.com"); known || len(groups) != 0 {
		t.Errorf("alice after she left: %v %v", known, groups)
	}
	if known, _, _ := db.Lookup(ctx, "sid@example.com"); !known {
		t.Error("sid not known after reinstatement")
	}
}
