package postgres

import (
	"context"

	fm "github.com/foldermirror/foldermirror"
	"github.com/jackc/pgx/v5"
)

// Each library keeps a log of the folders each revision wrote or removed
// (the changes table), so that a reader holding an older revision in
// memory (the API's catalog, another replica's) can catch up by reading
// those folders alone. It holds every change of the revisions from the
// row's log_start on, within the bounds fm.MaxLogEntries and
// fm.MaxLoggedDrift, as the bbolt index's does.

// appendLog records that rec's revision changed the folders ids, and drops
// the oldest revisions if the log grows past its bound.
func appendLog(ctx context.Context, tx pgx.Tx, rec *record, ids []string) error {
	if _, err := tx.Exec(ctx, `INSERT INTO changes (library, revision, folder_id)
		SELECT $1, $2, unnest($3::text[]) ON CONFLICT DO NOTHING`, rec.ID, rec.Revision, ids); err != nil {
		return err
	}
	return addedToLog(ctx, tx, rec, int64(len(ids)))
}

// addedToLog counts n entries added to the log, and prunes it past its
// bound.
func addedToLog(ctx context.Context, tx pgx.Tx, rec *record, n int64) error {
	rec.LogEntries += uint64(n)
	if rec.LogEntries <= fm.MaxLogEntries {
		return nil
	}
	return pruneLog(ctx, tx, rec, fm.MaxLogEntries*3/4)
}

// pruneLog deletes whole revisions from the start of the log until at most
// keep entries remain.
func pruneLog(ctx context.Context, tx pgx.Tx, rec *record, keep uint64) error {
	rows, err := tx.Query(ctx, `SELECT revision, count(*) FROM changes WHERE library = $1
		GROUP BY revision ORDER BY revision DESC`, rec.ID)
	if err != nil {
		return err
	}
	var kept uint64
	start := rec.Revision + 1
	for rows.Next() {
		var rev, n uint64
		if err := rows.Scan(&rev, &n); err != nil {
			rows.Close()
			return err
		}
		if kept+n > keep {
			break
		}
		kept += n
		start = rev
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "DELETE FROM changes WHERE library = $1 AND revision < $2", rec.ID, start); err != nil {
		return err
	}
	rec.LogStart, rec.LogEntries = start, kept
	return nil
}

// resetLog empties the log: readers older than rec's revision must read the
// whole library again.
func resetLog(ctx context.Context, tx pgx.Tx, rec *record) error {
	if _, err := tx.Exec(ctx, "DELETE FROM changes WHERE library = $1", rec.ID); err != nil {
		return err
	}
	rec.LogStart, rec.LogEntries = rec.Revision+1, 0
	return nil
}
