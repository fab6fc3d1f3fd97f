// Package push keeps Drive push notification channels (changes.watch, a
// channel of type web_hook) on the service's change feeds, and receives
// their notifications, so that a change made in Drive is synced within
// seconds rather than at the next scheduled incremental sync (DESIGN §9).
//
// A Service is both sides. Run keeps the channels: under fm.PushLease, so
// that the processes sharing an index keep one set, it registers one
// channel per feed of the library set (Feeds), follows the set as
// libraries are discovered and removed (DESIGN §10), renews each channel
// before it expires, and stops and deletes those no longer needed.
// ServeHTTP is the receiver, served on Path: it answers Drive's
// notifications and has the feed's libraries synced (Notifier). Every
// process receives, whichever keeps.
//
// Choices the design left open:
//
//   - A channel is stored before changes.watch is called, without Drive's
//     resourceId, and stored again with it once Drive answers: Drive posts a
//     channel's sync message as soon as it registers it, maybe before its
//     answer arrives, and that message must find the channel. A watch that
//     fails deletes the channel again (the keeper deletes what a crash
//     left when it takes the lease).
//   - A process that takes the lease first registers a new channel for
//     every feed, then retires the channels it found: it cannot tell which
//     push.address they were registered with. It reads the stored channels
//     then, and from then on works from its cache of them: while it holds
//     the lease, no other process writes them.
//   - The keeper works through a schedule, one entry a feed (when it must
//     next look at it), in one goroutine: no goroutine nor timer a feed.
//     It tends the feeds due a few at a time (tendAtOnce), since each
//     waits on Drive and the index; the feeds removed from the set are
//     never tended beside those of the set.
//     Its calls to Drive (each Watch and each Stop) keep within
//     Options.CallsPerSecond, in bursts of a second's worth at most: the
//     10,000 feeds of a large domain are watched over 10,000 /
//     CallsPerSecond seconds after the lease is taken (polled by the
//     schedule meanwhile, in the order of their keys), never in a burst of
//     thousands of calls. A feed removed from the set goes before every
//     other: its channel is stopped within seconds.
//   - A channel is renewed (a successor registered, then the channel
//     stopped and deleted) from a margin to half a margin before it
//     expires, at a point drawn from its ID, so that the channels
//     registered together are renewed spread over half a margin: the
//     margin is a tenth of push.channelTtl, at most an hour, at least 2 s.
//     Renewals are timed, and the keeper also looks at each Retry, which
//     the scheduler calls at each incremental tick.
//   - Stopping a live channel drops the message it may still owe for the
//     changes made just before (Drive batches notifications), which its
//     successor, registered after them, does not tell of: so the keeper
//     has the feed's libraries synced once whenever it stops a live channel
//     of a feed of the set (a renewal, or the channels of a former holder
//     of the lease retired); a feed removed from the set has nothing synced.
//   - A watch that fails (Drive refuses it, or the index cannot store the
//     channel) leaves the feed polling with the reason in Status; the feed's
//     watch is tried again at the next Retry, never sooner. A channel whose
//     renewal failed is kept until it expires. A channel Drive could not
//     stop stays stored, and is stopped again 30 s later.
//   - Every process follows the library set (each replica's set is kept in
//     step from the index): the receiver has a notification's feed's
//     libraries synced as the set has them now, so that a notification of a
//     feed no longer in it starts nothing. Only the lease holder's keeper
//     acts on a change of the set.
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
	"log/slog"
	"math"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
)

// The bounds of push.channelTtl.
const (
	minChannelTTL = 10 * time.Second
	maxChannelTTL = 168 * time.Hour
)

// DefaultCallsPerSecond is Options.CallsPerSecond when it is not set.
const DefaultCallsPerSecond = 10

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
	// Libraries is the set whose feeds (Feeds) are watched, followed as
	// it changes.
	Libraries *fm.LibrarySet
	// CallsPerSecond bounds the keeper's calls of Watcher (each Watch and
	// each Stop; a DriveWatcher's Watch makes two requests of Drive, its
	// Stop one), in bursts of a second's worth at most;
	// DefaultCallsPerSecond if zero.
	CallsPerSecond float64
	// Watcher registers and stops channels (a DriveWatcher).
	Watcher Watcher
	// Channels stores the channels, shared by the processes of an index;
	// Leases gives fm.PushLease, under which one of them keeps them.
	Channels fm.PushChannels
	Leases   fm.Leases
	// Notifier has the libraries of a feed Drive notifies synced.
	Notifier Notifier
	// DiscoveryAccounts are the storage accounts whose shared drives are
	// discovered: each one's user log is watched, libraries or not, and
	// Discovery told of its notifications (it looks for drive changes).
	DiscoveryAccounts []string
	Discovery         Notifier
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Metrics defaults to unregistered ones.
	Metrics *Metrics
	// Now tells the time channels expire by, and the time of the calls'
	// rate; time.Now by default.
	Now func() time.Time
}

// Service keeps the push channels of the feeds (Run) and receives their
// notifications (ServeHTTP). It is safe for concurrent use.
type Service struct {
	opts   Options
	path   string
	margin time.Duration

	// feeds are the feeds of opts.Libraries as it is now; feedsMu orders
	// their rebuilds, so that the last one stored reads the set last.
	feeds   atomic.Pointer[feedSet]
	feedsMu sync.Mutex
	// calls paces the keeper's calls of the Watcher.
	calls *rate.Limiter

	// wake asks the keeper to look now (Retry); changed tells the keeper
	// that holds the lease that the feeds changed; steps, a test's, asks it
	// to look, and closes the channel sent once it has.
	wake    chan struct{}
	changed chan struct{}
	steps   chan chan struct{}
	retry   atomic.Bool // Retry was called since the keeper last looked

	// rereads are the receiver's re-reads of the store.
	rereads rereads

	mu sync.Mutex
	// cache is the store as last read, with this process's writes since.
	// gen counts the writes and installs of cache: a read installs what it
	// read only if none happened while it read.
	cache channelCache
	gen   uint64
	// stats are, by feed of the set, what the receiver made of its
	// notifications.
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

// FeedCounts count feeds by what covers them.
type FeedCounts struct {
	// Feeds is how many there are: Watched (an unexpired channel covers
	// it) and Polling (none does: the schedule alone syncs it).
	Feeds   int `json:"feeds"`
	Watched int `json:"watched"`
	Polling int `json:"polling"`
	// Failing is how many of them the keeper could not watch last time it
	// tried (some still watched: their renewal failed). Only the process
	// that keeps the channels knows.
	Failing int `json:"failing"`
}

// FeedSummary is what Status says, counted rather than listed: what
// /status shows of thousands of feeds.
type FeedSummary struct {
	FeedCounts
	// Domains are the counts of each domain's feeds, by domain name: a
	// feed counts in the domain of each of its libraries.
	Domains map[string]FeedCounts `json:"domains"`
	// Note says why this process does not keep the channels, if it does
	// not.
	Note string `json:"note,omitempty"`
}

// New returns a Service that watches the feeds of opts.Libraries, posting
// to opts.Address.
func New(opts Options) (*Service, error) {
	u, err := url.Parse(opts.Address)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return nil, fm.Errorf(fm.EINVALID, "push.address %q is not an http:// or https:// URL", opts.Address)
	case opts.ChannelTTL < minChannelTTL || opts.ChannelTTL > maxChannelTTL:
		return nil, fm.Errorf(fm.EINVALID, "push.channelTtl %s is not within %s and %s", opts.ChannelTTL, minChannelTTL, maxChannelTTL)
	case opts.Libraries == nil || opts.Watcher == nil || opts.Channels == nil || opts.Leases == nil || opts.Notifier == nil:
		return nil, errors.New("push: Libraries, Watcher, Channels, Leases and Notifier are required")
	case opts.CallsPerSecond < 0 || math.IsNaN(opts.CallsPerSecond) || math.IsInf(opts.CallsPerSecond, 0):
		return nil, fm.Errorf(fm.EINVALID, "push: %v calls a second is not a rate", opts.CallsPerSecond)
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
	if opts.CallsPerSecond == 0 {
		opts.CallsPerSecond = DefaultCallsPerSecond
	}
	s := &Service{
		opts: opts, path: cmp.Or(u.Path, "/"), margin: renewalMargin(opts.ChannelTTL),
		calls: rate.NewLimiter(rate.Limit(opts.CallsPerSecond), int(max(math.Ceil(opts.CallsPerSecond), 1))),
		wake:  make(chan struct{}, 1), changed: make(chan struct{}, 1), steps: make(chan chan struct{}, 1),
		rereads: rereads{every: rereadEvery, timeout: rereadTimeout, wait: unknownWait, limit: maxWaiting},
		cache:   newChannelCache(), stats: map[string]*feedStats{}, failures: map[string]string{},
	}
	// Subscribed first, then built: a change made meanwhile is not missed.
	s.feeds.Store(newFeedSet(nil, nil))
	opts.Libraries.Subscribe(s.librariesChanged)
	s.librariesChanged(fm.LibrarySetChange{})
	return s, nil
}

// librariesChanged follows a change of the library set: the feeds are
// rebuilt, what is known of the feeds removed is forgotten, and the keeper
// (if it holds the lease) is told if feeds were added or removed. It does
// not block.
func (s *Service) librariesChanged(fm.LibrarySetChange) {
	s.feedsMu.Lock()
	feeds := newFeedSet(s.opts.Libraries.List(), s.opts.DiscoveryAccounts)
	old := s.feeds.Swap(feeds)
	s.feedsMu.Unlock()
	if old.sameKeys(feeds) {
		return
	}
	s.mu.Lock()
	for _, key := range old.removedFrom(feeds) {
		delete(s.stats, key)
		delete(s.failures, key)
	}
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// renewalMargin is how long before a channel expires its renewal may
// begin: a tenth of the channels' lifetime, at most an hour, at least 2 s.
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
	feeds, now := s.feeds.Load(), s.opts.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]FeedStatus, 0, len(feeds.list))
	for i := range feeds.list {
		out = append(out, s.feedStatus(&feeds.list[i], now))
	}
	return out
}

// FeedStatus returns the status of the feed keyed key, and false if the
// library set has no such feed.
func (s *Service) FeedStatus(key string) (FeedStatus, bool) {
	f := s.feeds.Load().byKey[key]
	if f == nil {
		return FeedStatus{}, false
	}
	now := s.opts.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.feedStatus(f, now), true
}

// LibraryFeedStatus returns the status of the feed of the library of that
// ID, and false if the library set has no such library.
func (s *Service) LibraryFeedStatus(libraryID string) (FeedStatus, bool) {
	key, ok := s.feeds.Load().byLibrary[libraryID]
	if !ok {
		return FeedStatus{}, false
	}
	return s.FeedStatus(key)
}

// Summary counts the feeds by what covers them, in all and by domain.
func (s *Service) Summary() FeedSummary {
	feeds, now := s.feeds.Load(), s.opts.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	sum := FeedSummary{Domains: map[string]FeedCounts{}, Note: s.note}
	for _, f := range feeds.list {
		_, watched := s.cache.latest(f.Key, now)
		failing := s.failures[f.Key] != ""
		sum.count(watched, failing)
		for _, d := range feeds.domains[f.Key] {
			c := sum.Domains[d]
			c.count(watched, failing)
			sum.Domains[d] = c
		}
	}
	return sum
}

// count counts a feed.
func (c *FeedCounts) count(watched, failing bool) {
	c.Feeds++
	if watched {
		c.Watched++
	} else {
		c.Polling++
	}
	if failing {
		c.Failing++
	}
}

// feedStatus returns f's status at now. Call it with s.mu held.
func (s *Service) feedStatus(f *Feed, now time.Time) FeedStatus {
	st := FeedStatus{Feed: f.Key, Libraries: slices.Clone(f.Libraries)}
	if ch, ok := s.cache.latest(f.Key, now); ok {
		st.Channel, st.Expiration = ch.ID, ch.Expiration
	}
	if stats := s.stats[f.Key]; stats != nil {
		st.LastNotification, st.Accepted, st.Refused = stats.last, stats.accepted, stats.refused
	}
	st.Polling = st.Channel == ""
	st.Reason = s.failures[f.Key]
	if st.Reason == "" && st.Polling {
		st.Reason = cmp.Or(s.note, "no channel registered yet")
	}
	return st
}
