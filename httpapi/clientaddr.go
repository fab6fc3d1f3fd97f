package httpapi

import (
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"

	"github.com/foldermirror/foldermirror/httpapi/auth"
	"github.com/gin-gonic/gin"
)

// findClient hands auth the client's address, for its throttles, through
// the request's context when trusted proxies forwarded it; otherwise auth
// counts the TCP peer's, and the request costs nothing more.
func (s *Server) findClient() gin.HandlerFunc {
	return func(c *gin.Context) {
		if addr := clientAddr(c.Request, s.trustedProxies); addr != peerOf(c.Request) {
			c.Request = c.Request.WithContext(auth.WithClientAddress(c.Request.Context(), addr))
		}
		c.Next()
	}
}

// clientAddr returns the address of r's client: the TCP peer's, unless the
// peer is in trusted; then the right-most address of X-Forwarded-For that is
// not itself in trusted, or the left-most if all are. The addresses are read
// from the right, each proxy having appended the one it saw: an element that
// is not an IP address, met before the answer, makes the header malformed,
// and the answer the peer; elements left of the answer, which the client
// may have forged, are never read. IPv4-mapped addresses are unmapped and
// zones dropped. The zero Addr when the peer's is not an address.
func clientAddr(r *http.Request, trusted []netip.Prefix) netip.Addr {
	peer := peerOf(r)
	if !peer.IsValid() || !inAny(peer, trusted) {
		return peer
	}
	values := r.Header.Values("X-Forwarded-For")
	if len(values) == 0 {
		return peer
	}
	hops := strings.Split(strings.Join(values, ","), ",")
	for i, hop := range slices.Backward(hops) {
		addr := parseAddr(strings.TrimSpace(hop))
		switch {
		case !addr.IsValid():
			return peer
		case i == 0 || !inAny(addr, trusted):
			return addr
		}
	}
	return peer
}

// hostOf returns the host of a host:port, or hostPort itself.
// peerOf returns the address of r's TCP peer, as clientAddr gives it.
func peerOf(r *http.Request) netip.Addr { return parseAddr(hostOf(r.RemoteAddr)) }

func hostOf(hostPort string) string {
	host, _, err := net.SplitHostPort(hostPort)
	if err != nil {
		return hostPort
	}
	return host
}

// parseAddr parses an IP address, unmapped and without its zone; the zero
// Addr if s is none.
func parseAddr(s string) netip.Addr {
	addr, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}
	}
	return addr.Unmap().WithZone("")
}

func inAny(addr netip.Addr, prefixes []netip.Prefix) bool {
	for _, p := range prefixes {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}
