// Package push keeps Drive push notification channels (changes.watch, a
// channel of type web_hook) on the service's change feeds, and receives
// their notifications, so that a change made in Drive is synced within
// seconds rather than at the next scheduled incremental sync (DESIGN §9).
//
// A Service is both sides. Run keeps the channels: under fm.PushLease, so
// that the processes sharing an index keep one set, it registers one
// channel per feed (Feeds), renews each before it expires, and stops and
// deletes those no longer needed. ServeHTTP is the receiver, served on
// Path: it answers Drive's notifications and has the feed's libraries
// synced (Notifier). Every process receives, whichever keeps.
//
// Choices the design left open:
//
//   - A channel is stored before changes.watch is called, without Drive's
//     resourceId, and stored again with it once Drive answers: Drive posts a
//     channel's sync message as soon as it registers it, maybe before its
//     answer arrives, and that message must find the channel. A watch that
//     fails deletes the channel again (a pass of the keeper deletes what a
//     crash left).
//   - A process that takes the lease first registers a new channel for
//     every feed, then retires the channels it found: it cannot tell which
//     push.address they were registered with.
//   - A channel is renewed (a successor registered, then the channel
//     stopped and deleted) a margin before it expires: a tenth of
//     push.channelTtl, at most an hour, at least 2 s. Renewals are timed,
//     and the keeper also looks at each Retry, which the scheduler calls at
//     each incremental tick.
//   - Stopping a live channel drops the message it may still owe for the
//     changes made just before (Drive batches notifications), which its
//     successor, registered after them, does not tell of: so the keeper
//     has the feed's libraries synced once whenever it stops a live channel
//     of a configured feed (a renewal, or the channels of a former holder
//     of the lease retired).
//   - A watch that fails (Drive refuses it, or the index cannot store the
//     channel) leaves the feed polling with the reason in Status; the feed's
//     watch is tried again at the next Retry, never sooner. A channel whose
//     renewal failed is kept until it expires.
//   - The receiver answers 200 to a notification of a stored, unexpired
//     channel whose token's SHA-256 is the stored one, 400 when
//     X-Goog-Channel-ID, X-Goog-Channel-Token or X-Goog-Resource-State is
//     missing, 404 for a channel it does not know or one expired, 403 for a
//     wrong token, 405 for any method but POST. It never reads the body,
//     and logs no header value but a channel ID of its own format.
//   - A channel ID of the keeper's form that the cache does not know (a
//     channel another process stored since the cache was read, or a
//     forged one) waits, 1.5 s at most, for the first re-read of the store
//     that begins after it arrived: its channel, if stored, is then found
//     (Drive does not retry a 4xx: a live channel answered 404 would lose
//     its notification). One goroutine re-reads, once per 500 ms at most,
//     under no request's context, each re-read bounded by 5 s, and one
//     re-read answers every notification waiting. A notification it does
//     not answer in time (or the store failed, or 256 already wait) is
//     answered 503 with Retry-After: Drive tries again later, and the
//     forged ID has started nothing.
package push

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/prometheus/client_golang/prometheus"
)

// The bounds of push.channelTtl.
const (
	minChannelTTL = 10 * time.Second
	maxChannelTTL = 168 * time.Hour
)

// Notifier is told which libraries Drive says changed: it has them synced
// (*schedule.Scheduler). Notify must not block.
type Notifier interface {
	// Notify asks for an incremental sync of a library.
	Notify(libraryID string)
}

// Options say what a Service watches, where Drive posts, and with what.
type Options struct {
	// Address is the URL Drive posts notifications to (push.address):
	// http:// or https://.
	Address string
	// ChannelTTL is the lifetime asked for each channel
	// (push.channelTtl), 10 s to 168 h.
	ChannelTTL time.Duration
	// Feeds are the feeds to watch (Feeds of the libraries).
	Feeds []Feed
	// Watcher registers and stops channels (a DriveWatcher).
	Watcher Watcher
	// Channels stores the channels, shared by the processes of an index;
	// Leases gives fm.PushLease, under which one of them keeps them.
	Channels fm.PushChannels
	Leases   fm.Leases
	// Notifier has the libraries of a feed Drive notifies synced.
	Notifier Notifier
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Metrics defaults to unregistered ones.
	Metrics *Metrics
	// Now tells the time channels expire by; time.Now by default.
	Now func() time.Time
}

// Service keeps the push channels of the feeds (Run) and receives their
// notifications (ServeHTTP). It is safe for concurrent use.
type Service struct {
	opts   Options
	path   string
	margin time.Duration
	feeds  []Feed           // sorted by Key
	byKey  map[string]*Feed // feeds by Key

	// wake asks the keeper to look now (Retry); steps, a test's, asks it
	// to, and closes the channel sent once it has.
	wake  chan struct{}
	steps chan chan struct{}
	retry atomic.Bool // Retry was called since the keeper last looked

	// rereads are the receiver's re-reads of the store.
	rereads rereads

	mu sync.Mutex
	// cache is the store as last read, with this process's writes since.
	// gen counts the writes and installs of cache: a read installs what it
	// read only if none happened while it read.
	cache map[string]fm.PushChannel
	gen   uint64
	stats map[string]*feedStats
	// failures says, by feed, why the keeper could not register its
	// channel last time it tried; note why this process does not keep the
	// channels, while it does not.
	failures map[string]string
	note     string
}

// feedStats count what the receiver made of a feed's notifications.
type feedStats struct {
	accepted, refused int64
	last              time.Time
}

// FeedStatus is what a Service knows of a feed, for the admin listener's
// /status.
type FeedStatus struct {
	// Feed is the feed's Key; Libraries the IDs of its libraries.
	Feed      string   `json:"feed"`
	Libraries []string `json:"libraries"`
	// Channel is the ID of the stored channel that covers the feed, the
	// one that expires last; Expiration when it does.
	Channel    string    `json:"channel,omitempty"`
	Expiration time.Time `json:"expiration,omitzero"`
	// LastNotification is when this process last accepted a notification
	// of the feed; Accepted and Refused count this process's answers to
	// its notifications (those of an unknown channel count for no feed).
	LastNotification time.Time `json:"lastNotification,omitzero"`
	Accepted         int64     `json:"accepted"`
	Refused          int64     `json:"refused"`
	// Polling: no unexpired channel covers the feed; the schedule alone
	// syncs it. Reason says why, or why the last watch failed.
	Polling bool   `json:"polling"`
	Reason  string `json:"reason,omitempty"`
}

// New returns a Service that watches opts.Feeds, posting to opts.Address.
func New(opts Options) (*Service, error) {
	u, err := url.Parse(opts.Address)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return nil, fm.Errorf(fm.EINVALID, "push.address %q is not an http:// or https:// URL", opts.Address)
	case opts.ChannelTTL < minChannelTTL || opts.ChannelTTL > maxChannelTTL:
		return nil, fm.Errorf(fm.EINVALID, "push.channelTtl %s is not within %s and %s", opts.ChannelTTL, minChannelTTL, maxChannelTTL)
	case opts.Watcher == nil || opts.Channels == nil || opts.Leases == nil || opts.Notifier == nil:
		return nil, errors.New("push: Watcher, Channels, Leases and Notifier are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(prometheus.NewRegistry())
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Service{
		opts: opts, path: cmp.Or(u.Path, "/"), margin: renewalMargin(opts.ChannelTTL),
		feeds: slices.SortedFunc(slices.Values(opts.Feeds), func(a, b Feed) int { return cmp.Compare(a.Key, b.Key) }),
		byKey: map[string]*Feed{}, wake: make(chan struct{}, 1), steps: make(chan chan struct{}, 1),
		rereads: rereads{every: rereadEvery, timeout: rereadTimeout, wait: unknownWait, limit: maxWaiting},
		cache:   map[string]fm.PushChannel{}, stats: map[string]*feedStats{},
		failures: map[string]string{},
	}
	for i := range s.feeds {
		f := &s.feeds[i]
		if s.byKey[f.Key] != nil {
			return nil, fmt.Errorf("push: feed %s given twice", f.Key)
		}
		s.byKey[f.Key], s.stats[f.Key] = f, &feedStats{}
	}
	return s, nil
}

// renewalMargin is how long before a channel expires its successor is
// registered: a tenth of the channels' lifetime, at most an hour, at least
// 2 s.
func renewalMargin(ttl time.Duration) time.Duration {
	return max(min(ttl/10, time.Hour), 2*time.Second)
}

// Path is push.address's path, on which the API listener routes POST to
// the Service.
func (s *Service) Path() string { return s.path }

// Retry has the keeper try the watches that failed again, now.
func (s *Service) Retry() {
	s.retry.Store(true)
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Status says, feed by feed in the order of their keys, what covers it and
// what its notifications were.
func (s *Service) Status() []FeedStatus {
	now := s.opts.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]FeedStatus, 0, len(s.feeds))
	for _, f := range s.feeds {
		st := FeedStatus{Feed: f.Key, Libraries: slices.Clone(f.Libraries)}
		if ch, ok := latest(s.cache, f.Key, now); ok {
			st.Channel, st.Expiration = ch.ID, ch.Expiration
		}
		stats := s.stats[f.Key]
		st.LastNotification, st.Accepted, st.Refused = stats.last, stats.accepted, stats.refused
		st.Polling = st.Channel == ""
		st.Reason = s.failures[f.Key]
		if st.Reason == "" && st.Polling {
			st.Reason = cmp.Or(s.note, "no channel registered yet")
		}
		out = append(out, st)
	}
	return out
}

// latest returns the unexpired channel of the feed keyed key that expires
// last, among those Drive registered (the one stored before its watch has
// no resourceId yet).
func latest(chans map[string]fm.PushChannel, key string, now time.Time) (fm.PushChannel, bool) {
	var best fm.PushChannel
	found := false
	for _, ch := range chans {
		if ch.Feed == key && ch.ResourceID != "" && now.Before(ch.Expiration) &&
			(!found || ch.Expiration.After(best.Expiration) || ch.Expiration.Equal(best.Expiration) && ch.ID > best.ID) {
			best, found = ch, true
		}
	}
	return best, found
}
