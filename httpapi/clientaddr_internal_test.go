package httpapi

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
)

// The client's address: the peer's, unless the peer is a trusted proxy;
// then the right-most X-Forwarded-For address that is not a trusted proxy,
// the left-most if all are, the peer's if the header is absent or
// malformed.
func TestClientAddr(t *testing.T) {
	trusted := []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("192.168.1.7/32"),
		netip.MustParsePrefix("2001:db8:ff::/48"),
	}
	tests := []struct {
		name string
		peer string
		xff  []string // X-Forwarded-For header lines; nil for none
		want string
	}{
		{"untrusted peer, no header", "203.0.113.1:4000", nil, "203.0.113.1"},
		{"untrusted peer's header ignored", "203.0.113.1:4000", []string{"198.51.100.7"}, "203.0.113.1"},
		{"trusted peer, no header", "10.0.0.1:4000", nil, "10.0.0.1"},
		{"trusted peer, one address", "10.0.0.1:4000", []string{"198.51.100.7"}, "198.51.100.7"},
		{"the right-most untrusted", "10.0.0.1:4000", []string{"1.1.1.1, 198.51.100.7, 10.0.0.2, 192.168.1.7"}, "198.51.100.7"},
		{"forged addresses left of it", "10.0.0.1:4000", []string{"10.9.9.9, 198.51.100.7"}, "198.51.100.7"},
		{"all trusted: the left-most", "10.0.0.1:4000", []string{"10.0.0.3,10.0.0.2"}, "10.0.0.3"},
		{"several header lines", "10.0.0.1:4000", []string{"198.51.100.7", "10.0.0.2"}, "198.51.100.7"},
		{"spaces", "10.0.0.1:4000", []string{"  198.51.100.7 ,  10.0.0.2  "}, "198.51.100.7"},
		{"not an address", "10.0.0.1:4000", []string{"garbage"}, "10.0.0.1"},
		{"not an address on the right", "10.0.0.1:4000", []string{"198.51.100.7, garbage"}, "10.0.0.1"},
		{"not an address behind a trusted one", "10.0.0.1:4000", []string{"garbage, 10.0.0.2"}, "10.0.0.1"},
		{"an empty header", "10.0.0.1:4000", []string{""}, "10.0.0.1"},
		{"an empty element", "10.0.0.1:4000", []string{"198.51.100.7,"}, "10.0.0.1"},
		{"an address with a port", "10.0.0.1:4000", []string{"198.51.100.7:5555"}, "10.0.0.1"},
		{"an IPv6 address in brackets", "10.0.0.1:4000", []string{"[2001:db8::1]"}, "10.0.0.1"},
		{"IPv6", "10.0.0.1:4000", []string{"2001:DB8::1"}, "2001:db8::1"},
		{"IPv6 with a zone", "10.0.0.1:4000", []string{"fe80::1%eth0"}, "fe80::1"},
		{"IPv4-mapped", "10.0.0.1:4000", []string{"::ffff:198.51.100.7"}, "198.51.100.7"},
		{"an IPv6 proxy", "[2001:db8:ff::5]:4000", []string{"198.51.100.7"}, "198.51.100.7"},
		{"an IPv4-mapped proxy", "[::ffff:10.0.0.1]:4000", []string{"198.51.100.7"}, "198.51.100.7"},
		{"a single trusted address", "192.168.1.7:4000", []string{"198.51.100.7"}, "198.51.100.7"},
		{"its neighbour is not trusted", "192.168.1.8:4000", []string{"198.51.100.7"}, "192.168.1.8"},
		{"an IPv6 peer", "[2001:db8:1::1]:4000", []string{"198.51.100.7"}, "2001:db8:1::1"},
		{"a peer that is no address", "pipe", nil, "invalid IP"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = tt.peer
			for _, v := range tt.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := clientAddr(r, trusted).String(); got != tt.want {
				t.Errorf("client address %s; want %s", got, tt.want)
			}
		})
	}
	// With no proxy trusted, the header is never read.
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "10.0.0.1:4000"
	r.Header.Set("X-Forwarded-For", "198.51.100.7")
	if got := clientAddr(r, nil).String(); got != "10.0.0.1" {
		t.Errorf("no trusted proxies: %s", got)
	}
}
