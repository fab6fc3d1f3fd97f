package foldermirror

import "context"

// An index across a network pays a round trip for each read. These
// optional interfaces let it read ahead, in one go, what a caller names
// before reading it; they change no answer. An index whose reads cost
// nothing (a memory-mapped file) need not implement them; the syncer uses
// them when the index has them.

// FoldersReader is an index that reads many folders of a library at once.
type FoldersReader interface {
	// Folders returns the folders among ids that the library has, each
	// once, in no set order: IDs of no folder, and of a library never
	// synced, are left out.
	Folders(ctx context.Context, libraryID string, ids []string) ([]Folder, error)
}

// LibraryPrefetcher is a LibraryTx that can read ahead, so that Folder,
// Permissions and Children then answer from memory. What the transaction
// wrote before or writes after is seen as without it.
type LibraryPrefetcher interface {
	// Prefetch reads the folders ids and the children of the folders
	// parents, with their permissions. IDs of no folder are fine: the
	// transaction then knows there is none such.
	Prefetch(ids, parents []string) error
}
