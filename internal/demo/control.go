package demo

import (
	"fmt"
	"net/http"
	"net/url"
)

// RenamePath is where Control renames a folder.
const RenamePath = "/demo/rename"

// Control returns the handler of the demo's controls over its Drive, for
// a loopback listener of the demo alone: POST RenamePath?folder=ID&name=NAME
// renames the folder (or shared drive) ID in the fake, as its owner would in
// Drive, and answers 204; an unknown folder is 404, a request without both
// parameters 400, another method 405.
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
	return mux
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
