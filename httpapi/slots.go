package httpapi

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"sync"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
)

// Bounded work per caller, and for the whole process.
//
// A request holds a slot of its caller's, and one of the process's, from
// its authentication until its answer has left: not when the handler
// returns, since Linux grows a socket's send buffer to megabytes and an
// answer would "finish" into it while its reader has read nothing, but
// when the connection's send queue holds at most drainedBytes (its last
// segments may wait for an acknowledgement a client delays), when a new
// request arrives on the connection (its client read the answer), or when
// the connection closes. A caller has at most CallerConcurrent slots
// (beyond, 429 with Retry-After), the process AnswersInFlight (beyond, 503
// with Retry-After).
//
// Each connection's send buffer is bounded too (sendBufferBytes), so that
// an answer being written holds about a buffer (streamChunkBytes) in the
// process and sendBufferBytes, doubled, in the kernel, however slowly it is
// read: the memory slow readers hold is bounded for one caller, and for
// all. A smaller send buffer would hold less, but costs throughput: op 6's
// 600 KB answers were 10-20 % slower with 128 KB than with the kernel's own
// sizing.
const (
	callerConcurrent = 32
	answersInFlight  = 1024
	sendBufferBytes  = 256 << 10
	drainedBytes     = 16 << 10
	// drainPoll is how often answers waiting in send queues are looked at.
	drainPoll = 5 * time.Millisecond
)

// slotRetryAfter is the Retry-After of a request refused a slot.
const slotRetryAfter = time.Second

// answerSlots counts the requests being answered, per caller and in all.
type answerSlots struct {
	perCaller, total int
	// drainTimeout bounds the wait for a send queue to empty; past it the
	// connection is closed (its reader takes nothing).
	drainTimeout time.Duration
	// pollEvery is how often the waiting answers are looked at (0:
	// drainPoll).
	pollEvery time.Duration
	inFlight  prometheus.Gauge

	mu    sync.Mutex
	count map[string]int
	n     int
	// pending are the answers written but still in their connections'
	// send queues, by connection.
	pending map[net.Conn]*drainingAnswer
	polling bool
}

// drainingAnswer is an answer written but still in its connection's send
// queue, whose slot is released once the queue is (about) empty.
type drainingAnswer struct {
	slot     *slot
	deadline time.Time
}

// take takes a slot of caller's for a request on conn (nil: unknown), and
// returns it, to be released.
func (as *answerSlots) take(caller string, conn net.Conn) (*slot, error) {
	if conn != nil {
		as.answered(conn)
	}
	if as.atLimit(caller) {
		as.reap(caller)
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	switch {
	case as.count[caller] >= as.perCaller:
		return nil, &fm.Error{Code: fm.ERATELIMITED, RetryAfter: slotRetryAfter,
			Message: fmt.Sprintf("Too many requests of this caller under way (at most %d at once); try again after Retry-After seconds.", as.perCaller)}
	case as.n >= as.total:
		return nil, &fm.Error{Code: fm.EUNAVAILABLE, RetryAfter: slotRetryAfter,
			Message: "The server is answering too many requests; try again after Retry-After seconds."}
	}
	if as.count == nil {
		as.count = map[string]int{}
	}
	as.count[caller]++
	as.n++
	as.inFlight.Inc()
	return &slot{slots: as, caller: caller}, nil
}

// atLimit tells whether a request of caller's would be refused now.
func (as *answerSlots) atLimit(caller string) bool {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.count[caller] >= as.perCaller || as.n >= as.total
}

// reap releases the slots of caller's answers that have left their send
// queues since the poll last looked (every drainPoll): a caller at its
// limit is refused for answers still on their way only. A client that
// opens a new connection while its last answer's is put back for reuse
// (Go's does, under load) leaves that answer's slot to the poll, and a
// busy process's poll may lag. Only the caller's own send queues are read.
func (as *answerSlots) reap(caller string) {
	as.mu.Lock()
	var theirs map[net.Conn]*drainingAnswer
	for conn, d := range as.pending {
		if d.slot.caller == caller {
			if theirs == nil {
				theirs = map[net.Conn]*drainingAnswer{}
			}
			theirs[conn] = d
		}
	}
	as.mu.Unlock()
	for conn := range theirs {
		if queued, err := sendQueue(conn); err == nil && queued > drainedBytes {
			delete(theirs, conn) // still on its way
		}
	}
	as.releaseGone(theirs)
}

// releaseGone releases the slots of the answers gone, those of their
// connections still waiting as they were read: one released meanwhile (a
// new request on its connection) is no longer there, and a connection's
// new answer is not the one read.
func (as *answerSlots) releaseGone(gone map[net.Conn]*drainingAnswer) {
	var releases []*slot
	as.mu.Lock()
	for conn, d := range gone {
		if as.pending[conn] == d {
			delete(as.pending, conn)
			releases = append(releases, d.slot)
		}
	}
	as.mu.Unlock()
	for _, sl := range releases {
		sl.release()
	}
}

// slot is a request's slot among the answerSlots.
type slot struct {
	slots  *answerSlots
	caller string
	once   sync.Once
}

// release gives the slot back; calls after the first do nothing.
func (sl *slot) release() { sl.once.Do(sl.put) }

func (sl *slot) put() { sl.slots.put(sl.caller) }

func (as *answerSlots) put(caller string) {
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.count[caller]--; as.count[caller] <= 0 {
		delete(as.count, caller)
	}
	as.n--
	as.inFlight.Dec()
}

// answered releases the slot of conn's last answer, if it waits in the
// send queue: a new request arrived on conn, so its client read it.
func (as *answerSlots) answered(conn net.Conn) {
	as.mu.Lock()
	d, ok := as.pending[conn]
	delete(as.pending, conn)
	as.mu.Unlock()
	if ok {
		d.slot.release()
	}
}

// connState releases the slot of a connection's last answer when the
// connection closes.
func (as *answerSlots) connState(conn net.Conn, state http.ConnState) {
	if state == http.StateClosed || state == http.StateHijacked {
		as.answered(conn)
	}
}

// settle releases a request's slot once its answer has left: at once if
// its connection's send queue is (about) empty, else when it empties, when
// another request arrives on the connection, or when drainTimeout has
// passed (the connection is then reset).
func (as *answerSlots) settle(c *gin.Context, sl *slot) {
	conn := requestConn(c.Request)
	if conn == nil {
		sl.release() // not served by our http.Server (a test's handler)
		return
	}
	_ = http.NewResponseController(c.Writer).Flush()
	if queued, err := sendQueue(conn); err != nil || queued <= drainedBytes {
		sl.release()
		return
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.pending == nil {
		as.pending = map[net.Conn]*drainingAnswer{}
	}
	as.pending[conn] = &drainingAnswer{slot: sl, deadline: time.Now().Add(as.drainTimeout)}
	if !as.polling {
		as.polling = true
		go as.poll()
	}
}

// poll releases the slots of answers that left their send queues, until
// none waits.
func (as *answerSlots) poll() {
	tick := time.NewTicker(cmp.Or(as.pollEvery, drainPoll))
	defer tick.Stop()
	for range tick.C {
		if !as.pollOnce(time.Now()) {
			return
		}
	}
}

// pollOnce releases the slots of answers gone, or past their deadline,
// and tells whether some still wait. The send queues are read without
// as.mu held, so that requests taking slots do not wait on the syscalls.
func (as *answerSlots) pollOnce(now time.Time) bool {
	as.mu.Lock()
	gone := maps.Clone(as.pending)
	as.mu.Unlock()
	for conn, d := range gone {
		queued, err := sendQueue(conn)
		if err == nil && queued > drainedBytes {
			if now.Before(d.deadline) {
				delete(gone, conn)
				continue
			}
			abort(conn) // its reader took nothing for drainTimeout
		}
	}
	as.releaseGone(gone)
	as.mu.Lock()
	defer as.mu.Unlock()
	as.polling = len(as.pending) > 0
	return as.polling
}

// abort closes a connection at once, dropping what its send queue holds
// (a reset), where a close would have the kernel keep sending it.
func abort(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Close()
}

// connKey keys a request's connection in its context.
type connKey struct{}

// requestConn returns the connection a request came on, nil if unknown.
func requestConn(r *http.Request) net.Conn {
	conn, _ := r.Context().Value(connKey{}).(net.Conn)
	return conn
}

// connContext keeps each connection in its requests' contexts, and bounds
// its send buffer.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(sendBufferBytes)
	}
	return context.WithValue(ctx, connKey{}, c)
}
