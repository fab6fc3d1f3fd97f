package foldermirror

import (
	"errors"
	"fmt"
	"time"
)

// Error codes: the one vocabulary every package speaks. httpapi maps each to an
// HTTP status and a Google-style reason in exactly one place.
const (
	EINVALID         = "invalid"         // a malformed parameter or value
	ENOCREDENTIALS   = "nocredentials"   // the caller presented no credentials at all
	EUNAUTHENTICATED = "unauthenticated" // the credentials presented are not acceptable
	EFORBIDDEN       = "forbidden"       // authenticated, but not allowed
	ENOTFOUND        = "notfound"        // unknown, or not visible to the caller
	ERATELIMITED     = "ratelimited"     // the caller is over its budget
	EUNAVAILABLE     = "unavailable"     // a dependency is not ready or not reachable
	EINTERNAL        = "internal"        // anything else
)

// Error is an application error with a code from the vocabulary above and a
// message that is safe to show to the caller. Internal details belong in a
// wrapped error, which is logged but never shown.
type Error struct {
	Code    string
	Message string
	// RetryAfter, when positive, tells the caller when to try again.
	RetryAfter time.Duration
	// Err is the underlying cause, for logs only.
	Err error
}

// Error implements the error interface.
func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and a formatted, caller-safe message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, EINTERNAL for
// any other non-nil error, and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the caller-safe message of err: the message of the first
// *Error in its chain, or a generic text for any other error.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "Internal error."
}
