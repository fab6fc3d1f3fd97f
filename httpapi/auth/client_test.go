package auth_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/foldermirror/foldermirror/httpapi/auth"
)

// The tokeninfo calls of one IPv6 /64 share one client's slots, whatever
// addresses of it the calls come from; a neighbouring /64 has its own.
func TestTokeninfoSlotsByIPv6Slash64(t *testing.T) {
	w := newWorld(t)
	release := w.fake.HoldTokeninfo()
	defer release()
	const n = auth.MaxTokeninfoCallsPerClient + 4
	results := make(chan floodResult, n)
	for i := range n {
		go func() {
			got := w.try("Bearer ya29."+rand.Text(), "", fmt.Sprintf("[2001:db8:1:2:%x::1]:5000", i+1))
			results <- floodResult{outcome: got}
		}()
	}
	for _, r := range receive(t, results, n-auth.MaxTokeninfoCallsPerClient) {
		if r.reason != auth.ReasonCheckerBusy {
			t.Fatalf("a call beyond the /64's slots: %+v, want %s", r.outcome, auth.ReasonCheckerBusy)
		}
	}
	w.awaitTokeninfoCalls(t, auth.MaxTokeninfoCallsPerClient)
	go func() {
		results <- floodResult{outcome: w.try("Bearer ya29."+rand.Text(), "", "[2001:db8:1:3::1]:5000")}
	}()
	w.awaitTokeninfoCalls(t, auth.MaxTokeninfoCallsPerClient+1) // the next /64's call is let through
	release()
	for _, r := range receive(t, results, auth.MaxTokeninfoCallsPerClient+1) {
		if r.reason != auth.ReasonInvalid {
			t.Errorf("a call tokeninfo answered: %+v, want %s", r.outcome, auth.ReasonInvalid)
		}
	}
}

// The address the API found for a request (WithClientAddress) is the one
// its security-code failures count against, not the TCP peer's.
func TestThrottleCountsTheClientAddress(t *testing.T) {
	w := newWorld(t)
	from := func(client, code string) outcome {
		ctx := auth.WithClientAddress(context.Background(), netip.MustParseAddr(client))
		return w.tryWith(ctx, "securityCode "+code, "", "10.0.0.1:4000") // one proxy for all
	}
	for i := range 20 {
		from("203.0.113.1", fmt.Sprintf("guess-%d", i))
	}
	if got := from("203.0.113.1", "guess"); got.reason != auth.ReasonThrottled {
		t.Errorf("the guesser's 21st code: %+v, want %s", got, auth.ReasonThrottled)
	}
	if got := from("203.0.113.2", "guess"); got.reason != auth.ReasonBadCode {
		t.Errorf("another client behind the same proxy: %+v, want %s", got, auth.ReasonBadCode)
	}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "10.0.0.1:4000"
	r.Header.Set("Authorization", "securityCode guess")
	if _, err := w.a.Authenticate(r); auth.FailureReason(err) != auth.ReasonBadCode {
		t.Errorf("the proxy's own address: %v, want %s", err, auth.ReasonBadCode)
	}
}
