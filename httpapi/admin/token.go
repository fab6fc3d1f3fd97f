package admin

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// ChallengeParam is the query parameter of GET /healthz by which a client
// asks the daemon to prove that it holds the admin token (see Proof),
// before it sends the token: a process of another user may have bound
// adminListen while the daemon was down.
const ChallengeParam = "challenge"

// proofLabel is what a proof is of, so that it serves no other purpose.
const proofLabel = "foldermirror admin listener holds the token\x00"

// requireToken wraps the admin listener's handler so that, when token is
// not "", a request needs "Authorization: Bearer TOKEN", else 401. The
// probes, GET (and HEAD) /healthz and /readyz, stay open: orchestrators
// call them without credentials, and they tell nothing worth hiding.
func requireToken(next http.Handler, token string) http.Handler {
	if token == "" {
		return next
	}
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isProbe(r) || bearerMatches(r.Header.Get("Authorization"), want) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="foldermirror admin"`)
		writeError(w, http.StatusUnauthorized,
			"this admin listener needs Authorization: Bearer and the token in the file adminTokenFile of the daemon's configuration")
	})
}

// authorized tells whether r carries token as its Bearer credential, or no
// token is required ("").
func authorized(r *http.Request, token string) bool {
	return token == "" || bearerMatches(r.Header.Get("Authorization"), sha256.Sum256([]byte(token)))
}

// Proof returns the proof, for challenge, that a daemon holds token: the
// hex HMAC-SHA256, keyed by token, of a fixed label and challenge. A client
// that sends a fresh random challenge and finds this proof in the answer
// talks to a process that holds the token, or can ask one that does.
func Proof(token, challenge string) string {
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write([]byte(proofLabel + challenge))
	return hex.EncodeToString(mac.Sum(nil))
}

// fromThisHost tells whether r comes from the daemon's own host: from a
// loopback address, or from the address it reached. Only such a client
// gets a proof: a proof is something to test guesses of the token against,
// and foldermirror sync and healthcheck ask from the daemon's host.
func fromThisHost(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return false
	}
	reached, errL := netip.ParseAddrPort(local.String())
	from, errR := netip.ParseAddrPort(r.RemoteAddr)
	if errL != nil || errR != nil {
		return false
	}
	ip := from.Addr().Unmap().WithZone("")
	return ip.IsLoopback() || ip == reached.Addr().Unmap().WithZone("")
}

// isProbe tells whether r asks for health or readiness.
func isProbe(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
		(r.URL.Path == "/healthz" || r.URL.Path == "/readyz")
}

// bearerMatches tells whether an Authorization header carries the token
// whose SHA-256 is want. Digests of equal length are compared in constant
// time, so that the answer's timing tells nothing of the token.
func bearerMatches(header string, want [sha256.Size]byte) bool {
	scheme, credential, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(credential)))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}
