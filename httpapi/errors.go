package httpapi

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/gin-gonic/gin"
)

// status is how an error code shows on the wire.
type status struct {
	code   int
	reason string
}

// statuses is the one place error codes become HTTP statuses and reasons.
var statuses = map[string]status{
	fm.EINVALID:         {http.StatusBadRequest, "badRequest"},
	fm.ENOCREDENTIALS:   {http.StatusUnauthorized, "required"},
	fm.EUNAUTHENTICATED: {http.StatusUnauthorized, "authError"},
	fm.EFORBIDDEN:       {http.StatusForbidden, "forbidden"},
	fm.ENOTFOUND:        {http.StatusNotFound, "notFound"},
	fm.ERATELIMITED:     {http.StatusTooManyRequests, "rateLimitExceeded"},
	fm.EUNAVAILABLE:     {http.StatusServiceUnavailable, "backendError"},
	fm.EINTERNAL:        {http.StatusInternalServerError, "internalError"},
}

type errorItem struct {
	Domain  string `json:"domain"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

type errorBody struct {
	Error struct {
		Errors  []errorItem `json:"errors"`
		Code    int         `json:"code"`
		Message string      `json:"message"`
	} `json:"error"`
}

// writeError answers a request with err in Google's error shape. Internal
// errors are logged with their details; the caller gets a generic message.
func (s *Server) writeError(c *gin.Context, err error) {
	code := fm.ErrorCode(err)
	st, ok := statuses[code]
	if !ok {
		st = statuses[fm.EINTERNAL]
	}
	msg := fm.ErrorMessage(err)
	if st.code == http.StatusInternalServerError {
		s.logger.Error("request failed", "method", c.Request.Method, "path", c.Request.URL.Path, "err", err)
		msg = "Internal error."
	}
	var e *fm.Error
	if errors.As(err, &e) && e.RetryAfter > 0 {
		c.Header("Retry-After", strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
	}
	switch code {
	case fm.ENOCREDENTIALS:
		c.Header("WWW-Authenticate", `Bearer realm="foldermirror"`)
	case fm.EUNAUTHENTICATED:
		c.Header("WWW-Authenticate", `Bearer realm="foldermirror", error="invalid_token"`)
	}
	var body errorBody
	body.Error.Errors = []errorItem{{Domain: "global", Reason: st.reason, Message: msg}}
	body.Error.Code = st.code
	body.Error.Message = msg
	c.AbortWithStatusJSON(st.code, body)
}

// unavailable is the error for a library that has no synced tree yet.
func unavailable(format string, args ...any) error {
	e := fm.Errorf(fm.EUNAVAILABLE, format, args...)
	e.RetryAfter = 30 * time.Second
	return e
}
