package googlefake

import (
	"encoding/json"
	"net/http"
)

// apiError is a Drive or Directory API error, written as Google's JSON error body
// {"error":{"code":C,"message":M,"errors":[{...}],"status":S}}.
type apiError struct {
	Code    int         `json:"code"`
	Message string      `json:"message"`
	Errors  []errorItem `json:"errors"`
	Status  string      `json:"status,omitempty"`
}

type errorItem struct {
	Message      string `json:"message"`
	Domain       string `json:"domain"`
	Reason       string `json:"reason"`
	Location     string `json:"location,omitempty"`
	LocationType string `json:"locationType,omitempty"`
}

// newAPIError returns an error with one item; location, when set, names the
// request parameter at fault.
func newAPIError(code int, reason, message, location string) *apiError {
	item := errorItem{Message: message, Domain: "global", Reason: reason}
	if location != "" {
		item.Location, item.LocationType = location, "parameter"
	}
	return &apiError{Code: code, Message: message, Errors: []errorItem{item}}
}

// invalidParam is Drive's answer to a bad parameter value.
func invalidParam(location string) *apiError {
	return newAPIError(http.StatusBadRequest, "invalid", "Invalid Value", location)
}

func fileNotFound(id string) *apiError {
	return newAPIError(http.StatusNotFound, "notFound", "File not found: "+id+".", "fileId")
}

func driveNotFound(id string) *apiError {
	return newAPIError(http.StatusNotFound, "notFound", "Shared drive not found: "+id+".", "driveId")
}

// errUnauthenticated is Google's answer to a missing, unknown or expired access token.
var errUnauthenticated = &apiError{
	Code:    http.StatusUnauthorized,
	Message: "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.",
	Errors: []errorItem{{
		Message: "Invalid Credentials", Domain: "global", Reason: "authError",
		Location: "Authorization", LocationType: "header",
	}},
	Status: "UNAUTHENTICATED",
}

// errInsufficientScopes answers a token granted without any scope of the
// API it calls.
var errInsufficientScopes = &apiError{
	Code:    http.StatusForbidden,
	Message: "Request had insufficient authentication scopes.",
	Errors: []errorItem{{
		Message: "Insufficient Permission", Domain: "global", Reason: "insufficientPermissions",
	}},
	Status: "PERMISSION_DENIED",
}

// errNotAuthorized is the Directory API's answer to a user who does not
// administer the domain a request reaches.
var errNotAuthorized = newAPIError(http.StatusForbidden, "forbidden", "Not Authorized to access this resource/api", "")

// errBadRequest is the Directory API's answer to a list naming neither a
// domain nor a customer.
var errBadRequest = newAPIError(http.StatusBadRequest, "badRequest", "Bad Request", "")

// resourceNotFound is the Directory API's answer to an unknown key; param
// names the path parameter ("groupKey").
func resourceNotFound(param string) *apiError {
	return newAPIError(http.StatusNotFound, "notFound", "Resource Not Found: "+param, "")
}

func writeAPIError(w http.ResponseWriter, e *apiError) {
	if e.Code == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="https://accounts.google.com/", error="invalid_token"`)
	}
	writeJSON(w, e.Code, map[string]any{"error": e})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}
