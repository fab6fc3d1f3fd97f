package admin

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

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
