package postgres_test

import (
	"context"
	"fmt"
	"testing"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/index/indextest"
	"github.com/foldermirror/foldermirror/index/postgres"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/pgtest"
	"github.com/jackc/pgx/v5"
)

// A full sync that writes a large share of the folders table updates its
// statistics (after the first, PostgreSQL would otherwise think it empty
// and scan it whole for each lookup); a small one leaves them to
// autovacuum (thousands of small drives, each followed by ANALYZE, kept
// the server busy with nothing else).
func TestStatisticsAfterLargeFullSyncs(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	db := fmtest.OpenPostgres(t, url, postgres.Options{})
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows := func() float64 {
		t.Helper()
		var n float64
		if err := conn.QueryRow(context.Background(), "SELECT reltuples FROM pg_class WHERE oid = 'folders'::regclass").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, step := range []struct {
		library  string
		folders  int
		analyzed bool
	}{
		{"large", 1200, true},
		{"small", 100, false},
		{"larger", 1500, true},
	} {
		before := rows()
		indextest.FullSync(t, db, step.library, fm.LibraryState{RootID: step.library + "-root"}, 500, tree(step.library, step.folders)...)
		if after := rows(); (after != before) != step.analyzed {
			t.Errorf("after a full sync of %d folders the statistics count %v rows, %v before; want them updated: %v",
				step.folders, after, before, step.analyzed)
		}
	}
}

// tree returns a library's root and n-1 folders under it.
func tree(library string, n int) []fm.SyncedFolder {
	root := library + "-root"
	out := []fm.SyncedFolder{indextest.Folder(root, "", "Root")}
	for i := 1; i < n; i++ {
		out = append(out, indextest.Folder(fmt.Sprintf("%s-%05d", library, i), root, fmt.Sprint("folder ", i)))
	}
	return out
}
