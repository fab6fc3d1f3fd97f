package googlefake

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
)

// Fault is a failure the fake answers a Drive or Directory call with,
// instead of the answer, as Google's front ends do now and then.
type Fault int

// The faults SetFaults may inject.
const (
	// Fault429 is 429 with Retry-After: 1.
	Fault429 Fault = iota
	// Fault429Bare is 429 without Retry-After.
	Fault429Bare
	// Fault403RateLimit is 403 rateLimitExceeded with Retry-After: 1.
	Fault403RateLimit
	// Fault403UserRateLimit is 403 userRateLimitExceeded without Retry-After.
	Fault403UserRateLimit
	Fault500
	Fault502
	Fault503
	// FaultTimeout holds the call until the client gives up.
	FaultTimeout
	// FaultReset closes the connection without an answer.
	FaultReset
	// FaultTruncated answers 200 with a body cut short of its
	// Content-Length, then closes the connection.
	FaultTruncated
	numFaults
)

// AllFaults lists every fault.
var AllFaults = func() []Fault {
	all := make([]Fault, numFaults)
	for i := range all {
		all[i] = Fault(i)
	}
	return all
}()

var faultNames = [...]string{"429", "429 without Retry-After", "403 rateLimitExceeded", "403 userRateLimitExceeded",
	"500", "502", "503", "timeout", "connection reset", "truncated body"}

func (f Fault) String() string { return faultNames[f] }

// faults is the fault injection of a Server.
type faults struct {
	mu       sync.Mutex
	rate     float64
	kinds    []Fault
	rng      *rand.Rand
	injected map[Fault]int
}

// SetFaults makes rate (0 to 1) of the Drive and Directory calls from now on
// fail with one of kinds (all of them if none is given), chosen at random
// from seed. A rate of 0 stops it.
func (s *Server) SetFaults(rate float64, seed uint64, kinds ...Fault) {
	if len(kinds) == 0 {
		kinds = AllFaults
	}
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.rate, s.faults.kinds = rate, kinds
	s.faults.rng = rand.New(rand.NewPCG(seed, seed+1))
	if s.faults.injected == nil {
		s.faults.injected = map[Fault]int{}
	}
}

// InjectedFaults returns how many of each fault were injected.
func (s *Server) InjectedFaults() map[Fault]int {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	out := map[Fault]int{}
	for f, n := range s.faults.injected {
		out[f] = n
	}
	return out
}

// draw returns the fault to answer a call with, if any.
func (fs *faults) draw() (Fault, bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.rate <= 0 || fs.rng.Float64() >= fs.rate {
		return 0, false
	}
	f := fs.kinds[fs.rng.IntN(len(fs.kinds))]
	fs.injected[f]++
	return f, true
}

// inject answers a call with a fault. For FaultTruncated, answer produces
// the real answer, of which half is sent.
func inject(w http.ResponseWriter, r *http.Request, f Fault, answer func() []byte) {
	switch f {
	case Fault429, Fault403RateLimit:
		w.Header().Set("Retry-After", "1")
	}
	switch f {
	case Fault429, Fault429Bare:
		writeAPIError(w, newAPIError(http.StatusTooManyRequests, "rateLimitExceeded", "Rate Limit Exceeded", ""))
	case Fault403RateLimit:
		writeAPIError(w, newAPIError(http.StatusForbidden, "rateLimitExceeded", "Rate Limit Exceeded", ""))
	case Fault403UserRateLimit:
		writeAPIError(w, newAPIError(http.StatusForbidden, "userRateLimitExceeded", "User Rate Limit Exceeded", ""))
	case Fault500:
		writeAPIError(w, newAPIError(http.StatusInternalServerError, "backendError", "Backend Error", ""))
	case Fault502:
		w.WriteHeader(http.StatusBadGateway) // as a load balancer says it: no JSON
		fmt.Fprint(w, "<html><body>502 Bad Gateway</body></html>")
	case Fault503:
		writeAPIError(w, newAPIError(http.StatusServiceUnavailable, "backendError", "The service is currently unavailable.", ""))
	case FaultTimeout:
		<-r.Context().Done()
	case FaultReset:
		closeConn(w)
	case FaultTruncated:
		body := answer()
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body[:len(body)/2])
		closeConn(w)
	}
}

// closeConn drops the connection under a response.
func closeConn(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}
