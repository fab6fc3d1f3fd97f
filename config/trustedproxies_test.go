package config

import (
	"net/netip"
	"reflect"
	"testing"
)

// trustedProxies takes CIDRs and single addresses, each checked, named by
// its index when it is not one.
func TestTrustedProxies(t *testing.T) {
	c := mustParse(t, "trustedProxies: ['10.0.0.0/8', '192.168.1.7', '2001:DB8:ff::/48', '::1', '10.1.2.3/16', '::ffff:172.16.0.0/108']\n"+
		"domains: [{name: example.com}]\n")
	want := []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("192.168.1.7/32"),
		netip.MustParsePrefix("2001:db8:ff::/48"),
		netip.MustParsePrefix("::1/128"),
		netip.MustParsePrefix("10.1.0.0/16"),
		netip.MustParsePrefix("172.16.0.0/12"),
	}
	if got := c.TrustedProxyPrefixes(); !reflect.DeepEqual(got, want) {
		t.Errorf("TrustedProxyPrefixes() = %v; want %v", got, want)
	}
	if got := mustParse(t, "domains: [{name: example.com}]\n").TrustedProxyPrefixes(); len(got) != 0 {
		t.Errorf("no trustedProxies: %v", got)
	}
}

func TestTrustedProxiesRefused(t *testing.T) {
	const domain = "domains: [{name: example.com}]\n"
	tests := []struct {
		name, src, key string
		want           []string
	}{
		{"a name", "trustedProxies: [lb.internal]\n", "trustedProxies[0]",
			[]string{`"lb.internal" is not a CIDR nor an IP address; expected one such as 10.0.0.0/8, 2001:db8::/32 or 10.1.2.3`}},
		{"too many bits", "trustedProxies: [10.0.0.0/8, 10.0.0.0/33]\n", "trustedProxies[1]", []string{`"10.0.0.0/33" is not a CIDR`}},
		{"a zone", "trustedProxies: ['fe80::1%eth0']\n", "trustedProxies[0]", []string{"is not a CIDR nor an IP address"}},
		{"an address and port", "trustedProxies: ['10.0.0.1:80']\n", "trustedProxies[0]", []string{"is not a CIDR nor an IP address"}},
		{"empty", "trustedProxies: ['']\n", "trustedProxies[0]", []string{`"" is not a CIDR`}},
		{"every IPv4 address", "trustedProxies: [0.0.0.0/0]\n", "trustedProxies[0]",
			[]string{`"0.0.0.0/0" trusts every address: any caller could choose its own address`}},
		{"every IPv6 address", "trustedProxies: ['::/0']\n", "trustedProxies[0]", []string{"trusts every address"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(t, tt.src+domain)
			wantProblem(t, err, tt.key, tt.want...)
		})
	}
}
