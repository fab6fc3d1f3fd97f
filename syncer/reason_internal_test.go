package syncer

import (
	"testing"

	fm "github.com/foldermirror/foldermirror"
)

// A sync is full, and says why, by what was asked and the library's state
// in the index, never by the index's data.
func TestFullReason(t *testing.T) {
	synced := &fm.LibraryState{StartPageToken: "42"}
	for _, tt := range []struct {
		name string
		req  fm.SyncRequest
		prev *fm.LibraryState
		want fm.FullReason
	}{
		{"never synced", fm.SyncRequest{Mode: fm.SyncAuto}, nil, fm.FullFirst},
		{"never synced, full asked", fm.SyncRequest{Mode: fm.SyncFull}, nil, fm.FullFirst},
		{"never synced, on the full schedule", fm.SyncRequest{Mode: fm.SyncFull, FullReason: fm.FullScheduled}, nil, fm.FullFirst},
		{"synced", fm.SyncRequest{Mode: fm.SyncAuto}, synced, ""},
		{"synced, full asked", fm.SyncRequest{Mode: fm.SyncFull}, synced, fm.FullAsked},
		{"synced, on the full schedule", fm.SyncRequest{Mode: fm.SyncFull, FullReason: fm.FullScheduled}, synced, fm.FullScheduled},
		{"synced, an incremental run whatever its reason", fm.SyncRequest{Mode: fm.SyncAuto, FullReason: fm.FullScheduled}, synced, ""},
		{"no token saved", fm.SyncRequest{Mode: fm.SyncAuto}, &fm.LibraryState{}, fm.FullNoToken},
	} {
		if got := fullReason(tt.req, tt.prev); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
