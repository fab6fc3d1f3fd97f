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
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/discovery"
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
	// JobStatus is the status of one job; false if there is none such.
	JobStatus(name string) (schedule.JobStatus, bool)
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
	libraries *fm.LibrarySet
	loaded    func() bool
	discovery func() []discovery.DomainStatus
	scheduler Scheduler
	index     Index
	api       API
	push      Push
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
	// Libraries are the libraries synced (nil: none); the other jobs sync
	// directories.
	Libraries *fm.LibrarySet
	// Discovery, when not nil (a domain discovers its shared drives), gives
	// /status its "discovery" member: each such domain's status.
	Discovery func() []discovery.DomainStatus
	// DiscoveredLoaded, when not nil (a domain discovers its shared drives),
	// tells whether Libraries holds the drives discovered before the daemon
	// started, read from the index: until it does, /readyz is 503, since
	// the daemon would answer 404 for drives it serves once they are read.
	DiscoveredLoaded func() bool
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
	// Push, when not nil (push.address set), gives /status its "push"
	// members: the status of each feed Drive pushes (while there are at
	// most 100), and their counts.
	Push Push
}

// Push is what /status reads of the push service (push.Service).
type Push interface {
	Status() []push.FeedStatus
	Summary() push.FeedSummary
	LibraryFeedStatus(libraryID string) (push.FeedStatus, bool)
}

// New returns the admin listener of a daemon.
func New(opts Options) *Server {
	libraries := opts.Libraries
	if libraries == nil {
		libraries = fm.NewLibrarySet(nil)
	}
	s := &Server{libraries: libraries, loaded: opts.DiscoveredLoaded, discovery: opts.Discovery, scheduler: opts.Scheduler, index: opts.Index, api: opts.API,
		push: opts.Push, token: opts.Token}
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
	if s.loaded != nil && !s.loaded() {
		return http.StatusServiceUnavailable, Readiness{Status: "waiting for the shared drives discovered before"}
	}
	var waiting []string
	for _, l := range s.libraries.List() {
		if !s.api.Warmed(ctx, l.ID) && s.awaited(ctx, l.ID) {
			waiting = append(waiting, l.ID)
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

// awaited tells whether /readyz waits for a library whose catalog is not
// built: a configured one always; a discovered one only once the index has
// a tree of it (a drive discovered while serving must not take a replica
// out of service until its first sync ends).
func (s *Server) awaited(ctx context.Context, id string) bool {
	if !s.libraries.Discovered(id) {
		return true
	}
	_, err := s.index.Library(ctx, id)
	return err == nil
}

// statusListMax is how many discovered libraries /status lists; beyond,
// it lists the configured ones and counts the others, each told by
// /status?library=ID.
const statusListMax = 100

// status answers GET /status, or, with ?library=ID, that library's line
// alone (404 if there is none such).
func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	var out Status
	out.Index = s.index.Info(r.Context())
	out.Libraries, out.Directories = []LibraryStatus{}, []DirectoryStatus{}
	if id := r.URL.Query().Get("library"); id != "" {
		s.libraryStatusAnswer(w, r, id, out.Index.Leases)
		return
	}
	libs := s.libraries.List()
	discovered := 0
	for _, l := range libs {
		if s.libraries.Discovered(l.ID) {
			discovered++
		}
	}
	listAll := discovered <= statusListMax
	for _, st := range s.scheduler.Status() {
		l, isLibrary := s.libraries.Library(st.Name)
		switch {
		case !isLibrary:
			out.Directories = append(out.Directories, DirectoryStatus{JobStatus: st, LeaseHolder: out.Index.Leases[st.Name]})
		case listAll || !s.libraries.Discovered(l.ID):
			out.Libraries = append(out.Libraries, s.libraryStatus(r.Context(), l, st, out.Index.Leases))
		default:
			out.LibrariesNotListed++
		}
	}
	if s.discovery != nil {
		out.Discovery = s.discovery()
	}
	if s.push != nil {
		summary := s.push.Summary()
		out.PushSummary = &summary
		if summary.Feeds <= statusListMax {
			out.Push = s.push.Status()
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// libraryStatusAnswer answers /status?library=ID.
func (s *Server) libraryStatusAnswer(w http.ResponseWriter, r *http.Request, id string, leases map[string]string) {
	l, ok := s.libraries.Library(id)
	st, scheduled := s.scheduler.JobStatus(id)
	if !ok || !scheduled {
		writeError(w, http.StatusNotFound, fmt.Sprintf("No library is named %s.", id))
		return
	}
	writeJSON(w, http.StatusOK, s.withFeed(s.libraryStatus(r.Context(), l, st, leases)))
}

// libraryStatus is a library's line in Status.
func (s *Server) libraryStatus(ctx context.Context, l fm.Library, st schedule.JobStatus, leases map[string]string) LibraryStatus {
	ls := LibraryStatus{JobStatus: st, LibraryName: l.Name, Domain: l.Domain, Discovered: s.libraries.Discovered(l.ID),
		LeaseHolder: leases[st.Name]}
	if state, err := s.index.Library(ctx, st.Name); err == nil {
		ls.Synced, ls.Folders, ls.Permissions, ls.Revision = true, state.Folders, state.Permissions, state.Revision
		ls.LastFullSync, ls.LastIncremental = state.LastFullSync, state.LastIncrementalSync
	}
	return ls
}

// withFeed returns ls with the status of its library's push feed, if push
// is on.
func (s *Server) withFeed(ls LibraryStatus) LibraryStatus {
	if s.push == nil {
		return ls
	}
	if f, ok := s.push.LibraryFeedStatus(ls.Name); ok {
		ls.Push = &f
	}
	return ls
}
