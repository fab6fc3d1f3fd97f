// Package admin serves the daemon's admin listener: resyncs with their
// progress streamed, status, Prometheus metrics, health and readiness. With
// a token (adminTokenFile, required off loopback), every request but the
// probes must carry it (see requireToken), the probes tell their details
// only to a request that carries it, and /healthz proves to a client of
// this host that the daemon holds it (see Proof). It refuses what a
// browser could be made to send it from another site (see refuseCrossSite).
//
// Client asks it, for foldermirror sync and healthcheck: both read and
// write the answers of answers.go.
package admin

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/internal/graceful"
	"github.com/foldermirror/foldermirror/push"
	"github.com/foldermirror/foldermirror/schedule"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Scheduler is what the admin listener needs of the scheduler.
type Scheduler interface {
	Follow(ctx context.Context, name string, mode fm.SyncMode, events chan<- schedule.Event) (bool, error)
	Status() []schedule.JobStatus
	// Jobs names what a sync of library brings: the library, or everything
	// for ""; nil for no such library.
	Jobs(library string) []string
}

// Index is what the admin listener reads of the index.
type Index interface {
	Library(ctx context.Context, libraryID string) (*fm.LibraryState, error)
	Info(ctx context.Context) fm.IndexInfo
}

// API is what the admin listener asks of the API: whether a library's
// catalog is built, so that its requests will not wait.
type API interface {
	Warmed(ctx context.Context, libraryID string) bool
}

// Server is the admin listener.
type Server struct {
	libraries []string
	scheduler Scheduler
	index     Index
	api       API
	push      func() []push.FeedStatus
	token     string
	http      *http.Server
}

// Service is what /healthz says, so that a client knows it reached a
// foldermirror daemon.
const Service = "foldermirror"

// Options are what the admin listener works with.
type Options struct {
	// Listen is the listener's configured host:port (adminListen): the Host
	// of a request must name it, localhost or a loopback IP (see
	// refuseCrossSite).
	Listen string
	// Libraries are the IDs of the libraries synced, in the order /readyz
	// lists those it waits for; the other jobs sync directories.
	Libraries []string
	// Token, when not "", is the Bearer credential every request but GET
	// /healthz and GET /readyz must carry; without it, /readyz tells its
	// status alone.
	Token     string
	Scheduler Scheduler
	Index     Index
	API       API
	// Gatherer is what /metrics serves.
	Gatherer prometheus.Gatherer
	Logger   *slog.Logger
	// PushStatus, when not nil (push.address set), gives /status its
	// "push" member: the status of each feed Drive pushes, as
	// push.Service's Status says it.
	PushStatus func() []push.FeedStatus
}

// New returns the admin listener of a daemon.
func New(opts Options) *Server {
	s := &Server{libraries: slices.Clone(opts.Libraries), scheduler: opts.Scheduler, index: opts.Index, api: opts.API,
		push: opts.PushStatus, token: opts.Token}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /sync", s.sync)
	mux.HandleFunc("GET /status", s.status)
	mux.Handle("GET /metrics", promhttp.HandlerFor(opts.Gatherer, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(opts.Logger.Handler(), slog.LevelWarn)}))
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	s.http = &http.Server{
		Handler:           requireToken(refuseCrossSite(mux, opts.Listen), opts.Token),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(opts.Logger.Handler(), slog.LevelWarn),
		// No WriteTimeout: a resync's progress streams as long as it runs.
	}
	graceful.Track(s.http)
	return s
}

// Handler returns the admin listener's HTTP handler.
func (s *Server) Handler() http.Handler { return s.http.Handler }

// Serve serves on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	if err := s.http.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown stops the listener; streams of running syncs end when the
// scheduler stops them. A connection that has not sent a whole request is
// closed at once.
func (s *Server) Shutdown(ctx context.Context) error { return s.http.Shutdown(ctx) }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, Refusal{Error: msg})
}

// healthz: alive, and the service's name, so that a client knows it
// reached a foldermirror daemon; with a token, and a ChallengeParam from a
// client on this host, the proof that the daemon holds the token.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	answer := Health{Status: "ok", Service: Service}
	if challenge := r.URL.Query().Get(ChallengeParam); challenge != "" && s.token != "" && fromThisHost(r) {
		answer.Proof = Proof(s.token, challenge)
	}
	writeJSON(w, http.StatusOK, answer)
}

// readyz: ready when the index answers and every library has a synced
// tree, ready to serve; "degraded" (still 200: it serves what it read)
// when a shared index's database stopped answering since. The libraries
// waited for and the database's error, which may name its host, port,
// database and user, are told only to a request that carries the token.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	code, answer := s.readiness(r.Context())
	if !authorized(r, s.token) {
		answer = Readiness{Status: answer.Status}
	}
	writeJSON(w, code, answer)
}

// readiness returns /readyz's HTTP status and its whole answer.
func (s *Server) readiness(ctx context.Context) (int, Readiness) {
	info := s.index.Info(ctx)
	if !info.Ready {
		return http.StatusServiceUnavailable, Readiness{Status: "waiting for the index", Problem: info.Problem}
	}
	var waiting []string
	for _, id := range s.libraries {
		if !s.api.Warmed(ctx, id) {
			waiting = append(waiting, id)
		}
	}
	if len(waiting) > 0 {
		return http.StatusServiceUnavailable, Readiness{Status: "waiting for a first sync, or for its catalog", Libraries: waiting}
	}
	if info.Problem != "" {
		return http.StatusOK, Readiness{Status: "degraded", Problem: info.Problem}
	}
	return http.StatusOK, Readiness{Status: "ready"}
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	var out Status
	out.Index = s.index.Info(r.Context())
	out.Libraries, out.Directories = []LibraryStatus{}, []DirectoryStatus{}
	for _, st := range s.scheduler.Status() {
		if !slices.Contains(s.libraries, st.Name) {
			out.Directories = append(out.Directories, DirectoryStatus{JobStatus: st, LeaseHolder: out.Index.Leases[st.Name]})
			continue
		}
		ls := LibraryStatus{JobStatus: st, LeaseHolder: out.Index.Leases[st.Name]}
		if state, err := s.index.Library(r.Context(), st.Name); err == nil {
			ls.Synced, ls.Folders, ls.Permissions, ls.Revision = true, state.Folders, state.Permissions, state.Revision
			ls.LastFullSync, ls.LastIncremental = state.LastFullSync, state.LastIncrementalSync
		}
		out.Libraries = append(out.Libraries, ls)
	}
	if s.push != nil {
		out.Push = s.push()
	}
	writeJSON(w, http.StatusOK, out)
}
