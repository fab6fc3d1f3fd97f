package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/schedule"
)

// sync starts a resync, or joins the one running, and streams its events
// as JSON lines until it ends: POST /sync?library=ID (default: every
// directory and library) &mode=full|incremental (default incremental, which
// reads everything when a library has no changes token).
func (s *Server) sync(w http.ResponseWriter, r *http.Request) {
	mode := fm.SyncAuto
	switch r.URL.Query().Get("mode") {
	case "", modeIncremental:
	case modeFull:
		mode = fm.SyncFull
	default:
		writeError(w, http.StatusBadRequest, "mode must be full or incremental")
		return
	}
	names := s.scheduler.Jobs(r.URL.Query().Get("library"))
	if names == nil {
		writeError(w, http.StatusNotFound, "no library "+r.URL.Query().Get("library"))
		return
	}
	// Once the handler returns (the client left, or a later job could not
	// be followed), ctx ends: the followers stop forwarding, and the
	// scheduler stops waiting for them; the syncs go on.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	events := make(chan schedule.Event, 64)
	var streams sync.WaitGroup
	for _, name := range names {
		ch := make(chan schedule.Event, 64)
		if _, err := s.scheduler.Follow(ctx, name, mode, ch); err != nil {
			writeError(w, http.StatusServiceUnavailable, err.Error())
			return
		}
		streams.Add(1)
		go func() {
			defer streams.Done()
			for ev := range ch {
				select {
				case events <- ev:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() { streams.Wait(); close(events) }()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	rc := http.NewResponseController(w)
	for ev := range events {
		if enc.Encode(ev) != nil || rc.Flush() != nil {
			return
		}
	}
}
