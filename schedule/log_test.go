package schedule_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/schedule"
)

// The log of a failed sync says what is still served: the last good tree
// of a library synced before, nothing of one never synced.
func TestFailureLogSaysWhatIsServed(t *testing.T) {
	var log fmtest.LogBuffer
	s := &syncs{sync: func(context.Context, fm.SyncRequest, fm.ProgressFunc) (*fm.SyncResult, error) {
		return nil, errors.New("root folder not found")
	}}
	sc := newScheduler(t, schedule.Options{Syncer: s, Index: index{"synced": true}, Logger: slog.New(slog.NewTextHandler(&log, nil)),
		Plan: schedule.Plan{Libraries: libraries("never", "synced")}})

	tests := []struct {
		name, library, says, never string
	}{
		{"never synced", "never", "the library was never synced", "last good data"},
		{"synced before", "synced", "the last good data is still served", "never synced"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			follow(t, sc, tt.library, fm.SyncFull)
			said := log.Take()
			if !strings.Contains(said, "level=ERROR") || !strings.Contains(said, tt.says) || strings.Contains(said, tt.never) {
				t.Errorf("the log said %q; want an error saying %q, not %q", said, tt.says, tt.never)
			}
		})
	}
}
