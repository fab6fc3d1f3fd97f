package foldermirror

import (
	"context"
	"errors"
)

// Index is an open index, whichever backend keeps it: a bbolt file that one
// process holds alone, or a PostgreSQL database that replicas share. It is
// what the API reads and the syncer writes, the directory the API looks
// callers up in, the sync leases (Leases), and what the daemon needs to
// bring the index up and keep it so. Package index opens one from
// index.url. It is safe for concurrent use.
//
// An index is opened, then reached (Connect, or ConnectRetrying): until
// then its reads fail with EUNAVAILABLE and Info says it is not Ready. An
// index with nothing to reach (a file) is reached at once. While a process
// serves a shared index, Watch follows what the other processes commit.
// Close ends it all.
type Index interface {
	IndexReader
	IndexWriter
	DirectoryStore
	PushChannels
	// Folder returns one folder of a library; ENOTFOUND if none such.
	Folder(ctx context.Context, libraryID, folderID string) (*Folder, error)
	// Permissions returns a folder's permissions in Drive's order.
	Permissions(ctx context.Context, libraryID, folderID string) ([]Permission, error)
	// Info says where the index is and how it fares: Ready once it was
	// reached, Problem while it cannot be read or written, the leases held.
	Info(ctx context.Context) IndexInfo
	// Leases returns the index's sync leases: held in a shared index, so
	// that its processes take turns; always free, and fencing nothing, in
	// an index one process holds alone.
	Leases() Leases
	// Connect reaches the index once: it checks, creates or migrates what
	// the index keeps, and reads it. An index with nothing to reach
	// returns nil at once. A database foldermirror must not use fails it,
	// for good, wrapping ErrIndexRefused.
	Connect(ctx context.Context) error
	// ConnectRetrying reaches the index, trying again with backoff after
	// the failures it logs, until it is reached or ctx ends (then it
	// returns the last failure). A refused index (ErrIndexRefused) fails it
	// at once.
	ConnectRetrying(ctx context.Context) error
	// Watch reads what the other processes sharing the index commit until
	// ctx ends, or until the index is refused (a newer foldermirror migrated
	// it: Info says so). Call it once the index is reached. An index no
	// other process shares returns at once.
	Watch(ctx context.Context)
	// Close closes the index, waiting for the transactions under way.
	Close() error
}

// ErrIndexRefused marks an index foldermirror must not use: a database of
// another service, or one whose schema a newer foldermirror wrote.
var ErrIndexRefused = errors.New("not a database foldermirror may use")
