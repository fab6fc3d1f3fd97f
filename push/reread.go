package push

import (
	"context"
	"errors"
	"sync"
	"time"

	fm "github.com/foldermirror/foldermirror"
)

// The receiver's re-reads of the store, for a channel ID of the keeper's
// form that the cache does not know: another process may have stored the
// channel since the cache was read (every cacheRefreshEvery).
const (
	// rereadEvery is how far apart re-reads begin, at least.
	rereadEvery = 500 * time.Millisecond
	// rereadTimeout bounds each re-read.
	rereadTimeout = 5 * time.Second
	// unknownWait is how long a notification of an unknown ID waits, at
	// most, for the re-read that tells whether its channel is stored.
	unknownWait = 1500 * time.Millisecond
	// maxWaiting bounds the notifications waiting for a re-read at once;
	// those beyond are answered at once, unconfirmed.
	maxWaiting = 256
)

// errUnconfirmed says a re-read could not tell in time whether a channel is
// stored.
var errUnconfirmed = errors.New("no re-read of the push channels answered in time")

// rereads coalesces the re-reads: one goroutine at a time reads, under a
// context of its own (no request's) bounded by timeout, and its reads begin
// at least every apart. A notification waits for the first re-read that begins
// after it arrived (one begun before may have missed its channel), so that
// however many wait, one re-read answers them all.
type rereads struct {
	mu      sync.Mutex
	every   time.Duration
	timeout time.Duration
	wait    time.Duration // how long a notification waits, at most
	limit   int           // how many wait at most (maxWaiting)
	running bool          // the reading goroutine runs
	next    *round        // the re-read those arriving now wait for; nil while none waits
	began   time.Time     // when the last re-read began
	waiting int           // notifications waiting
}

// round is one re-read: once done is closed, it found chans (by ID), or
// failed with err.
type round struct {
	done  chan struct{}
	chans map[string]fm.PushChannel
	err   error
}

// lookupStored waits, for the bounded wait at most, for a re-read of the
// store begun after it was called, and returns what it found of the
// channel of that ID: the channel, or !ok if the store has no such
// channel. It returns errUnconfirmed (or the store's error) if it cannot
// tell: the wait ended, ctx ended, the store failed, or too many wait.
func (s *Service) lookupStored(ctx context.Context, id string) (fm.PushChannel, bool, error) {
	r, wait := s.rereads.join(s.reread)
	if r == nil {
		return fm.PushChannel{}, false, errUnconfirmed
	}
	defer s.rereads.leave()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-r.done:
	case <-t.C:
		return fm.PushChannel{}, false, errUnconfirmed
	case <-ctx.Done():
		return fm.PushChannel{}, false, errUnconfirmed
	}
	if r.err != nil {
		return fm.PushChannel{}, false, r.err
	}
	ch, ok := r.chans[id]
	return ch, ok, nil
}

// reread reads the stored channels for a re-read, logging a failure.
func (s *Service) reread(ctx context.Context) ([]fm.PushChannel, error) {
	list, err := s.read(ctx)
	if err != nil {
		s.opts.Logger.Debug("could not read the push channels again", "err", err)
	}
	return list, err
}

// join counts a notification waiting, and returns the re-read it waits for
// and how long, starting the reading goroutine if it is not running. It
// returns a nil round if as many notifications as the limit wait already.
func (rr *rereads) join(read func(context.Context) ([]fm.PushChannel, error)) (*round, time.Duration) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if rr.waiting >= rr.limit {
		return nil, 0
	}
	rr.waiting++
	if rr.next == nil {
		rr.next = &round{done: make(chan struct{})}
	}
	if !rr.running {
		rr.running = true
		go rr.loop(read)
	}
	return rr.next, rr.wait
}

// leave counts a notification that no longer waits.
func (rr *rereads) leave() {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	rr.waiting--
}

// loop runs the re-reads waited for, each when its time comes, and ends
// once none is waited for.
func (rr *rereads) loop(read func(context.Context) ([]fm.PushChannel, error)) {
	for {
		r, timeout, pause := rr.take()
		switch {
		case r != nil:
			r.run(read, timeout)
		case pause > 0:
			time.Sleep(pause)
		default:
			return
		}
	}
}

// take returns the re-read to run now, and its timeout; or, if its time
// has not come, how long until it does; or nothing, the goroutine ended,
// if none is waited for.
func (rr *rereads) take() (r *round, timeout, pause time.Duration) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if rr.next == nil {
		rr.running = false
		return nil, 0, 0
	}
	if d := time.Until(rr.began.Add(rr.every)); d > 0 {
		return nil, 0, d
	}
	r, rr.next, rr.began = rr.next, nil, time.Now()
	return r, rr.timeout, 0
}

// run reads the store (installing what it read in the cache), bounded by
// timeout, and tells those waiting.
func (r *round) run(read func(context.Context) ([]fm.PushChannel, error), timeout time.Duration) {
	defer close(r.done)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	list, err := read(ctx)
	if err != nil {
		r.err = err
		return
	}
	r.chans = make(map[string]fm.PushChannel, len(list))
	for _, ch := range list {
		r.chans[ch.ID] = ch
	}
}
