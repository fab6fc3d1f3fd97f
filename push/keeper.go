package push

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	fm "github.com/foldermirror/foldermirror"
)

const (
	// leaseRetryEvery is how often a process that does not hold the push
	// lease tries to take it.
	leaseRetryEvery = 5 * time.Second
	// cacheRefreshEvery is how often every process reads the stored
	// channels, for its receiver.
	cacheRefreshEvery = 3 * time.Second
	// storeRetryEvery is how soon the keeper tries again after it could
	// not read the stored channels, or not stop or delete one.
	storeRetryEvery = 30 * time.Second
	// minWait bounds how often the keeper looks, whatever its plan says.
	minWait = 10 * time.Millisecond
)

// errThrottled says the keeper's calls of Drive are at their rate: what is
// left waits for the next.
var errThrottled = errors.New("push: the calls of Drive are at their rate")

// Run keeps the channels while ctx lasts, and reads the stored ones every
// few seconds for the receiver. It tries to take fm.PushLease every few
// seconds (and at each Retry) while another process holds it; once it holds
// it, it keeps the channels (see the package's documentation) until ctx
// ends or the lease is lost, then tries to take it again. It returns once
// ctx ended, the lease given back.
func (s *Service) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { s.refresh(ctx) })
	s.keep(ctx)
	wg.Wait()
}

// refresh reads the stored channels into the cache every
// cacheRefreshEvery until ctx ends.
func (s *Service) refresh(ctx context.Context) {
	t := time.NewTicker(cacheRefreshEvery)
	defer t.Stop()
	for {
		if _, err := s.read(ctx); err != nil && ctx.Err() == nil {
			s.opts.Logger.Debug("could not read the push channels", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// keep takes the lease whenever it can and keeps the channels meanwhile.
// While it does not hold the lease, the changes of the library set are
// not its business: it looks at them all once it takes it.
func (s *Service) keep(ctx context.Context) {
	var step chan struct{} // a test's, answered once the keeper has looked
	defer func() { answer(step) }()
	for ctx.Err() == nil {
		lease, err := s.opts.Leases.Acquire(ctx, fm.PushLease)
		if err == nil {
			step = s.hold(ctx, lease, step)
			continue
		}
		if ctx.Err() != nil {
			return
		}
		s.notKeeping(err)
		answer(step)
		step, _ = s.wait(ctx, nil, nil, leaseRetryEvery)
	}
}

// hold keeps the channels under lease until ctx ends or the lease is lost,
// then gives it back. It returns the step to answer after the next try to
// take the lease.
func (s *Service) hold(ctx context.Context, lease fm.Lease, step chan struct{}) chan struct{} {
	defer lease.Release()
	s.keeping()
	k := s.newKeeper(lease.Fence())
	for {
		next, err := k.look(ctx)
		switch {
		case ctx.Err() != nil:
			return step
		case isLost(err):
			s.lost(err)
			return step
		case err != nil:
			s.opts.Logger.Warn("push channels: tried again later", "err", err)
		}
		answer(step)
		var ok bool
		if step, ok = s.wait(ctx, lease.Lost(), s.changed, s.until(next)); !ok {
			if ctx.Err() == nil {
				s.lost(fmt.Errorf("%s: %w", fm.PushLease, fm.ErrLeaseLost))
			}
			return step
		}
	}
}

// wait waits for d (none if negative), a Retry, a change of the feeds or a
// test's step: ok. It returns !ok at once if ctx ends or lost is closed.
func (s *Service) wait(ctx context.Context, lost, changed <-chan struct{}, d time.Duration) (step chan struct{}, ok bool) {
	var timer <-chan time.Time
	if d >= 0 {
		t := time.NewTimer(max(d, minWait))
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-ctx.Done():
		return nil, false
	case <-lost:
		return nil, false
	case <-timer:
	case <-s.wake:
	case <-changed:
	case step = <-s.steps:
	}
	return step, true
}

// until returns the time from now to next, -1 if next is zero.
func (s *Service) until(next time.Time) time.Duration {
	if next.IsZero() {
		return -1
	}
	return max(next.Sub(s.opts.Now()), 0)
}

// answer tells a test's step, if any, that the keeper looked.
func answer(step chan struct{}) {
	if step != nil {
		close(step)
	}
}

// keeper keeps the channels during one holding of the lease. It lives in
// the keeping goroutine alone.
type keeper struct {
	s     *Service
	fence fm.Fence
	// loaded: the stored channels were read, and their feeds planned.
	loaded bool
	// feeds are the feeds as the keeper last followed them; plan says
	// when to look next at each of them, and at the feeds no longer in
	// the set that still have stored channels.
	feeds *feedSet
	plan  plan
	// mine are the IDs of the channels this holding registered; blocked
	// the feeds whose last watch failed, left alone until a Retry; gone
	// the feeds removed from the set since the keeper followed it, whose
	// channels are still to retire. mu guards the three: feeds are tended
	// at once (tendAtOnce).
	mu      sync.Mutex
	mine    map[string]bool
	blocked map[string]bool
	gone    map[string]Feed
}

func (s *Service) newKeeper(fence fm.Fence) *keeper {
	return &keeper{s: s, fence: fence, feeds: s.feeds.Load(), plan: newPlan(),
		mine: map[string]bool{}, blocked: map[string]bool{}, gone: map[string]Feed{}}
}

// look reads the stored channels if the keeper has not yet, follows the
// changes of the library set, plans the feeds whose watch failed again if
// Retry was called, and tends the feeds due. It returns when to look next
// (zero if nothing is planned).
func (k *keeper) look(ctx context.Context) (time.Time, error) {
	if !k.loaded {
		if err := k.load(ctx); err != nil {
			return k.s.opts.Now().Add(storeRetryEvery), fmt.Errorf("read the push channels: %w", err)
		}
	}
	now := k.s.opts.Now()
	k.follow(k.s.feeds.Load(), now)
	if k.s.retry.Swap(false) {
		for key := range k.blocked {
			k.plan.add(key, now)
		}
		clear(k.blocked)
	}
	return k.tendDue(ctx)
}

// load reads the stored channels into the cache (the lease held, no other
// process writes them: what it read is the store) and plans every feed,
// now: each gets a new channel. The feeds of stored channels that are not
// in the set go first: their channels are retired.
func (k *keeper) load(ctx context.Context) error {
	stored, err := k.s.opts.Channels.Channels(ctx)
	if err != nil {
		return err
	}
	k.s.install(stored)
	now := k.s.opts.Now()
	for _, f := range k.feeds.list {
		k.plan.add(f.Key, now)
	}
	for _, ch := range stored {
		if k.feeds.byKey[ch.Feed] == nil {
			k.plan.add(ch.Feed, time.Time{})
		}
	}
	k.loaded = true
	return nil
}

// follow plans the feeds added to the set since the keeper last followed
// it, now, and those removed, before every other: their channels are
// stopped at once. A feed whose libraries alone changed is left as it is.
func (k *keeper) follow(feeds *feedSet, now time.Time) {
	if feeds == k.feeds {
		return
	}
	for _, f := range feeds.list {
		if k.feeds.byKey[f.Key] == nil {
			delete(k.gone, f.Key)
			k.plan.add(f.Key, now)
		}
	}
	for _, key := range k.feeds.removedFrom(feeds) {
		k.gone[key] = *k.feeds.byKey[key]
		delete(k.blocked, key)
		k.plan.add(key, time.Time{})
	}
	k.feeds = feeds
}

// tendAtOnce is how many feeds the keeper tends at once: a feed's tending
// waits on Drive (a watch is two requests) and on the index, so that one
// at a time would take far longer than the calls' rate allows.
const tendAtOnce = 8

// tendDue tends the feeds due, in the order the plan has them, up to
// tendAtOnce at a time, until none is due or the calls of Drive are at
// their rate. A batch holds either feeds no longer in the set or feeds of
// the set, never both, so that the channels of a removed feed are stopped
// before any other call. It returns when to look next: when the next feed
// is due, or the next call may be made.
func (k *keeper) tendDue(ctx context.Context) (time.Time, error) {
	for ctx.Err() == nil {
		now := k.s.opts.Now()
		batch, next := k.takeDue(now)
		if len(batch) == 0 {
			return next, nil
		}
		throttled, err := k.tendBatch(ctx, batch, now)
		if err != nil {
			return time.Time{}, err
		}
		if throttled {
			return k.s.nextCall(now), nil
		}
	}
	return time.Time{}, ctx.Err()
}

// dueFeed is a feed taken from the plan to be tended, with the time it was
// due.
type dueFeed struct {
	key string
	at  time.Time
}

// takeDue takes from the plan the feeds due at now, earliest first, up to
// tendAtOnce of them, all of the set or all removed from it. With none due,
// it returns when the next one is (zero if none is planned).
func (k *keeper) takeDue(now time.Time) ([]dueFeed, time.Time) {
	var batch []dueFeed
	for len(batch) < tendAtOnce {
		key, at, ok := k.plan.first()
		if !ok || at.After(now) {
			if len(batch) == 0 && ok {
				return nil, at
			}
			break
		}
		inSet := k.feeds.byKey[key] != nil
		if len(batch) > 0 && inSet != (k.feeds.byKey[batch[0].key] != nil) {
			break
		}
		k.plan.remove(key)
		batch = append(batch, dueFeed{key, at})
	}
	return batch, time.Time{}
}

// tendBatch tends the feeds of batch at once and plans each one's next
// look. A feed stopped for want of calls is planned again at the time it
// was due, and throttled is true. The first other error is returned.
func (k *keeper) tendBatch(ctx context.Context, batch []dueFeed, now time.Time) (throttled bool, err error) {
	nexts, errs := make([]time.Time, len(batch)), make([]error, len(batch))
	var wg sync.WaitGroup
	for i, f := range batch {
		wg.Go(func() { nexts[i], errs[i] = k.tend(ctx, f.key, now) })
	}
	wg.Wait()
	for i, f := range batch {
		switch {
		case errors.Is(errs[i], errThrottled):
			k.plan.add(f.key, f.at)
			throttled = true
		case errs[i] != nil:
			err = cmp.Or(err, errs[i])
		case !nexts[i].IsZero():
			k.plan.add(f.key, nexts[i])
		}
	}
	return throttled, err
}

// tend does what the feed keyed key needs now, and returns when to look at
// it next (zero: not until something changes). A feed of the set gets a
// channel if none of this holding covers it or its renewal is due (unless
// its last watch failed), then the feed's other channels are retired; a
// feed no longer in the set has its channels retired. Stopped for want of
// calls (errThrottled), it can be tended again: it does what is left.
func (k *keeper) tend(ctx context.Context, key string, now time.Time) (time.Time, error) {
	f := k.feeds.byKey[key]
	if f == nil {
		return k.retireGone(ctx, key, now)
	}
	cur, covered := k.s.latest(key, now)
	if (!covered || !k.isMine(cur.ID) || !now.Before(k.s.renewAt(cur))) && !k.isBlocked(key) {
		ch, err := k.register(ctx, *f, now)
		switch {
		case err == nil && !covered:
			// A channel tells only of changes after its own start token:
			// those since the feed's libraries were last synced (a library
			// new to the set, or a channel that lapsed) are read once now.
			k.s.notify(f)
			cur, covered = ch, true
		case err == nil:
			cur, covered = ch, true
		case errors.Is(err, errThrottled) || isLost(err) || ctx.Err() != nil:
			return time.Time{}, err
		default:
			k.mu.Lock()
			k.blocked[key] = true
			k.mu.Unlock()
		}
	}
	keep := ""
	if covered {
		keep = cur.ID
	}
	retryAt, err := k.retire(ctx, *f, true, keep, now)
	if err != nil {
		return time.Time{}, err
	}
	var next time.Time
	switch {
	case covered && k.isMine(cur.ID) && !k.isBlocked(key):
		next = k.s.renewAt(cur)
	case covered:
		next = cur.Expiration // its renewal failed: the channel is deleted once expired
	}
	return earliest(next, retryAt), nil
}

// retireGone retires the channels of the feed keyed key, no longer in the
// set, acting as its storage account if the keeper knew the feed.
func (k *keeper) retireGone(ctx context.Context, key string, now time.Time) (time.Time, error) {
	k.mu.Lock()
	f, ok := k.gone[key]
	k.mu.Unlock()
	if !ok {
		user := ""
		if len(k.feeds.list) > 0 {
			user = k.feeds.list[0].User
		}
		f = feedOfKey(key, user)
	}
	retryAt, err := k.retire(ctx, f, false, "", now)
	if err == nil && retryAt.IsZero() {
		k.mu.Lock()
		delete(k.gone, key)
		k.mu.Unlock()
	}
	return retryAt, err
}

// isMine tells whether this holding registered the channel of ID id.
func (k *keeper) isMine(id string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.mine[id]
}

// isBlocked tells whether the last watch of the feed keyed key failed.
func (k *keeper) isBlocked(key string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.blocked[key]
}

// earliest returns the earlier of a and b, the zero time meaning none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// renewAt is when the keeper renews ch: from a margin to half a margin
// before it expires, at a point its ID draws, so that the channels
// registered together are not renewed together.
func (s *Service) renewAt(ch fm.PushChannel) time.Time {
	h := fnv.New64a()
	_, _ = h.Write([]byte(ch.ID)) // never fails
	share := float64(h.Sum64()>>11) / (1 << 53)
	return ch.Expiration.Add(-s.margin + time.Duration(share*float64(s.margin/2)))
}

// takeCall takes a call of Drive from the rate, errThrottled if there is
// none left now.
func (s *Service) takeCall(now time.Time) error {
	if !s.calls.AllowN(now, 1) {
		return errThrottled
	}
	return nil
}

// nextCall returns when the rate allows a call of Drive again.
func (s *Service) nextCall(now time.Time) time.Time {
	missing := max(1-s.calls.TokensAt(now), 0)
	return now.Add(time.Duration(missing / float64(s.calls.Limit()) * float64(time.Second)))
}

// register registers a new channel for f: stored first, then watched,
// then stored with what Drive said of it. A failure is recorded as the
// feed's.
func (k *keeper) register(ctx context.Context, f Feed, now time.Time) (fm.PushChannel, error) {
	if err := k.s.takeCall(now); err != nil {
		return fm.PushChannel{}, err
	}
	id, token := randomHex(16), randomHex(32)
	ch := fm.PushChannel{ID: id, TokenSHA256: sha256.Sum256([]byte(token)), Feed: f.Key,
		Expiration: now.Add(k.s.opts.ChannelTTL)}
	if err := k.s.put(ctx, ch, k.fence); err != nil {
		return ch, k.s.failed(ctx, f, fmt.Errorf("store the channel: %w", err))
	}
	resourceID, expires, err := k.s.opts.Watcher.Watch(ctx, f, id, token, k.s.opts.Address, ch.Expiration)
	if err != nil {
		if derr := k.s.delete(ctx, id, k.fence); derr != nil && !isLost(derr) {
			k.s.opts.Logger.Warn("could not delete a channel Drive did not register; deleted later", "feed", f.Key, "channel", id, "err", derr)
		}
		return ch, k.s.failed(ctx, f, err)
	}
	ch.ResourceID, ch.Expiration = resourceID, expires
	if err := k.s.put(ctx, ch, k.fence); err != nil {
		if serr := k.s.opts.Watcher.Stop(context.WithoutCancel(ctx), f, id, resourceID); serr != nil {
			k.s.opts.Logger.Warn("could not stop a channel whose storing failed; it expires by itself", "feed", f.Key, "channel", id, "err", serr)
		}
		return ch, k.s.failed(ctx, f, fmt.Errorf("store the channel: %w", err))
	}
	k.mu.Lock()
	k.mine[id] = true
	k.mu.Unlock()
	k.s.mu.Lock()
	delete(k.s.failures, f.Key)
	k.s.mu.Unlock()
	k.s.opts.Logger.Info("push channel registered", "feed", f.Key, "channel", id, "expires", expires)
	return ch, nil
}

// failed records why f's channel could not be registered, and returns err.
// A lost lease, or the end of ctx, is not the feed's failure.
func (s *Service) failed(ctx context.Context, f Feed, err error) error {
	if isLost(err) || ctx.Err() != nil {
		return err
	}
	s.opts.Logger.Warn("could not register a push channel; the feed is polled until the next try", "feed", f.Key, "err", err)
	s.mu.Lock()
	s.failures[f.Key] = err.Error()
	s.mu.Unlock()
	return err
}

// retire stops (if live) and deletes the stored channels of f's feed but
// the one of ID keep; the expired ones, and those not registered (no
// resourceId), it deletes only. Stopping a live channel, with notify, has
// what the feed's notifications start started once (see notify). It returns when to try again what failed (zero if
// nothing did): a channel that could not be stopped stays stored.
func (k *keeper) retire(ctx context.Context, f Feed, notify bool, keep string, now time.Time) (time.Time, error) {
	var retryAt time.Time
	for _, ch := range k.s.channelsOf(f.Key) {
		if ch.ID == keep {
			continue
		}
		err := k.retireOne(ctx, f, notify, ch, now)
		switch {
		case err == nil:
		case errors.Is(err, errThrottled) || isLost(err) || ctx.Err() != nil:
			return time.Time{}, err
		default:
			k.s.opts.Logger.Warn("could not retire a push channel; tried again later", "feed", f.Key, "channel", ch.ID, "err", err)
			retryAt = now.Add(storeRetryEvery)
		}
	}
	return retryAt, nil
}

// retireOne stops (if live) and deletes one channel. A stopped channel
// posts nothing more, not even the message it may still owe for the
// changes just before (Drive batches them): with notify, what the feed's
// notifications start is started once, which reads those changes (its successor tells of those
// after its registration).
func (k *keeper) retireOne(ctx context.Context, f Feed, notify bool, ch fm.PushChannel, now time.Time) error {
	if ch.ResourceID != "" && f.User != "" && now.Before(ch.Expiration) {
		if err := k.s.takeCall(now); err != nil {
			return err
		}
		if err := k.s.opts.Watcher.Stop(ctx, f, ch.ID, ch.ResourceID); err != nil {
			return fmt.Errorf("stop channel %s of %s: %w", ch.ID, ch.Feed, err)
		}
		if notify {
			k.s.notify(&f)
		}
	}
	if err := k.s.delete(ctx, ch.ID, k.fence); err != nil {
		return fmt.Errorf("delete channel %s of %s: %w", ch.ID, ch.Feed, err)
	}
	k.mu.Lock()
	delete(k.mine, ch.ID)
	k.mu.Unlock()
	k.s.opts.Logger.Info("push channel retired", "feed", ch.Feed, "channel", ch.ID)
	return nil
}

// latest returns the channel that covers the feed keyed key, as cached.
func (s *Service) latest(key string, now time.Time) (fm.PushChannel, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cache.latest(key, now)
}

// channelsOf returns the cached channels of the feed keyed key.
func (s *Service) channelsOf(key string) []fm.PushChannel {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cache.ofFeed(key)
}

// read reads the stored channels, and installs them in the cache unless
// the cache changed while it read.
func (s *Service) read(ctx context.Context) ([]fm.PushChannel, error) {
	s.mu.Lock()
	gen := s.gen
	s.mu.Unlock()
	list, err := s.opts.Channels.Channels(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen == gen {
		s.installLocked(list)
	}
	return list, nil
}

// install installs list in the cache, whatever it held.
func (s *Service) install(list []fm.PushChannel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.installLocked(list)
}

// installLocked is install, with s.mu held.
func (s *Service) installLocked(list []fm.PushChannel) {
	s.gen++
	s.cache.install(list, s.opts.Now())
	s.countChannels()
}

// put stores ch under fence, and caches it.
func (s *Service) put(ctx context.Context, ch fm.PushChannel, fence fm.Fence) error {
	if err := s.opts.Channels.PutChannel(ctx, ch, fence); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	s.cache.put(ch, s.opts.Now())
	s.countChannels()
	return nil
}

// delete deletes the channel of that ID under fence, from the cache too.
func (s *Service) delete(ctx context.Context, id string, fence fm.Fence) error {
	if err := s.opts.Channels.DeleteChannel(ctx, id, fence); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	s.cache.remove(id, s.opts.Now())
	s.countChannels()
	return nil
}

// countChannels sets foldermirror_push_channels from the cache (the
// channels that expired since the last read of the store counted until
// the next); call it with s.mu held.
func (s *Service) countChannels() {
	s.opts.Metrics.channels.Set(float64(s.cache.live))
}

// keeping records that this process keeps the channels.
func (s *Service) keeping() {
	s.mu.Lock()
	s.note = ""
	s.mu.Unlock()
	s.opts.Logger.Info("keeping the push channels")
}

// notKeeping records why this process could not take the push lease,
// logged when it changes.
func (s *Service) notKeeping(err error) {
	note := "this process cannot take the push lease: " + err.Error()
	if errors.Is(err, fm.ErrLeaseHeld) {
		note = "another process keeps the channels (" + err.Error() + ")"
	}
	s.mu.Lock()
	changed := s.note != note
	s.note = note
	s.mu.Unlock()
	if changed {
		s.opts.Logger.Info("not keeping the push channels", "reason", note)
	}
}

// lost records that the lease was lost: the failures of this holding no
// longer say anything.
func (s *Service) lost(err error) {
	s.opts.Logger.Warn("push channels: the lease was lost; trying to take it again", "err", err)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.note = "the push lease was lost: " + err.Error()
	clear(s.failures)
}

// isLost tells whether err says the lease is no longer this process's.
func isLost(err error) bool {
	return errors.Is(err, fm.ErrLeaseLost) || errors.Is(err, fm.ErrLeaseHeld)
}

// randomHex returns n random bytes in hexadecimal.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails: crypto/rand crashes the program instead (Go 1.24)
	return hex.EncodeToString(b)
}
