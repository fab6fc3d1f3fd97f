package syncer_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/syncer"
)

// The log of a failed sync says what is still served: the last good tree
// of a library synced before, nothing of one never synced.
func TestFailureLogSaysWhatIsServed(t *testing.T) {
	fake := startFake(t)
	root := fake.CreateFolder(storage, "", "Root")
	fake.CreateFolder(storage, root, "child")
	e := newEnv(t, fake, "id: never, rootFolderId: missing-folder", "id: synced, rootFolderId: "+root)
	var log fmtest.LogBuffer
	e.logger = slog.New(slog.NewTextHandler(&log, nil))
	e.restartSyncer()
	sc := newScheduler(t, e)
	run := func(name string) string {
		t.Helper()
		events := make(chan syncer.Event, 100)
		if _, err := sc.Follow(context.Background(), name, syncer.Full, events); err != nil {
			t.Fatal(err)
		}
		drain(events)
		return log.Take()
	}

	tests := []struct {
		name, library, says, never string
		before                     func()
	}{
		{"never synced", "never", "the library was never synced", "last good data", nil},
		{"synced before", "synced", "the last good data is still served", "never synced", func() {
			run("synced") // a good sync first
			fake.Delete(root)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.before != nil {
				tt.before()
			}
			said := run(tt.library)
			if !strings.Contains(said, "level=ERROR") || !strings.Contains(said, tt.says) || strings.Contains(said, tt.never) {
				t.Errorf("the log said %q; want an error saying %q, not %q", said, tt.says, tt.never)
			}
		})
	}
}
