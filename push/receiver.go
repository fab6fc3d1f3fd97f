package push

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"

	fm "github.com/foldermirror/foldermirror"
)

// The headers of Drive's notifications.
const (
	headerChannelID = "X-Goog-Channel-ID"
	headerToken     = "X-Goog-Channel-Token" //nolint:gosec // a header's name, not a credential
	headerState     = "X-Goog-Resource-State"
)

// ServeHTTP receives a notification of Drive: 200 for one of a stored,
// unexpired channel with the channel's token, and then, unless its
// X-Goog-Resource-State is "sync" (a channel's first message), the feed's
// libraries are synced. Anything else is refused (see the package's
// documentation) and starts nothing.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		s.refuse(w, http.StatusMethodNotAllowed, resultMethod, "", "")
		return
	}
	id, token, state := r.Header.Get(headerChannelID), r.Header.Get(headerToken), r.Header.Get(headerState)
	if id == "" || token == "" || state == "" {
		s.refuse(w, http.StatusBadRequest, resultMalformed, "", "")
		return
	}
	ch, ok, err := s.lookup(r.Context(), id)
	switch {
	case err != nil:
		w.Header().Set("Retry-After", "1")
		s.refuse(w, http.StatusServiceUnavailable, resultUnconfirmed, "", logged(id))
		return
	case !ok:
		s.refuse(w, http.StatusNotFound, resultUnknown, "", logged(id))
		return
	}
	sum := sha256.Sum256([]byte(token))
	if subtle.ConstantTimeCompare(sum[:], ch.TokenSHA256[:]) != 1 {
		s.refuse(w, http.StatusForbidden, resultBadToken, ch.Feed, ch.ID)
		return
	}
	if !s.opts.Now().Before(ch.Expiration) {
		s.refuse(w, http.StatusNotFound, resultExpired, ch.Feed, ch.ID)
		return
	}
	result := resultChange
	if state == "sync" {
		result = resultSync
	}
	f := s.accept(ch.Feed, result)
	s.opts.Logger.Debug("push notification accepted", "feed", ch.Feed, "channel", ch.ID, "result", result)
	if result == resultChange && f != nil {
		s.notify(f)
	}
	w.WriteHeader(http.StatusOK)
}

// accept counts an accepted notification of the feed keyed key, and
// returns the feed as the library set has it now (nil for a feed no longer
// in it).
func (s *Service) accept(key, result string) *Feed {
	s.opts.Metrics.notifications.WithLabelValues(result).Inc()
	f := s.feeds.Load().byKey[key]
	if f == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.statsOf(key)
	st.accepted++
	st.last = s.opts.Now()
	return f
}

// notify starts what a change of feed f starts: a sync of each of its
// libraries, and, for a storage account's log whose drives are discovered,
// a look at the log for drive changes.
func (s *Service) notify(f *Feed) {
	for _, lib := range f.Libraries {
		s.opts.Notifier.Notify(lib)
	}
	if f.Discovery && s.opts.Discovery != nil {
		s.opts.Discovery.Notify(f.User)
	}
}

// refuse answers a request that starts nothing, counting it, for the feed
// keyed key if the set has it. channel is the channel ID to log, if any.
func (s *Service) refuse(w http.ResponseWriter, code int, result, key, channel string) {
	s.opts.Metrics.notifications.WithLabelValues(result).Inc()
	if key != "" && s.feeds.Load().byKey[key] != nil {
		s.mu.Lock()
		s.statsOf(key).refused++
		s.mu.Unlock()
	}
	s.opts.Logger.Debug("push notification refused", "result", result, "channel", channel)
	http.Error(w, http.StatusText(code), code)
}

// statsOf returns the counts of the feed keyed key, made if it has none
// yet. Call it with s.mu held.
func (s *Service) statsOf(key string) *feedStats {
	st := s.stats[key]
	if st == nil {
		st = &feedStats{}
		s.stats[key] = st
	}
	return st
}

// lookup returns the stored channel of that ID: from the cache, else, for
// an ID of the keeper's form, from a re-read of the store (lookupStored),
// which may not tell in time (an error). An ID of another form is unknown
// at once.
func (s *Service) lookup(ctx context.Context, id string) (fm.PushChannel, bool, error) {
	s.mu.Lock()
	ch, ok := s.cache.byID[id]
	s.mu.Unlock()
	if ok || !ourID(id) {
		return ch, ok, nil
	}
	return s.lookupStored(ctx, id)
}

// ourID tells whether id has the form of the IDs the keeper gives its
// channels: 32 lower-case hexadecimal digits. No other is looked up.
func ourID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for _, c := range []byte(id) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// logged returns a channel ID fit for the log: one of our form, else "".
func logged(id string) string {
	if ourID(id) {
		return id
	}
	return ""
}
