// Package httpapi serves the folder, permission and configuration-flag API
// from the index, to each caller what Drive lets it see.
package httpapi

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/httpapi/auth"
	"github.com/foldermirror/foldermirror/internal/graceful"
	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
)

// Authenticator tells who a request's caller is.
type Authenticator interface {
	Authenticate(r *http.Request) (*auth.Identity, error)
}

// Server is the API server.
type Server struct {
	libs    *libraries
	domains []Domain
	index   fm.IndexReader
	auth    Authenticator
	logger  *slog.Logger
	metrics *Metrics
	budgets *budgets
	slots   *answerSlots
	streams *streamLimits
	answers *answerCache
	// trustedProxies are the peers whose X-Forwarded-For names the client.
	trustedProxies []netip.Prefix
	// push receives Drive's notifications on pushPath, if not nil.
	push     http.Handler
	pushPath string
	engine   *gin.Engine
	http     *http.Server
}

// Options say what a Server serves, and tune it.
type Options struct {
	// Libraries are the libraries served, each of one of Domains; the
	// server follows the set's changes. Nil: none.
	Libraries *fm.LibrarySet
	// Domains are the Workspace domains served.
	Domains []Domain
	// TrustedProxies are the reverse proxies whose X-Forwarded-For header
	// names the client. Addresses are compared unmapped: an IPv4 range is
	// an IPv4 prefix.
	TrustedProxies []netip.Prefix
	// CallerRequestsPerSecond is each caller's sustained request budget,
	// CallerBurst how many requests it may make at once; over it, requests
	// are answered 429 with Retry-After.
	CallerRequestsPerSecond float64
	CallerBurst             int
	// Logger is slog.Default() by default.
	Logger *slog.Logger
	// Metrics records requests; unregistered ones by default.
	Metrics *Metrics
	// ReadHeaderTimeout bounds the reading of a request's header; 10 s by
	// default.
	ReadHeaderTimeout time.Duration
	// CallerConcurrent bounds the requests of one caller being answered at
	// once (32 by default), AnswersInFlight those of all callers (1024):
	// beyond, 429 and 503 with Retry-After. A request is being answered
	// until its answer has left the connection's send queue.
	CallerConcurrent, AnswersInFlight int
	// StreamChunkTimeout is the time a client has to take each chunk of an
	// answer (30 s by default), and its connection's send queue to empty
	// at the end; StreamDeadline the time to take a streamed answer whole
	// (10 min).
	StreamChunkTimeout, StreamDeadline time.Duration
	// Push, when not nil, receives Drive's push notifications on PushPath
	// (push.address's path): every method there reaches it (it answers
	// POST, and 405 to the others), with the API's recovery, metrics and
	// logging but no caller authentication and no caller budget, for Drive
	// sends no credentials. PushPath begins with "/", is none of the API's
	// paths, and holds no ':' or '*' (the router's wildcards); config.Parse
	// refuses a push.address otherwise, and New panics.
	Push     http.Handler
	PushPath string
}

// Server limits. Streams extend their own write deadline as they go.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 60 * time.Second
	idleTimeout       = 2 * time.Minute
	maxHeaderBytes    = 64 << 10
)

// answerCacheBytes bounds the encoded answers of operation 4 kept.
const answerCacheBytes = 16 << 20

func init() { gin.SetMode(gin.ReleaseMode) }

// New returns a server of the libraries of opts, read from idx, to the
// callers authn authenticates.
func New(idx fm.IndexReader, authn Authenticator, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(prometheus.NewRegistry())
	}
	if opts.ReadHeaderTimeout == 0 {
		opts.ReadHeaderTimeout = readHeaderTimeout
	}
	opts.CallerConcurrent = cmp.Or(opts.CallerConcurrent, callerConcurrent)
	opts.AnswersInFlight = cmp.Or(opts.AnswersInFlight, answersInFlight)
	opts.StreamChunkTimeout = cmp.Or(opts.StreamChunkTimeout, streamChunkTimeout)
	opts.StreamDeadline = cmp.Or(opts.StreamDeadline, streamDeadline)
	if opts.Libraries == nil {
		opts.Libraries = fm.NewLibrarySet(nil)
	}
	s := &Server{libs: newLibraries(opts.Libraries, idx), domains: slices.Clone(opts.Domains), index: idx, auth: authn, logger: opts.Logger, metrics: opts.Metrics,
		budgets: newBudgets(opts.CallerRequestsPerSecond, opts.CallerBurst),
		slots: &answerSlots{perCaller: opts.CallerConcurrent, total: opts.AnswersInFlight, drainTimeout: opts.StreamChunkTimeout,
			inFlight: opts.Metrics.answersInFlight},
		streams: &streamLimits{chunkTimeout: opts.StreamChunkTimeout, deadline: opts.StreamDeadline,
			active: opts.Metrics.streams, cut: opts.Metrics.streamsCut},
		answers: newAnswerCache(answerCacheBytes), trustedProxies: opts.TrustedProxies,
		push: opts.Push, pushPath: opts.PushPath}
	if s.push != nil && (!strings.HasPrefix(s.pushPath, "/") || strings.ContainsAny(s.pushPath, ":*")) {
		panic(fmt.Sprintf("httpapi: push path %q is not a literal absolute path", s.pushPath))
	}
	s.engine = s.routes()
	s.http = &http.Server{
		Handler:           s.engine,
		ReadHeaderTimeout: opts.ReadHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ConnContext:       connContext,
		ConnState:         s.slots.connState,
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
	}
	graceful.Track(s.http)
	return s
}

func (s *Server) routes() *gin.Engine {
	r := gin.New()
	_ = r.SetTrustedProxies(nil) // gin's ClientIP unused: findClient finds the client
	// Unknown paths answer 404 in the API's shape, not a redirect.
	r.RedirectTrailingSlash, r.RedirectFixedPath = false, false
	// observe and logRequests wrap recoverPanics, so that they see the 500
	// it answers for a panicking handler; a response cut short reaches them
	// as the http.ErrAbortHandler panic going by.
	r.Use(s.findClient(), s.metrics.observe(), s.logRequests(), s.recoverPanics(), s.boundQuery())
	r.NoRoute(func(c *gin.Context) { s.writeError(c, fm.Errorf(fm.ENOTFOUND, "Not found.")) })
	// Another method on an API path: 405 with Allow (set by gin), in the
	// API's shape (Google's reason for it).
	r.HandleMethodNotAllowed = true
	r.NoMethod(func(c *gin.Context) {
		msg := fmt.Sprintf("Method %s is not allowed here; allowed: %s.", c.Request.Method, c.Writer.Header().Get("Allow"))
		var body errorBody
		body.Error.Errors = []errorItem{{Domain: "global", Reason: "httpMethodNotAllowed", Message: msg}}
		body.Error.Code, body.Error.Message = http.StatusMethodNotAllowed, msg
		c.AbortWithStatusJSON(http.StatusMethodNotAllowed, body)
	})
	if s.push != nil {
		r.Any(s.pushPath, gin.WrapH(s.push))
	}
	// The OpenAPI document, like push, is outside the authenticated group,
	// with the API's recovery, metrics, logging and bound on the query.
	r.GET("/openapi.json", s.getOpenAPI)
	api := r.Group("/", s.authenticate())
	api.GET("/domain/v1beta1/configurationFlags", s.getConfigurationFlags)
	api.GET("/folder/v1/libraries/:libraryId/folders/children", s.listChildrenDeprecated)
	api.GET("/folder/v1/libraries/:libraryId/folders", s.listLibraryFolders)
	api.GET("/folder/v1/folders/:folderId/permissions", s.getPermissions)
	api.GET("/folder/v1/files/:folderId", s.getFolder)
	api.GET("/folder/v1/files/:folderId/children", s.listChildren)
	return r
}

// Handler returns the API's HTTP handler.
func (s *Server) Handler() http.Handler { return s.engine }

// Serve serves the API on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	if err := s.http.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}

// Shutdown stops accepting requests and waits for those in flight; a
// connection that has not sent a whole request is closed at once.
func (s *Server) Shutdown(ctx context.Context) error { return s.http.Shutdown(ctx) }

const callerKey = "foldermirror.caller"

// authenticate admits authenticated callers only.
func (s *Server) authenticate() gin.HandlerFunc {
	return func(c *gin.Context) {
		id, err := s.auth.Authenticate(c.Request)
		if err == nil && id.CodeDomain != "" {
			err = checkCodeDomain(c.Query("domain"), id.CodeDomain)
		}
		if err != nil {
			s.countAuthFailure(err)
			s.writeError(c, err)
			return
		}
		key := budgetKey(id)
		if wait, ok := s.budgets.take(key); !ok {
			s.writeError(c, &fm.Error{Code: fm.ERATELIMITED, RetryAfter: wait,
				Message: "Too many requests from this caller; try again after Retry-After seconds."})
			return
		}
		sl, err := s.slots.take(key, requestConn(c.Request))
		if err != nil {
			s.writeError(c, err)
			return
		}
		answered := false
		defer func() {
			if !answered {
				sl.release() // the handler panicked: the connection goes
			}
		}()
		c.Set(callerKey, newCaller(id))
		c.Next()
		answered = true
		s.slots.settle(c, sl)
	}
}

func callerOf(c *gin.Context) *caller { return c.MustGet(callerKey).(*caller) }

// recoverPanics answers 500 for a panicking handler, or cuts the connection
// when the response has started (so that no truncated body looks complete).
func (s *Server) recoverPanics() gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler { //nolint:errorlint // a panic's value, which net/http compares so too
				panic(v)
			}
			err := fmt.Errorf("panic: %v\n%s", v, debug.Stack())
			if c.Writer.Written() {
				s.logger.Error("request failed mid-response", "path", c.Request.URL.Path, "err", err)
				panic(http.ErrAbortHandler)
			}
			s.writeError(c, err)
		}()
		c.Next()
	}
}

// logRequests logs each request, also one cut short (aborted), with its
// client's address and the way its caller came in.
func (s *Server) logRequests() gin.HandlerFunc {
	return func(c *gin.Context) {
		if !s.logger.Enabled(c.Request.Context(), slog.LevelDebug) {
			c.Next() // nothing to log: no attributes built
			return
		}
		start, completed := time.Now(), false
		defer func() {
			method := ""
			if v, ok := c.Get(callerKey); ok {
				method = v.(*caller).Method
			}
			s.logger.Debug("request", "client", clientAddr(c.Request, s.trustedProxies), "method", c.Request.Method, "route", c.FullPath(), "auth", method,
				"status", c.Writer.Status(), "bytes", c.Writer.Size(), "duration", time.Since(start), "aborted", !completed)
		}()
		c.Next()
		completed = true
	}
}

// checkCodeDomain: a security code speaks for its own domain only.
func checkCodeDomain(asked, codeDomain string) error {
	if asked != "" && !strings.EqualFold(asked, codeDomain) {
		return fm.Errorf(fm.EFORBIDDEN, "A security code of %s cannot act for %s.", codeDomain, asked)
	}
	return nil
}

// countAuthFailure records why credentials were missing or refused.
func (s *Server) countAuthFailure(err error) {
	reason := auth.FailureReason(err)
	if reason == "" {
		return // not a refusal: a domain mismatch, an internal error
	}
	s.metrics.authFailures.WithLabelValues(reason).Inc()
}

// budgetKey names whose budget a request spends: its user, or the domain of
// an admin security code.
func budgetKey(id *auth.Identity) string {
	if id.Admin {
		return "admin:" + id.CodeDomain
	}
	return id.Email
}

// maxQueryBytes bounds a request's query string: every valid query is far
// shorter.
const maxQueryBytes = 8 << 10

// boundQuery refuses query strings too long to be meant.
func (s *Server) boundQuery() gin.HandlerFunc {
	return func(c *gin.Context) {
		if len(c.Request.URL.RawQuery) > maxQueryBytes {
			s.writeError(c, fm.Errorf(fm.EINVALID, "The query string is longer than %d bytes.", maxQueryBytes))
			return
		}
		c.Next()
	}
}
