package httpapi_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/foldermirror/foldermirror/httpapi"
	"github.com/foldermirror/foldermirror/internal/fmtest"
)

// from sends a GET of the fixture's handler as if from peer (host:port),
// with an X-Forwarded-For header unless xff is "", and a security code.
func (f *fixture) from(peer, xff, code string) int {
	f.t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/folder/v1/files/apollo", nil)
	req.RemoteAddr = peer
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	req.Header.Set("Authorization", "securityCode "+code)
	rec := httptest.NewRecorder()
	f.handler.ServeHTTP(rec, req)
	return rec.Code
}

// guess sends 20 bad security codes as from peer with xff.
func (f *fixture) guess(peer, xff string) {
	f.t.Helper()
	for i := range 20 {
		if status := f.from(peer, xff, fmt.Sprintf("guess-%d", i)); status != http.StatusForbidden {
			f.t.Fatalf("guess %d from %s (X-Forwarded-For %q): %d", i, peer, xff, status)
		}
	}
}

func trustingProxies(proxies ...string) fixtureOptions {
	return fixtureOptions{configure: func(o *httpapi.Options) {
		for _, p := range proxies {
			o.TrustedProxies = append(o.TrustedProxies, netip.MustParsePrefix(p))
		}
	}}
}

// Behind a trusted load balancer, each caller's failed security codes count
// against the address the balancer forwarded: one caller guessing does not
// throttle another.
func TestThrottleBehindATrustedProxy(t *testing.T) {
	f := newFixtureWith(t, trustingProxies("10.0.0.0/8"))
	const lb = "10.0.0.1:40000"
	f.guess(lb, "203.0.113.1")
	for _, tt := range []struct {
		name, peer, xff string
		want            int
	}{
		{"the guesser", lb, "203.0.113.1", http.StatusTooManyRequests},
		{"the guesser through another balancer", "10.0.0.2:40000", "203.0.113.1", http.StatusTooManyRequests},
		{"the guesser, its own forged address to the left", lb, "198.51.100.1, 203.0.113.1", http.StatusTooManyRequests},
		{"another caller behind the balancer", lb, "203.0.113.2", http.StatusOK},
		{"a caller behind two trusted proxies", lb, "203.0.113.3, 10.0.0.9", http.StatusOK},
		{"the balancer itself", lb, "", http.StatusOK},
	} {
		if status := f.from(tt.peer, tt.xff, bobCode); status != tt.want {
			t.Errorf("%s: %d; want %d", tt.name, status, tt.want)
		}
	}
}

// An X-Forwarded-For header from a peer that is not a trusted proxy is
// ignored: a caller cannot escape its throttle by naming another address,
// nor throttle another by naming its address.
func TestForwardedForFromAnUntrustedPeerIgnored(t *testing.T) {
	f := newFixtureWith(t, trustingProxies("10.0.0.0/8"))
	const guesser = "192.0.2.9:40000"
	f.guess(guesser, "203.0.113.50")
	if status := f.from(guesser, "198.51.100.1", bobCode); status != http.StatusTooManyRequests {
		t.Errorf("the guesser, naming another address: %d; want 429", status)
	}
	if status := f.from("203.0.113.50:40000", "", bobCode); status != http.StatusOK {
		t.Errorf("the address the guesser named: %d; want 200", status)
	}
	// No proxy trusted at all: the header is never believed.
	g := newFixture(t)
	g.guess("10.0.0.1:40000", "203.0.113.1")
	if status := g.from("10.0.0.1:40000", "203.0.113.2", bobCode); status != http.StatusTooManyRequests {
		t.Errorf("without trustedProxies, another forwarded address: %d; want 429", status)
	}
}

// A malformed header from a trusted proxy counts against the proxy.
func TestMalformedForwardedForIsThePeer(t *testing.T) {
	f := newFixtureWith(t, trustingProxies("10.0.0.0/8"))
	const lb = "10.0.0.1:40000"
	f.guess(lb, "203.0.113.1, not-an-address")
	if status := f.from(lb, "", bobCode); status != http.StatusTooManyRequests {
		t.Errorf("the proxy itself after malformed headers: %d; want 429", status)
	}
	if status := f.from(lb, "203.0.113.1", bobCode); status != http.StatusOK {
		t.Errorf("the address left of the malformed element: %d; want 200", status)
	}
}

// IPv6 callers are throttled by /64: a host has a /64 to pick addresses
// from, a neighbour has another.
func TestIPv6ThrottledBySlash64(t *testing.T) {
	f := newFixtureWith(t, trustingProxies("2001:db8:ffff::/48"))
	f.guess("[2001:db8:1:2::1]:40000", "")
	for _, tt := range []struct {
		name, peer, xff string
		want            int
	}{
		{"the same address", "[2001:db8:1:2::1]:40000", "", http.StatusTooManyRequests},
		{"another address of the /64", "[2001:db8:1:2:ffff:ffff:ffff:fffe]:40000", "", http.StatusTooManyRequests},
		{"the /64 through a trusted proxy", "[2001:db8:ffff::1]:40000", "2001:db8:1:2::99", http.StatusTooManyRequests},
		{"the next /64", "[2001:db8:1:3::1]:40000", "", http.StatusOK},
		{"the previous /64", "[2001:db8:1:1:ffff::1]:40000", "", http.StatusOK},
		{"another /64 through a trusted proxy", "[2001:db8:ffff::1]:40000", "2001:db8:1:4::1", http.StatusOK},
	} {
		if status := f.from(tt.peer, tt.xff, bobCode); status != tt.want {
			t.Errorf("%s: %d; want %d", tt.name, status, tt.want)
		}
	}
}

// The access log names the client: the address a trusted proxy forwarded.
func TestAccessLogShowsTheClient(t *testing.T) {
	var logs fmtest.LogBuffer
	f := newFixtureWith(t, fixtureOptions{
		configure: func(o *httpapi.Options) { o.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")} },
		logger:    slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	f.from("10.0.0.1:40000", "203.0.113.7", bobCode)
	f.from("[2001:db8:1:2::1]:40000", "", bobCode)
	got := logs.String()
	for _, want := range []string{"client=203.0.113.7", "client=2001:db8:1:2::1"} {
		if !strings.Contains(got, want) {
			t.Errorf("the access log lacks %s:\n%s", want, got)
		}
	}
}
