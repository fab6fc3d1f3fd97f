package indextest

import (
	"context"
	"slices"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
)

func testDirectory(t *testing.T, b Backend) {
	ctx := context.Background()
	db := b.Open(t)
	err := db.ReplaceDirectory(ctx, &fm.DirectorySnapshot{
		Domain: "example.com",
		Users: map[string]fm.DirectoryUser{
			"alice@example.com": {ID: "101"}, "sid@example.com": {ID: "102", Suspended: true},
		},
		DirectGroups: map[string][]string{
			"alice@example.com": {"eng@example.com", "all@example.com"}, "pat@partner.org": {"eng@example.com"},
		},
		SyncedAt: time.Unix(1700000000, 0).UTC(),
	}, fm.Fence{})
	if err != nil {
		t.Fatal(err)
	}
	_ = db.ReplaceDirectory(ctx, &fm.DirectorySnapshot{Domain: "partner.org",
		Users: map[string]fm.DirectoryUser{"pat@partner.org": {ID: "201"}}, DirectGroups: map[string][]string{"pat@partner.org": {"staff@partner.org"}}}, fm.Fence{})

	check := func(when string) {
		t.Helper()
		for _, tc := range []struct {
			email string
			want  fm.DirectoryEntry
		}{
			{"Alice@Example.com", fm.DirectoryEntry{Known: true, InDirectory: true, ID: "101", Groups: []string{"all@example.com", "eng@example.com"}}},
			{"sid@example.com", fm.DirectoryEntry{InDirectory: true, ID: "102"}},
			{"pat@partner.org", fm.DirectoryEntry{Known: true, InDirectory: true, ID: "201", Groups: []string{"eng@example.com", "staff@partner.org"}}},
			{"nobody@example.com", fm.DirectoryEntry{}},
		} {
			got, err := db.Lookup(ctx, tc.email)
			if err != nil || !equalEntries(got, tc.want) {
				t.Errorf("%s: Lookup(%s) = %+v %v, want %+v", when, tc.email, got, err, tc.want)
			}
		}
	}
	check("before reopening")
	db = b.Reopen(t, db)
	check("after reopening")

	// A new snapshot replaces the old one whole.
	_ = db.ReplaceDirectory(ctx, &fm.DirectorySnapshot{Domain: "example.com", Users: map[string]fm.DirectoryUser{"sid@example.com": {ID: "102"}}}, fm.Fence{})
	if got, _ := db.Lookup(ctx, "alice@example.com"); !equalEntries(got, fm.DirectoryEntry{}) {
		t.Errorf("alice after she left: %+v", got)
	}
	if got, _ := db.Lookup(ctx, "sid@example.com"); !got.Known || got.ID != "102" {
		t.Errorf("sid after reinstatement: %+v", got)
	}
}

func equalEntries(a, b fm.DirectoryEntry) bool {
	return a.Known == b.Known && a.InDirectory == b.InDirectory && a.ID == b.ID && slices.Equal(a.Groups, b.Groups)
}

// Groups nest across domains, whichever domain's directory is replaced
// last, and after reopening: the index resolves them across its
// directories. A domain's replacement drops what it alone made.
func testDirectoryGroupsAcrossDomains(t *testing.T, b Backend) {
	ctx := context.Background()
	alpha := &fm.DirectorySnapshot{Domain: "alpha.example",
		Users: map[string]fm.DirectoryUser{"ann@alpha.example": {ID: "301"}},
		DirectGroups: map[string][]string{
			"ann@alpha.example":   {"leads@alpha.example"},
			"ring@beta.example":   {"ring@alpha.example"},
			"leads@alpha.example": {"ring@alpha.example"},
		}}
	beta := &fm.DirectorySnapshot{Domain: "beta.example",
		Users: map[string]fm.DirectoryUser{"bob@beta.example": {ID: "401"}},
		DirectGroups: map[string][]string{
			"leads@alpha.example": {"eng@beta.example"},
			"ring@alpha.example":  {"ring@beta.example"},
			"bob@beta.example":    {"eng@beta.example"},
			"outside@gamma.org":   {"eng@beta.example"},
		},
		Unreadable: []string{"outside@gamma.org"}}
	annGroups := []string{"eng@beta.example", "leads@alpha.example", "ring@alpha.example", "ring@beta.example"}
	for _, order := range [][]*fm.DirectorySnapshot{{alpha, beta}, {beta, alpha}} {
		t.Run(order[0].Domain+" first", func(t *testing.T) {
			b.parallel(t)
			db := b.Open(t)
			for _, snap := range order {
				if err := db.ReplaceDirectory(ctx, snap, fm.Fence{}); err != nil {
					t.Fatal(err)
				}
			}
			wantGroups(t, db, "ann@alpha.example", annGroups)
			db = b.Reopen(t, db)
			wantGroups(t, db, "ann@alpha.example", annGroups)
			wantGroups(t, db, "bob@beta.example", []string{"eng@beta.example"})

			// leads@alpha leaves eng@beta: alpha's ann leaves it too.
			_ = db.ReplaceDirectory(ctx, &fm.DirectorySnapshot{Domain: "beta.example",
				Users: beta.Users, DirectGroups: map[string][]string{"bob@beta.example": {"eng@beta.example"}}}, fm.Fence{})
			wantGroups(t, db, "ann@alpha.example", []string{"leads@alpha.example", "ring@alpha.example"})
		})
	}
}

func wantGroups(t *testing.T, db Index, email string, want []string) {
	t.Helper()
	if got, err := db.Lookup(context.Background(), email); err != nil || !slices.Equal(got.Groups, want) {
		t.Errorf("groups of %s: %v %v, want %v", email, got.Groups, err, want)
	}
}
