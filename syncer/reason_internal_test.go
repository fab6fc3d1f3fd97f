package syncer

import (
	"context"
	"testing"

	fm "github.com/foldermirror/foldermirror"
)

// A sync is full, and says why, by what was asked and the library's state
// in the index, never by the index's data.
func TestFullReason(t *testing.T) {
	synced := &fm.LibraryState{StartPageToken: "42"}
	scheduled := withScheduledFull(context.Background())
	for _, tt := range []struct {
		name string
		ctx  context.Context
		mode Mode
		prev *fm.LibraryState
		want FullReason
	}{
		{"never synced", context.Background(), Auto, nil, FullFirst},
		{"never synced, full asked", context.Background(), Full, nil, FullFirst},
		{"never synced, on the full schedule", scheduled, Full, nil, FullFirst},
		{"synced", context.Background(), Auto, synced, ""},
		{"synced, full asked", context.Background(), Full, synced, FullAsked},
		{"synced, on the full schedule", scheduled, Full, synced, FullScheduled},
		{"synced, an incremental run whatever its context", scheduled, Auto, synced, ""},
		{"no token saved", context.Background(), Auto, &fm.LibraryState{}, FullNoToken},
	} {
		if got := fullReason(tt.ctx, tt.mode, tt.prev); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
