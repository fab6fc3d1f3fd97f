package auth

import (
	"context"
	"net/netip"
)

// clientAddressKey keeps a request's client address in its context.
type clientAddressKey struct{}

// WithClientAddress returns ctx carrying the address of the request's
// client, as the API found it (the TCP peer's, or the one trusted proxies
// forwarded): its security-code failures and tokeninfo calls count against
// that address.
func WithClientAddress(ctx context.Context, addr netip.Addr) context.Context {
	return context.WithValue(ctx, clientAddressKey{}, addr)
}

// throttleKey names the address a client's failures count against: an IPv4
// address itself, an IPv6 one by its /64.
func throttleKey(addr netip.Addr) string {
	addr = addr.Unmap()
	if !addr.Is6() {
		return addr.String()
	}
	return netip.PrefixFrom(addr.WithZone(""), 64).Masked().String()
}
