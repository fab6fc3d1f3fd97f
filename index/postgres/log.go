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
// row's log_start on, within the bounds of the root package's rules
// (fm.ChangeLog, fm.PrunedLog, fm.KeepsLog, fm.ChangeSetFits).

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
	if !rec.Overfull() {
		return nil
	}
	return pruneLog(ctx, tx, rec, fm.PrunedLogSize)
}

// pruneLog deletes the revisions fm.PrunedLog drops to keep at most keep
// entries.
func pruneLog(ctx context.Context, tx pgx.Tx, rec *record, keep uint64) error {
	rows, err := tx.Query(ctx, `SELECT revision, count(*) FROM changes WHERE library = $1
		GROUP BY revision ORDER BY revision DESC`, rec.ID)
	if err != nil {
		return err
	}
	revs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[fm.LogRevision])
	if err != nil {
		return err
	}
	pruned := fm.PrunedLog(rec.Revision, keep, revs)
	if _, err := tx.Exec(ctx, "DELETE FROM changes WHERE library = $1 AND revision < $2", rec.ID, pruned.LogStart); err != nil {
		return err
	}
	rec.ChangeLog = pruned
	return nil
}

// resetLog empties the log: readers older than rec's revision must read the
// whole library again.
func resetLog(ctx context.Context, tx pgx.Tx, rec *record) error {
	if _, err := tx.Exec(ctx, "DELETE FROM changes WHERE library = $1", rec.ID); err != nil {
		return err
	}
	rec.ChangeLog = fm.FreshLog(rec.Revision)
	return nil
}
