package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"sync"
	"time"

	fm "github.com/foldermirror/foldermirror"
)

// Security-code failures from one client address are limited: from the
// 21st within a sliding minute on, every security-code request from that
// address is refused until fewer than 20 failures remain in the minute.
const (
	codeFailureLimit  = 20
	codeFailureWindow = time.Minute
	// throttleSweepAt is the number of addresses past which addresses with
	// no recent failure are forgotten. A sweep visits every address, so the
	// next one waits until their number has doubled (to at least
	// throttleSweepAt): sweeping costs O(1) a failure however many addresses
	// keep failing, and the map holds at most twice those that do.
	throttleSweepAt = 10_000
)

// SecurityCode is a shared secret that lets its holder act as someone in its
// domain: its admin, or one of its users.
type SecurityCode struct {
	// SHA256 is the SHA-256 digest of the code.
	SHA256 [sha256.Size]byte
	// ActAsAdmin: the code acts as the domain's admin, who reads everything
	// of the domain as an owner.
	ActAsAdmin bool
	// ActAsUser, unless ActAsAdmin, is the lower-cased e-mail of the user
	// the code acts as.
	ActAsUser string
	// Expires is when the code stops working; zero means never.
	Expires time.Time
}

// knownCode is a configured security code of domain.
type knownCode struct {
	SecurityCode
	domain string
}

// codeChecker checks security codes and slows down clients that guess.
type codeChecker struct {
	codes    []knownCode
	now      func() time.Time
	throttle *failureThrottle
}

func newCodeChecker(domains []Domain, now func() time.Time) *codeChecker {
	c := &codeChecker{now: now, throttle: &failureThrottle{failures: map[string][]time.Time{}, now: now, sweepAt: throttleSweepAt}}
	for _, d := range domains {
		for _, sc := range d.SecurityCodes {
			if !sc.ActAsAdmin && sc.ActAsUser == "" {
				continue // acts as nobody: never matched
			}
			c.codes = append(c.codes, knownCode{SecurityCode: sc, domain: d.Name})
		}
	}
	return c
}

// check returns the configured code matching code. Every configured code is
// compared, in constant time, so that timing tells nothing.
func (c *codeChecker) check(code, client string) (*knownCode, error) {
	if wait, blocked := c.throttle.blocked(client); blocked {
		return nil, &fm.Error{Code: fm.ERATELIMITED, RetryAfter: wait, Err: &failure{ReasonThrottled},
			Message: "Too many invalid security codes from this address; try again later."}
	}
	digest := sha256.Sum256([]byte(code))
	var match *knownCode
	for i := range c.codes {
		if subtle.ConstantTimeCompare(digest[:], c.codes[i].SHA256[:]) == 1 {
			match = &c.codes[i]
		}
	}
	switch {
	case match == nil:
		c.throttle.fail(client)
		return nil, codeRefused("Invalid security code.")
	case !match.Expires.IsZero() && !c.now().Before(match.Expires):
		c.throttle.fail(client)
		return nil, codeRefused("The security code has expired.")
	}
	return match, nil
}

func codeRefused(msg string) error {
	return &fm.Error{Code: fm.EFORBIDDEN, Message: msg, Err: &failure{ReasonBadCode}}
}

// failureThrottle counts failures per client address in a sliding window.
type failureThrottle struct {
	mu       sync.Mutex
	failures map[string][]time.Time // oldest first, within the window
	now      func() time.Time
	// sweepAt is the number of addresses at which the next sweep is due.
	sweepAt int
}

// blocked tells whether client has used up its failures, and how long until
// one of them leaves the window.
func (t *failureThrottle) blocked(client string) (time.Duration, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	recent := t.recent(client)
	if len(recent) < codeFailureLimit {
		return 0, false
	}
	oldest := recent[len(recent)-codeFailureLimit]
	return oldest.Add(codeFailureWindow).Sub(t.now()), true
}

func (t *failureThrottle) fail(client string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.failures) >= t.sweepAt {
		for c := range t.failures {
			t.recent(c)
		}
		t.sweepAt = max(throttleSweepAt, 2*len(t.failures))
	}
	t.failures[client] = append(t.recent(client), t.now())
}

// recent drops client's failures older than the window and returns the rest.
func (t *failureThrottle) recent(client string) []time.Time {
	list := t.failures[client]
	cutoff := t.now().Add(-codeFailureWindow)
	i := 0
	for i < len(list) && !list[i].After(cutoff) {
		i++
	}
	list = list[i:]
	if len(list) == 0 {
		delete(t.failures, client)
		return nil
	}
	t.failures[client] = list
	return list
}
