package demo

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// RenamePath is where Control renames a folder.
const RenamePath = "/demo/rename"

// SharedDrivePath is where Control creates a shared drive and adds the
// storage account to it.
const SharedDrivePath = "/demo/shared-drives"

// RequestHeader is the header, with any value, that a POST to the
// controls must carry: a page of another site cannot send it without a
// CORS preflight, which the controls never approve, so it cannot make an
// operator's browser rename folders.
const RequestHeader = "X-Requested-By"

// Control returns the handler of the demo's controls over its Drive, for
// a loopback listener of the demo alone: POST RenamePath?folder=ID&name=NAME
// with RequestHeader renames the folder (or shared drive) ID in the fake, as
// its owner would in Drive, and answers 204; an unknown folder is 404, a
// request without both parameters 400, another method 405. POST
// SharedDrivePath?name=NAME creates a shared drive of a few folders and adds
// the storage account to it (AddTeamDrive), and answers 201 with the
// drive's ID, the ID of the library discovery makes of it. A POST without
// RequestHeader is 403, and a request whose Host is not localhost or a
// loopback IP (a name rebound to loopback) 421.
func (w *World) Control() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+RenamePath, func(rw http.ResponseWriter, r *http.Request) {
		id, name := r.URL.Query().Get("folder"), r.URL.Query().Get("name")
		if id == "" || name == "" {
			http.Error(rw, "expected ?folder=ID&name=NAME", http.StatusBadRequest)
			return
		}
		if !w.rename(id, name) {
			http.Error(rw, fmt.Sprintf("no folder %q in the demo's Drive", id), http.StatusNotFound)
			return
		}
		rw.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST "+SharedDrivePath, func(rw http.ResponseWriter, r *http.Request) {
		name := r.URL.Query().Get("name")
		if name == "" {
			http.Error(rw, "expected ?name=NAME", http.StatusBadRequest)
			return
		}
		rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
		rw.WriteHeader(http.StatusCreated)
		fmt.Fprintln(rw, w.AddTeamDrive(name))
	})
	return fromThisUser(mux)
}

// SharedDriveURL returns the URL, at the base URL of a listener serving
// Control, that creates a shared drive named name.
func SharedDriveURL(base, name string) string {
	return base + SharedDrivePath + "?" + url.Values{"name": {name}}.Encode()
}

// fromThisUser refuses what a page of another site could send through an
// operator's browser: a request whose Host is not loopback, and a POST
// without RequestHeader.
func fromThisUser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		switch {
		case !loopbackHost(r.Host):
			http.Error(rw, fmt.Sprintf("Host %q is not localhost or a loopback IP", r.Host), http.StatusMisdirectedRequest)
		case r.Method == http.MethodPost && r.Header.Get(RequestHeader) == "":
			http.Error(rw, "a POST needs an "+RequestHeader+" header (any value); requests a page of another site could send are refused",
				http.StatusForbidden)
		default:
			next.ServeHTTP(rw, r)
		}
	})
}

// loopbackHost tells whether a Host header names localhost or a loopback
// IP, with or without a port.
func loopbackHost(hostHeader string) bool {
	host, _, err := net.SplitHostPort(hostHeader)
	if err != nil { // no port
		host = strings.TrimSuffix(strings.TrimPrefix(hostHeader, "["), "]")
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.Unmap().IsLoopback()
	}
	return strings.EqualFold(strings.TrimSuffix(host, "."), "localhost")
}

// RenameURL returns the URL, at the base URL of a listener serving Control,
// that renames folder id to name.
func RenameURL(base, id, name string) string {
	return base + RenamePath + "?" + url.Values{"folder": {id}, "name": {name}}.Encode()
}

// rename renames the file id in the fake, reporting whether it exists: the
// fake panics, its lock released, for an ID it does not know.
func (w *World) rename(id, name string) (known bool) {
	defer func() {
		if recover() != nil {
			known = false
		}
	}()
	w.Fake.Rename(id, name)
	return true
}
