package foldermirror

import (
	"context"
	"time"
)

// PushLease names the lease under which one process keeps the service's push channels
// (library IDs, which name theirs, cannot contain ':').
const PushLease = "push:channels"

// PushChannel is a Drive push channel (changes.watch, type web_hook) the service keeps for a change feed.
type PushChannel struct {
	ID          string    // the channel's ID, X-Goog-Channel-ID of its notifications
	TokenSHA256 [32]byte  // SHA-256 of its secret token (X-Goog-Channel-Token); the token itself is never stored
	Feed        string    // the change feed: "user:EMAIL" (a storage account's) or "drive:DRIVEID"
	ResourceID  string    // Drive's resourceId of the watched resource, for channels.stop
	Expiration  time.Time // when Drive stops sending on it
}

// PushChannels keeps the service's push channels; replicas sharing an index share them.
type PushChannels interface {
	// Channels returns every stored channel, in no set order.
	Channels(ctx context.Context) ([]PushChannel, error)
	// PutChannel stores ch, replacing the channel of its ID, under fence (PushLease's, or the zero Fence).
	PutChannel(ctx context.Context, ch PushChannel, fence Fence) error
	// DeleteChannel removes the channel of that ID, if any, under fence.
	DeleteChannel(ctx context.Context, id string, fence Fence) error
}
