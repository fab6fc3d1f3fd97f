package syncer_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/foldermirror/foldermirror/internal/fmtest"
)

// pagesLeft is what the syncer logs (at debug) when drivelist leaves pages
// of a listing to the client library's decoding.
const pagesLeft = "pages left to the client library's decoding"

// Full syncs read Drive's pages with drivelist, and a page it leaves to
// the client library (here, every other page has a key in another case,
// which encoding/json matches to its field) gives the same index.
func TestPagesDecodedByDrivelist(t *testing.T) {
	folders := scaledRanges(t, 1000, 100, 200)
	m := newMutator(t, 11)
	for range folders {
		m.create()
	}
	for range folders / 2 {
		m.mutate()
	}
	libs := m.libraries()
	debugLogs := func(e *env) *fmtest.LogBuffer {
		var logs fmtest.LogBuffer
		e.logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		e.restartSyncer()
		return &logs
	}
	want := newEnv(t, m.fake, libs...)
	wantLogs := debugLogs(want)
	for _, lib := range []string{"mydrive", "shared"} {
		want.sync(lib)
	}
	if strings.Contains(wantLogs.String(), pagesLeft) {
		t.Errorf("drivelist left googlefake's pages to the client library:\n%s", wantLogs.String())
	}

	got := newEnv(t, m.fake, libs...)
	gotLogs := debugLogs(got)
	var pages atomic.Int64
	got.throughProxy(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isFilesList(r) || pages.Add(1)%2 == 0 {
			m.fake.ServeHTTP(w, r)
			return
		}
		serveRewritten(m.fake, w, r, `"name":`, `"Name":`)
	}))
	for _, lib := range []string{"mydrive", "shared"} {
		got.sync(lib)
		compareIndexes(t, "pages left to the client library", got, want, lib)
	}
	if !strings.Contains(gotLogs.String(), pagesLeft) {
		t.Errorf("no page was left to the client library; the logs:\n%s", gotLogs.String())
	}
}

// serveRewritten answers r as fake does, but with from replaced by to in
// the body.
func serveRewritten(fake http.Handler, w http.ResponseWriter, r *http.Request, from, to string) {
	rec := httptest.NewRecorder()
	fake.ServeHTTP(rec, r)
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	w.Write(bytes.ReplaceAll(rec.Body.Bytes(), []byte(from), []byte(to))) //nolint:errcheck // the client sees a short body
}
