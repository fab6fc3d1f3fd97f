package foldermirror

// The rules every index backend follows, whatever it stores: which changes
// readers see, how the revision grows, and how the change log is bounded.
// The backends keep their storage; every decision is one of these.

// FirstRevision is the revision of a library's first tree.
const FirstRevision uint64 = 1

// VisibleChange reports whether next differs from s in a field of the state
// readers see beyond the tree: RootID, DriveID or SharingRequiresOrganizer.
// What syncs keep for themselves (StartPageToken, the sync times) and what
// the index maintains (ID, counts, revision) are not.
func (s LibraryState) VisibleChange(next LibraryState) bool {
	return s.RootID != next.RootID || s.DriveID != next.DriveID ||
		s.SharingRequiresOrganizer != next.SharingRequiresOrganizer
}

// Adopt returns w, a state a writer gave, with the fields the index
// maintains taken from s: the ID, the counts of folders and permissions,
// and the revision. A writer's own are ignored.
func (s LibraryState) Adopt(w LibraryState) LibraryState {
	w.ID, w.Folders, w.Permissions, w.Revision = s.ID, s.Folders, s.Permissions, s.Revision
	return w
}

// NextRevision returns the revision of next, the state a write (a
// LibraryTx, a full sync's commit) leads to from s: s's, one more if the
// write changed the tree readers see (treeChanged: a folder written or
// removed, a full sync that drifted) or a field of the state they see
// (VisibleChange). It grows once a write, however much changed; counts and
// next's own revision play no part.
func (s LibraryState) NextRevision(next LibraryState, treeChanged bool) uint64 {
	if treeChanged || s.VisibleChange(next) {
		return s.Revision + 1
	}
	return s.Revision
}

// SameView reports whether readers holding s and o see the same library:
// the same revision of the same root.
func (s LibraryState) SameView(o LibraryState) bool {
	return s.Revision == o.Revision && s.RootID == o.RootID
}

// Bounds of the change log an index keeps for Changes. Past them, readers
// at an older revision read the whole library again.
const (
	// MaxLogEntries is the most entries a library's log holds: past it, the
	// oldest revisions go.
	MaxLogEntries = 250_000
	// PrunedLogSize is the most entries a log past MaxLogEntries keeps once
	// pruned: a quarter of the bound is freed at once, so that a log at its
	// bound is not pruned again at every write.
	PrunedLogSize = MaxLogEntries * 3 / 4
	// MaxLoggedDrift is the most folders a full sync's drift logs: a full
	// sync that drifted more starts the log afresh.
	MaxLoggedDrift = 100_000
	// MaxChangeSet is the most folders one ChangeSet holds.
	MaxChangeSet = 100_000
)

// ChangeLog is what an index records, with a library's state, of the
// library's log of changes: an entry for each folder a revision wrote or
// removed, from revision LogStart on.
type ChangeLog struct {
	// LogStart is the first revision whose changes the log holds: readers
	// at an older revision must read the library again.
	LogStart uint64
	// LogEntries counts the log's entries.
	LogEntries uint64
}

// FreshLog returns the empty log of a library at revision: it starts after
// it, so that readers at an older revision read the library again.
func FreshLog(revision uint64) ChangeLog { return ChangeLog{LogStart: revision + 1} }

// Overfull reports whether the log holds more than MaxLogEntries entries:
// it is then pruned (PrunedLog) to PrunedLogSize.
func (l ChangeLog) Overfull() bool { return l.LogEntries > MaxLogEntries }

// LogRevision is how many entries of a change log one revision holds.
type LogRevision struct {
	Revision uint64
	Entries  uint64
}

// PrunedLog returns what a log keeps when pruned to at most keep entries:
// the newest whole revisions that hold no more than keep together, the
// oldest going first. newestFirst lists the revisions the log holds, newest
// first; revision is the library's. The entries of the revisions before the
// returned LogStart are to be deleted; a log that keeps none starts afresh.
func PrunedLog(revision, keep uint64, newestFirst []LogRevision) ChangeLog {
	l := FreshLog(revision)
	for _, r := range newestFirst {
		if l.LogEntries+r.Entries > keep {
			break
		}
		l.LogStart, l.LogEntries = r.Revision, l.LogEntries+r.Entries
	}
	return l
}

// Catchup is how a reader holding a library at an older revision catches
// up with it.
type Catchup uint8

// The ways to catch up.
const (
	// CatchupNone: the reader is at the library's revision, or past it:
	// nothing changed.
	CatchupNone Catchup = iota
	// CatchupLog: the log holds every change after the reader's revision:
	// the folders it names are read (unless more than fit a ChangeSet).
	CatchupLog
	// CatchupReread: the log does not reach back to the reader's revision:
	// it reads the whole library again (ChangeSet.Reread).
	CatchupReread
)

// Catchup says how a reader at revision since catches up with a library at
// revision whose log is l.
func (l ChangeLog) Catchup(since, revision uint64) Catchup {
	switch {
	case since >= revision:
		return CatchupNone
	case since+1 < l.LogStart:
		return CatchupReread
	}
	return CatchupLog
}

// ChangeSetFits reports whether a ChangeSet may hold the given number of
// folders (MaxChangeSet): past it, the reader reads the library again.
func ChangeSetFits(folders int) bool { return folders <= MaxChangeSet }

// Loggable reports whether a full sync's drift is small enough to be logged
// (MaxLoggedDrift): a larger one starts the log afresh.
func (d Drift) Loggable() bool { return d.Total() <= MaxLoggedDrift }

// KeepsLog reports whether a full sync that led a library from prev to next,
// drifting by d, keeps the library's log, adding the folders it drifted by
// as the changes of its revision. If not, the log starts afresh at that
// revision (FreshLog): a new root, or a drift too large to be logged.
func KeepsLog(prev, next LibraryState, d Drift) bool {
	return prev.RootID == next.RootID && d.Loggable()
}
