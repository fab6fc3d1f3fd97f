package syncer_test

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/foldermirror/foldermirror/internal/fmtest"
)

// changePagesLeft is what the syncer logs (at debug) when it leaves pages
// of changes to the client library's decoding.
const changePagesLeft = "pages of changes left to the client library's decoding"

// Incremental syncs read the pages of changes themselves, and a page they
// leave to the client library (here, each has a key in another case, which
// encoding/json matches to its field) gives the same index.
func TestChangePagesReadBySyncer(t *testing.T) {
	m := newMutator(t, 17)
	libs := m.libraries()
	debugEnv := func(proxy http.Handler) (*env, *fmtest.LogBuffer) {
		e := newEnv(t, m.fake, libs...)
		var logs fmtest.LogBuffer
		e.logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		e.restartSyncer()
		if proxy != nil {
			e.throughProxy(proxy)
		}
		return e, &logs
	}
	want, wantLogs := debugEnv(nil)
	got, gotLogs := debugEnv(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/drive/v3/changes") {
			m.fake.ServeHTTP(w, r)
			return
		}
		serveRewritten(m.fake, w, r, `"fileId":`, `"FileID":`)
	}))
	for _, e := range []*env{want, got} {
		e.sync("mydrive")
	}
	for range 40 {
		m.mutate()
	}
	for _, e := range []*env{want, got} {
		if res := e.incremental("mydrive"); res.Changes == 0 {
			t.Fatal("no change to read")
		}
	}
	compareIndexes(t, "pages of changes left to the client library", got, want, "mydrive")
	if strings.Contains(wantLogs.String(), changePagesLeft) {
		t.Errorf("googlefake's pages of changes were left to the client library:\n%s", wantLogs.String())
	}
	if !strings.Contains(gotLogs.String(), changePagesLeft) {
		t.Errorf("no page of changes was left to the client library; the logs:\n%s", gotLogs.String())
	}
}
