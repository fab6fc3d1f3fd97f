package postgres_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/index/postgres"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/pgtest"
)

// A snapshot stored by a foldermirror that did not keep user IDs is read
// with its users and their suspensions but no IDs (their Google tokens are
// refused until the next directory sync), with a warning that says so.
func TestDirectoryWithoutIDs(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	fmtest.OpenPostgres(t, url, postgres.Options{}).Close() // makes the schema
	pgtest.Exec(t, url, `INSERT INTO directories (domain, snapshot, version) VALUES ('example.com', convert_to('{"Domain":"example.com",`+
		`"Users":{"ann@example.com":false,"sid@example.com":true},"DirectGroups":{"ann@example.com":["eng@example.com"]},`+
		`"Unreadable":null,"SyncedAt":"2025-01-01T00:00:00Z"}', 'UTF8'), 1)`)
	var logs fmtest.LogBuffer
	db := fmtest.OpenPostgres(t, url, postgres.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for email, want := range map[string]fm.DirectoryEntry{
		"ann@example.com": {Known: true, InDirectory: true, Groups: []string{"eng@example.com"}},
		"sid@example.com": {InDirectory: true},
	} {
		got, err := db.Lookup(context.Background(), email)
		if err != nil || got.Known != want.Known || got.InDirectory != want.InDirectory || got.ID != "" ||
			strings.Join(got.Groups, ",") != strings.Join(want.Groups, ",") {
			t.Errorf("%s in a snapshot without IDs: %+v %v, want %+v", email, got, err, want)
		}
	}
	if got := logs.String(); !strings.Contains(got, "did not keep user IDs") || !strings.Contains(got, "usersWithoutID=2") {
		t.Errorf("log of a snapshot without IDs: %q", got)
	}
}
