package googlefake

import (
	"context"
	"io"
	"math"
	"net/http"
	"strconv"
	"time"
)

const (
	// webhookTimeout bounds each post of a notification.
	webhookTimeout = 5 * time.Second
	// webhookRetries is how many times a post answered 500, 502, 503 or
	// 504 is tried again, after webhookBackoff, then twice that, ...
	webhookRetries = 2
	webhookBackoff = 20 * time.Millisecond
	// pushUserAgent is the User-Agent of Google's notification posts.
	pushUserAgent = "APIs-Google; (+https://developers.google.com/webmasters/APIs-Google.html)"
)

// kindOnly is the file selection a channel looks at changes with: enough
// to tell whether changes.list would report one, no more.
var kindOnly = mask{"kind": nil}

// deliver is a channel's one delivery goroutine: it posts the sync message,
// then a change message whenever changes reach the channel's feed, until
// the channel expires, is stopped, or the fake closes.
func (s *Server) deliver(ch *channel) {
	defer s.push.wg.Done()
	defer s.settle(ch, math.MaxInt64)
	defer s.endChannel(ch)
	expiry := time.NewTimer(time.Until(ch.expiration))
	defer expiry.Stop()
	number := int64(1)
	s.notify(ch, "sync", number)
	s.settle(ch, ch.start)
	for {
		select {
		case <-ch.ctx.Done():
			return
		case <-expiry.C:
			return
		case <-ch.kick:
		}
		sleep(ch.ctx, time.Duration(s.push.delay.Load()))
		select {
		case <-ch.kick: // what it announces is looked at now
		default:
		}
		if ch.ctx.Err() != nil || !time.Now().Before(ch.expiration) {
			return
		}
		upTo, changed := s.changed(ch)
		if changed {
			number++
			s.notify(ch, "change", number)
		}
		s.settle(ch, upTo)
	}
}

// endChannel removes an ending channel from the live ones.
func (s *Server) endChannel(ch *channel) {
	ch.cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.push.live[ch.id] == ch {
		delete(s.push.live, ch.id)
	}
}

// settle records that the channel has looked at the log up to position and
// delivered what it found.
func (s *Server) settle(ch *channel, position int64) {
	s.push.flushMu.Lock()
	defer s.push.flushMu.Unlock()
	ch.settled = max(ch.settled, position)
	s.push.settled.Broadcast()
}

// changed reports whether changes.list, from where the channel last looked
// up to the end of the log, would report anything to the channel's user
// with the watch's parameters, and returns the end of the log, where the
// channel looks from next time.
func (s *Server) changed(ch *channel) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	from := ch.cursor
	ch.cursor = s.log.next
	if !ch.inDrive {
		return ch.cursor, false
	}
	s.arena.reset()
	req := &changesRequest{v: s.viewer(ch.user), from: from, scope: ch.scope,
		includeRemoved: ch.includeRemoved, fileMask: kindOnly}
	for i := range s.log.feed(req.scope, from) {
		if !s.log.laterInScope(i, req.scope) && s.change(req, &s.log.entries[i]) != nil {
			return ch.cursor, true
		}
	}
	return ch.cursor, false
}

// notify posts one message to the channel's address, trying again after a
// 500, 502, 503 or 504 as Drive does, and counts the outcome. A message cut
// short by the channel's end counts as nothing.
func (s *Server) notify(ch *channel, state string, number int64) {
	if s.push.drop.Load() {
		ch.dropped.Add(1)
		return
	}
	for attempt := 0; ; attempt++ {
		code, err := s.post(ch, state, number)
		switch {
		case err == nil && delivered(code):
			ch.delivered.Add(1)
			return
		case ch.ctx.Err() != nil:
			return
		case err != nil || attempt == webhookRetries || !retried(code):
			ch.failed.Add(1)
			return
		}
		sleep(ch.ctx, webhookBackoff<<attempt)
	}
}

// post sends one message, with Drive's headers and an empty body, and
// returns the status code of the answer.
func (s *Server) post(ch *channel, state string, number int64) (int, error) {
	ctx, cancel := context.WithTimeout(ch.ctx, webhookTimeout)
	defer cancel()
	// Posting to the address the watch gave is the point (gosec's SSRF).
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ch.address, http.NoBody) //nolint:gosec // as Drive does
	if err != nil {
		return 0, err
	}
	// Google's spelling of the names (http.Header.Set would write
	// X-Goog-Channel-Id; names are case-insensitive all the same).
	h := req.Header
	h["X-Goog-Channel-ID"] = []string{ch.id}
	if ch.token != "" {
		h["X-Goog-Channel-Token"] = []string{ch.token}
	}
	h["X-Goog-Channel-Expiration"] = []string{ch.expiration.UTC().Format(http.TimeFormat)}
	h["X-Goog-Resource-ID"] = []string{ch.resourceID}
	h["X-Goog-Resource-URI"] = []string{ch.resourceURI}
	h["X-Goog-Resource-State"] = []string{state}
	h["X-Goog-Message-Number"] = []string{strconv.FormatInt(number, 10)}
	h.Set("User-Agent", pushUserAgent)
	resp, err := s.push.client.Load().Do(req) //nolint:gosec // the watch's address, as above
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxChannelBody))
	return resp.StatusCode, nil
}

// delivered reports whether Drive takes an answer's code for success.
func delivered(code int) bool {
	switch code {
	case http.StatusOK, http.StatusCreated, http.StatusAccepted, http.StatusNoContent, http.StatusProcessing:
		return true
	}
	return false
}

// retried reports whether Drive posts again after an answer's code.
func retried(code int) bool {
	switch code {
	case http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}
