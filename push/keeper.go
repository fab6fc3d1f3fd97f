package push

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
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
	// storeRetryEvery is how soon the keeper looks again after it could
	// not read the stored channels.
	storeRetryEvery = 30 * time.Second
	// minWait bounds how often the keeper looks, whatever Drive answers.
	minWait = time.Second
)

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
		step, _ = s.wait(ctx, nil, leaseRetryEvery)
	}
}

// hold keeps the channels under lease until ctx ends or the lease is lost,
// then gives it back. It returns the step to answer after the next try to
// take the lease.
func (s *Service) hold(ctx context.Context, lease fm.Lease, step chan struct{}) chan struct{} {
	defer lease.Release()
	s.keeping()
	fresh := true
	for {
		next, err := s.pass(ctx, lease.Fence(), fresh)
		fresh = false
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
		if step, ok = s.wait(ctx, lease.Lost(), s.until(next)); !ok {
			if ctx.Err() == nil {
				s.lost(fmt.Errorf("%s: %w", fm.PushLease, fm.ErrLeaseLost))
			}
			return step
		}
	}
}

// wait waits for d (none if negative), a Retry or a test's step: ok. It
// returns !ok at once if ctx ends or lost is closed.
func (s *Service) wait(ctx context.Context, lost <-chan struct{}, d time.Duration) (step chan struct{}, ok bool) {
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

// pass looks at every feed: it registers a channel for those that have
// none live beyond the margin (for all of them on a fresh holding of the
// lease), unless their last try failed and Retry was not called since; then
// it retires every other stored channel. It returns when the next renewal
// is due (zero if none).
func (s *Service) pass(ctx context.Context, fence fm.Fence, fresh bool) (time.Time, error) {
	stored, err := s.read(ctx)
	if err != nil {
		return s.opts.Now().Add(storeRetryEvery), fmt.Errorf("read the push channels: %w", err)
	}
	byID := make(map[string]fm.PushChannel, len(stored))
	for _, ch := range stored {
		byID[ch.ID] = ch
	}
	retry := s.retry.Swap(false) || fresh
	kept := map[string]bool{}
	var next time.Time
	for _, f := range s.feeds {
		now := s.opts.Now()
		cur, ok := latest(byID, f.Key, now)
		if (fresh || !ok || cur.Expiration.Sub(now) <= s.margin) && (retry || s.failure(f.Key) == "") {
			ch, err := s.register(ctx, f, fence)
			if isLost(err) {
				return time.Time{}, err
			}
			if err == nil {
				cur, ok = ch, true
			}
		}
		if !ok {
			continue
		}
		kept[cur.ID] = true
		if at := cur.Expiration.Add(-s.margin); at.After(now) && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	return next, s.retire(ctx, stored, kept, fence)
}

// register registers a new channel for f: stored first, then watched,
// then stored with what Drive said of it. A failure is recorded as the
// feed's.
func (s *Service) register(ctx context.Context, f Feed, fence fm.Fence) (fm.PushChannel, error) {
	id, token := randomHex(16), randomHex(32)
	ch := fm.PushChannel{ID: id, TokenSHA256: sha256.Sum256([]byte(token)), Feed: f.Key,
		Expiration: s.opts.Now().Add(s.opts.ChannelTTL)}
	if err := s.put(ctx, ch, fence); err != nil {
		return ch, s.failed(ctx, f, fmt.Errorf("store the channel: %w", err))
	}
	resourceID, expires, err := s.opts.Watcher.Watch(ctx, f, id, token, s.opts.Address, ch.Expiration)
	if err != nil {
		if derr := s.delete(ctx, id, fence); derr != nil && !isLost(derr) {
			s.opts.Logger.Warn("could not delete a channel Drive did not register; deleted later", "feed", f.Key, "channel", id, "err", derr)
		}
		return ch, s.failed(ctx, f, err)
	}
	ch.ResourceID, ch.Expiration = resourceID, expires
	if err := s.put(ctx, ch, fence); err != nil {
		if serr := s.opts.Watcher.Stop(context.WithoutCancel(ctx), f, id, resourceID); serr != nil {
			s.opts.Logger.Warn("could not stop a channel whose storing failed; it expires by itself", "feed", f.Key, "channel", id, "err", serr)
		}
		return ch, s.failed(ctx, f, fmt.Errorf("store the channel: %w", err))
	}
	s.mu.Lock()
	delete(s.failures, f.Key)
	s.mu.Unlock()
	s.opts.Logger.Info("push channel registered", "feed", f.Key, "channel", id, "expires", expires)
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

// failure returns why f's last registration failed, "" if it did not.
func (s *Service) failure(key string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failures[key]
}

// retire stops and deletes the stored channels not kept; the expired ones,
// and those not registered (no resourceId), it deletes only. One it cannot
// stop stays stored, stopped at the next pass.
func (s *Service) retire(ctx context.Context, stored []fm.PushChannel, kept map[string]bool, fence fm.Fence) error {
	var errs []error
	for _, ch := range stored {
		if kept[ch.ID] {
			continue
		}
		err := s.retireOne(ctx, ch, fence)
		if isLost(err) {
			return err
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// retireOne stops (if live) and deletes one channel. A stopped channel
// posts nothing more, not even the message it may still owe for the
// changes just before (Drive batches them): its feed's libraries, if the
// feed is still configured, are synced once, which reads those changes
// (its successor tells of those after its registration).
func (s *Service) retireOne(ctx context.Context, ch fm.PushChannel, fence fm.Fence) error {
	if f := s.feedFor(ch.Feed); ch.ResourceID != "" && f.User != "" && s.opts.Now().Before(ch.Expiration) {
		if err := s.opts.Watcher.Stop(ctx, f, ch.ID, ch.ResourceID); err != nil {
			return fmt.Errorf("stop channel %s of %s: %w", ch.ID, ch.Feed, err)
		}
		for _, lib := range f.Libraries {
			s.opts.Notifier.Notify(lib)
		}
	}
	if err := s.delete(ctx, ch.ID, fence); err != nil {
		return fmt.Errorf("delete channel %s of %s: %w", ch.ID, ch.Feed, err)
	}
	s.opts.Logger.Info("push channel retired", "feed", ch.Feed, "channel", ch.ID)
	return nil
}

// feedFor returns the feed keyed key; for one no longer configured, what
// the key tells of it, with any configured feed's user for a shared
// drive's (channels.stop needs a user to act as; "" if there is none).
func (s *Service) feedFor(key string) Feed {
	if f := s.byKey[key]; f != nil {
		return *f
	}
	user := ""
	if len(s.feeds) > 0 {
		user = s.feeds[0].User
	}
	return feedOfKey(key, user)
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
		s.gen++
		s.cache = make(map[string]fm.PushChannel, len(list))
		for _, ch := range list {
			s.cache[ch.ID] = ch
		}
		s.countChannels()
	}
	return list, nil
}

// put stores ch under fence, and caches it.
func (s *Service) put(ctx context.Context, ch fm.PushChannel, fence fm.Fence) error {
	if err := s.opts.Channels.PutChannel(ctx, ch, fence); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	s.cache[ch.ID] = ch
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
	delete(s.cache, id)
	s.countChannels()
	return nil
}

// countChannels sets foldermirror_push_channels from the cache; call it
// with s.mu held.
func (s *Service) countChannels() {
	now := s.opts.Now()
	n := 0
	for _, ch := range s.cache {
		if now.Before(ch.Expiration) {
			n++
		}
	}
	s.opts.Metrics.channels.Set(float64(n))
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
