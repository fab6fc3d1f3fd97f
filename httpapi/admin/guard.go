package admin

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// RequestHeader is the header a state-changing request (POST /sync) may
// carry, with any value, instead of a JSON Content-Type. Either shows that
// the request does not come from a page of another site: a browser sends
// neither to another site without a CORS preflight, which the admin
// listener never approves.
const RequestHeader = "X-Requested-By"

// refuseCrossSite wraps the admin listener's handler so that browsers
// cannot be made to use it: a request whose Host does not name the
// listener (DNS rebinding) is refused with 421, and a state-changing one
// that a cross-site page could send (no JSON Content-Type, no
// RequestHeader) with 403.
func refuseCrossSite(next http.Handler, adminListen string) http.Handler {
	hosts := newHostRule(adminListen)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hosts.allows(r.Host) {
			writeError(w, http.StatusMisdirectedRequest, fmt.Sprintf(
				"Host %q does not name this admin listener (adminListen %s): use its address, localhost or a loopback IP",
				r.Host, adminListen))
			return
		}
		if changesState(r.Method) && !fromScript(r) {
			writeError(w, http.StatusForbidden, fmt.Sprintf(
				"%s %s needs Content-Type: application/json or an %s header; requests a page of another site could send are refused",
				r.Method, r.URL.Path, RequestHeader))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// changesState tells whether a method may change state: all but the safe
// ones.
func changesState(method string) bool {
	return method != http.MethodGet && method != http.MethodHead && method != http.MethodOptions
}

// fromScript tells whether a request carries what a cross-site page cannot
// send without a preflight: a JSON Content-Type or RequestHeader.
func fromScript(r *http.Request) bool {
	if r.Header.Get(RequestHeader) != "" {
		return true
	}
	mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mediaType == "application/json"
}

// hostRule tells which Host headers name the admin listener. A page of
// another site whose name an attacker points at the listener's address
// (DNS rebinding) sends that name as its Host: only names the operator
// chose, and IP literals, which no one can rebind, are allowed:
//
//   - localhost, and loopback IP literals (127.0.0.0/8, ::1);
//   - the host of adminListen, a name or an IP literal;
//   - any IP literal when adminListen binds every address ("", 0.0.0.0,
//     ::), since orchestrators probe a pod by its IP;
//   - no Host at all (HTTP/1.0 health checks): no browser sends that.
//
// The port is not checked: port forwarding (ssh -L, kubectl port-forward)
// changes it legitimately, and rebinding needs a name, not a port.
type hostRule struct {
	name  string     // adminListen's host when a name, lower-case
	ip    netip.Addr // adminListen's host when an IP literal
	anyIP bool       // adminListen binds every address
}

func newHostRule(adminListen string) hostRule {
	host, _, err := net.SplitHostPort(adminListen)
	if err != nil {
		host = adminListen
	}
	if host == "" {
		return hostRule{anyIP: true}
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return hostRule{ip: ip.Unmap(), anyIP: ip.IsUnspecified()}
	}
	return hostRule{name: normalHost(host)}
}

func (h hostRule) allows(hostHeader string) bool {
	if hostHeader == "" {
		return true
	}
	host, _, err := net.SplitHostPort(hostHeader)
	if err != nil { // no port
		host = strings.TrimSuffix(strings.TrimPrefix(hostHeader, "["), "]")
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		ip = ip.Unmap()
		return ip.IsLoopback() || h.anyIP || ip.WithZone("") == h.ip.WithZone("")
	}
	name := normalHost(host)
	return name == "localhost" || name != "" && name == h.name
}

// normalHost lower-cases a host name and drops the dot that may end a fully
// qualified one.
func normalHost(host string) string {
	return strings.TrimSuffix(strings.ToLower(host), ".")
}
