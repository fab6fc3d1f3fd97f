package syncer_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/foldermirror/foldermirror/syncer"
)

// lockedBuffer is a bytes.Buffer safe for a logger's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// take returns what was written since the last take.
func (b *lockedBuffer) take() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	b.buf.Reset()
	return s
}

// The log of a failed sync says what is still served: the last good tree
// of a library synced before, nothing of one never synced.
func TestFailureLogSaysWhatIsServed(t *testing.T) {
	fake := startFake(t)
	root := fake.CreateFolder(storage, "", "Root")
	fake.CreateFolder(storage, root, "child")
	e := newEnv(t, fake, "id: never, rootFolderId: missing-folder", "id: synced, rootFolderId: "+root)
	var log lockedBuffer
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
		return log.take()
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
