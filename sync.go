package foldermirror

import "time"

// SyncMode says how a sync reads Drive.
type SyncMode int

// Sync modes.
const (
	// SyncAuto reads changes when the library has a changes token, all else.
	SyncAuto SyncMode = iota
	// SyncFull reads the whole tree.
	SyncFull
)

// SyncRequest asks for a sync of one library.
type SyncRequest struct {
	// Library is the ID of the library to sync.
	Library string
	Mode    SyncMode
	// FullReason says why a full sync (Mode SyncFull) was asked: FullAsked
	// (the default) or FullScheduled. A sync that must read the whole
	// library for a reason of its own (FullFirst, FullNoToken...) says that
	// one instead.
	FullReason FullReason
	// Fence is the fence of the lease the sync runs under: every write of
	// the sync is made with it. The zero Fence writes without a lease.
	Fence Fence
}

// Progress reports how far a sync has come.
type Progress struct {
	Library string
	// Phase is "listing", "changes", "permissions", "writing" or "done".
	Phase string
	// Done and Total count folders (changes while reading changes): those
	// listed, whose permissions are read, written. Total is 0 while unknown.
	Done  int
	Total int
}

// ProgressFunc receives progress reports; it must not block for long.
type ProgressFunc func(Progress)

// SyncResult tells what a sync of a library did.
type SyncResult struct {
	Library string
	Full    bool
	// FullReason says why a full sync read the whole library ("" for an
	// incremental one).
	FullReason FullReason
	// Folders and Permissions are the library's, after the sync.
	Folders     int
	Permissions int
	// Drift is what a full sync found different from the index.
	Drift Drift
	// Ranges is the number of createdTime ranges a full sync listed side
	// by side (1: the library as one listing), the one a fallback listed
	// included.
	Ranges int
	// ListingFallback says why a full sync's createdTime ranges gave way
	// to one sequential listing of the library ("" if they did not): a
	// server that does not honour a query's createdTime bounds.
	ListingFallback string
	// Changes is the number of changes an incremental sync read, Applied
	// the number of folders it wrote or removed.
	Changes, Applied int
	// Inherited is the number of folders an incremental sync wrote,
	// although Drive sent no change for them, because their parent's list
	// changed (they are in Applied too).
	Inherited int
	// Reread is the number of folders an incremental sync read from Drive
	// although Drive sent no change for them: because Drive's answers do
	// not tell how their lists follow their parent's (see
	// InheritPermissions), or, for a My Drive library's root, because a
	// folder outside the library changed (it may be an ancestor).
	Reread int
	// Calls is the number of Drive requests sent, retries included.
	Calls    int64
	Duration time.Duration
}

// FullReason says why a sync read the whole library rather than the
// changes since the last one.
type FullReason string

// Why a sync is a full one.
const (
	// FullFirst: the library was never synced.
	FullFirst FullReason = "first sync"
	// FullAsked: a full sync was asked (foldermirror sync --full, the
	// admin listener's sync?full=true).
	FullAsked FullReason = "asked"
	// FullScheduled: the full schedule (schedule.full) ran it.
	FullScheduled FullReason = "scheduled"
	// FullTokenRefused: Drive no longer accepts the saved changes token.
	FullTokenRefused FullReason = "Drive refused the saved changes token"
	// FullNoToken: the index holds no changes token for the library.
	FullNoToken FullReason = "no changes token saved"
)

// DirectoryResult tells what a directory sync read.
type DirectoryResult struct {
	Domain string
	Users  int
	Groups int
	// UnreadableGroups are the groups nested in the domain's that its admin
	// may not read (another organisation's, or gone): they contribute no
	// members.
	UnreadableGroups []string
	Calls            int64
	Duration         time.Duration
}
