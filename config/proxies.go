package config

import (
	"fmt"
	"net/netip"
	"strings"
)

// TrustedProxyPrefixes returns TrustedProxies as address ranges: a single
// address is a /32 or a /128, an IPv4-mapped range its IPv4 one; each is
// masked. A configuration Parse returned holds valid entries only.
func (c *Config) TrustedProxyPrefixes() []netip.Prefix {
	prefixes := make([]netip.Prefix, 0, len(c.TrustedProxies))
	for _, p := range c.TrustedProxies {
		if prefix, err := parseProxy(p); err == nil {
			prefixes = append(prefixes, prefix)
		}
	}
	return prefixes
}

// parseProxy parses a trustedProxies entry: a CIDR or an IP address.
func parseProxy(s string) (netip.Prefix, error) {
	if !strings.Contains(s, "/") {
		addr, err := netip.ParseAddr(s)
		if err != nil || addr.Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("not an address: %q", s)
		}
		addr = addr.Unmap()
		return netip.PrefixFrom(addr, addr.BitLen()), nil
	}
	prefix, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	if addr := prefix.Addr(); addr.Is4In6() && prefix.Bits() >= 96 {
		prefix = netip.PrefixFrom(addr.Unmap(), prefix.Bits()-96)
	}
	return prefix.Masked(), nil
}

// validateProxy adds a problem unless s is a CIDR or an IP address that does
// not trust every address.
func validateProxy(s, key string, ck *checker) {
	prefix, err := parseProxy(s)
	switch {
	case err != nil:
		ck.add(key, "%q is not a CIDR nor an IP address; expected one such as 10.0.0.0/8, 2001:db8::/32 or 10.1.2.3 (a single proxy)", s)
	case prefix.Bits() == 0:
		ck.add(key, "%q trusts every address: any caller could choose its own address (X-Forwarded-For) and escape its throttles; expected the addresses of your reverse proxies only, such as 10.0.0.0/8", s)
	}
}
