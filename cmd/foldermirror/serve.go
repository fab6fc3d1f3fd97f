package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/discovery"
	"github.com/foldermirror/foldermirror/httpapi"
	"github.com/foldermirror/foldermirror/httpapi/admin"
	"github.com/foldermirror/foldermirror/httpapi/auth"
	"github.com/foldermirror/foldermirror/internal/wire"
	"github.com/foldermirror/foldermirror/push"
	"github.com/foldermirror/foldermirror/schedule"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"
)

// serveCommand runs the daemon until interrupted.
type serveCommand struct {
	stderr     io.Writer
	configPath string
	logLevel   string
	logger     *slog.Logger
	daemon     *daemonParts
	profiling  profiles
}

// stopping logs that the daemon begins to stop, and the signal that stops
// it.
func (c *serveCommand) stopping(why error) {
	var sig signalReceived
	if errors.As(why, &sig) {
		c.logger.Info("shutting down", "signal", sig.name())
		return
	}
	c.logger.Info("shutting down")
}

func (c *serveCommand) stopped() { c.logger.Info("stopped") }

func (c *serveCommand) ParseFlags(args []string) error {
	f := newFlags("serve", "--config FILE [--log-level LEVEL] [--cpuprofile FILE] [--memprofile FILE]",
		"Runs the daemon: the API on listen, the admin listener on adminListen, and the scheduled syncs.")
	f.config(&c.configPath)
	f.logLevel(&c.logLevel, "info")
	f.profileFlags(&c.profiling)
	return f.parse(args, &c.configPath)
}

func (c *serveCommand) profiles() *profiles { return &c.profiling }

func (c *serveCommand) Run(context.Context) error {
	cfg, err := config.Load(c.configPath)
	if err != nil {
		return err
	}
	if c.logger, err = newLogger(c.stderr, c.logLevel); err != nil {
		return err
	}
	ls, err := bindListeners(cfg.Listen, "listen in "+cfg.Path, cfg.AdminListen, "adminListen in "+cfg.Path)
	if err != nil {
		return err
	}
	if servesNoLibrary(cfg) {
		c.logger.Warn(noLibraries)
	}
	c.daemon, err = startDaemon(cfg, c.logger, ls)
	return err
}

func (c *serveCommand) Close() error {
	if c.daemon == nil {
		return nil
	}
	return c.daemon.Close()
}

// Shutdown budget, within the 10 s a supervisor usually grants: in-flight
// API requests first, then the admin listener once syncs are stopped.
const (
	apiShutdownTimeout   = 7 * time.Second
	adminShutdownTimeout = 2 * time.Second
)

// daemonParts are the running parts of a daemon, closed in order: the API
// (in-flight requests finish), the push channels' keeper and the syncs
// (cancelled, leaving the index as it was), the admin listener, the index.
type daemonParts struct {
	logger    *slog.Logger
	ctx       context.Context // ends when the daemon closes
	cancel    context.CancelFunc
	db        fm.Index
	scheduler *schedule.Scheduler
	discovery *discovery.Discoverer
	// push, when push.address is set, keeps Drive's push channels while
	// pushCtx lasts, which ends once the API stopped.
	push     *push.Service
	pushCtx  context.Context
	stopPush context.CancelFunc
	auth     *auth.Authenticator
	api      *server
	admin    *server
	// background are the daemon's goroutines that end with its context
	// (the push channels' keeper with pushCtx).
	background sync.WaitGroup
}

// server is a listener and what serves it.
type server struct {
	addr     net.Addr
	shutdown func(context.Context) error
	served   chan error
}

// startServer serves ln in a goroutine.
func startServer(ln net.Listener, serve func(net.Listener) error, shutdown func(context.Context) error) *server {
	s := &server{addr: ln.Addr(), shutdown: shutdown, served: make(chan error, 1)}
	go func() { s.served <- serve(ln) }()
	return s
}

// listeners are the daemon's, bound before anything else starts, so that
// a taken port is reported at once.
type listeners struct {
	api, admin net.Listener
}

// bindListeners binds the API's and the admin listener's addresses; the
// names say where each address came from (a key and its file, or a flag)
// in errors.
func bindListeners(apiAddr, apiName, adminAddr, adminName string) (*listeners, error) {
	api, err := bind(apiAddr, apiName)
	if err != nil {
		return nil, err
	}
	admin, err := bind(adminAddr, adminName)
	if err != nil {
		api.Close()
		return nil, err
	}
	return &listeners{api: api, admin: admin}, nil
}

// bind listens on addr; its error names the address and where it came from.
func bind(addr, name string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, fmt.Errorf("%s: %s is already in use (by another foldermirror, or another program); stop it or choose another port", name, addr)
	case err != nil:
		var op *net.OpError
		if errors.As(err, &op) {
			err = op.Err
		}
		return nil, fmt.Errorf("%s: cannot listen on %s: %w", name, addr, err)
	}
	return ln, nil
}

// Close closes the listeners (which a server may have closed already).
func (ls *listeners) Close() {
	ls.api.Close()
	ls.admin.Close()
}

func (s *server) stop(timeout time.Duration) error {
	if s == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return errors.Join(s.shutdown(ctx), <-s.served)
}

// startDaemon opens the index, starts the scheduler, and serves the API
// and the admin listener on ls; an admin listener that bound an address
// off loopback without adminTokenFile is refused first (adminListen's host
// may have resolved elsewhere). On error, what was started is closed
// again, and so are the listeners. A PostgreSQL index that cannot be
// reached yet is tried again in the background: the API answers 503 and
// /readyz is not ready until it is, and the syncs start then.
func startDaemon(cfg *config.Config, logger *slog.Logger, ls *listeners) (d *daemonParts, err error) {
	d = &daemonParts{logger: logger}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	d.pushCtx, d.stopPush = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			ls.Close()
			_ = d.Close() // the start's error is the one to tell
			d = nil
		}
	}()
	if err := cfg.CheckAdminBound(ls.admin.Addr()); err != nil {
		return d, err
	}
	var api *httpapi.Server
	warm := func(libraryID string) {
		if err := api.Warm(d.ctx, libraryID); err != nil && fm.ErrorCode(err) != fm.ENOTFOUND && d.ctx.Err() == nil {
			logger.Warn("could not prepare a library for the API", "library", libraryID, "err", err)
		}
	}
	if d.db, err = openIndex(cfg, logger, warm); err != nil {
		return d, err
	}
	reg := newRegistry(d.db)
	libs := wire.Libraries(cfg)
	parts, err := newSyncing(cfg, libs, d.db, logger, reg)
	if err != nil {
		return d, err
	}
	d.scheduler, d.discovery, d.push = parts.scheduler, parts.discovery, parts.push
	d.auth = auth.New(wire.AuthOptions(cfg, auth.Options{Directory: d.db, Logger: logger}))
	apiOpts := httpapi.Options{Libraries: libs, Logger: logger, Metrics: httpapi.NewMetrics(reg)}
	adminOpts := admin.Options{Libraries: libs, Scheduler: d.scheduler, Index: d.db, Gatherer: reg, Logger: logger}
	if d.push != nil {
		apiOpts.Push, apiOpts.PushPath = d.push, d.push.Path()
		adminOpts.Push = d.push
	}
	var discoveredLoaded atomic.Bool
	if d.discovery.Enabled() {
		adminOpts.Discovery, adminOpts.DiscoveredLoaded = d.discovery.Status, discoveredLoaded.Load
	}
	api = httpapi.New(d.db, d.auth, wire.APIOptions(cfg, apiOpts))
	d.scheduler.OnSynced(warm)
	reached, err := reach(d.ctx, d.db, func(err error) {
		logger.Error("the index database cannot be reached yet; the API answers 503 until it is", "err", err)
	})
	if err != nil {
		return d, err
	}
	token, err := cfg.AdminToken()
	if err != nil {
		return d, err
	}
	d.api = startServer(ls.api, api.Serve, api.Shutdown)
	adminOpts.Token, adminOpts.API = token, api
	adm := admin.New(wire.AdminOptions(cfg, adminOpts))
	d.admin = startServer(ls.admin, adm.Serve, adm.Shutdown)
	d.background.Go(func() {
		if !d.following(reached) {
			return
		}
		if err := d.discovery.Load(d.ctx); err != nil {
			logger.Warn("could not read the shared drives discovered before; discovering them again", "err", err)
		}
		discoveredLoaded.Store(true)
		d.background.Go(func() {
			warmAll(libs.List(), warm)
			// Once the catalogs are made and the first discovery has ended,
			// the memory they were read with goes back to the system:
			// thousands of small catalogs and a listing of thousands of
			// drives leave tens of megabytes the collector would otherwise
			// keep until its next cycle, far off with a large live heap
			// (catalog gives back a large library's memory at once).
			select {
			case <-d.discovery.FirstDone():
				debug.FreeOSMemory()
			case <-d.ctx.Done():
			}
		})
		d.scheduler.Start()
		d.background.Go(func() { d.discovery.Run(d.ctx) })
		if d.push != nil {
			d.background.Go(func() { d.push.Run(d.pushCtx) })
		}
	})
	if d.push != nil {
		logger.Info("push notifications on: Drive is asked to post its changes to push.address", "address", cfg.Push.Address, "path", d.push.Path())
	}
	logger.Info("serving", "listen", d.api.addr.String(), "adminListen", d.admin.addr.String(), "libraries", len(cfg.Libraries),
		"domainsDiscoveringSharedDrives", len(cfg.SharedDriveDiscoveries()))
	return d, nil
}

// warmers bounds how many catalogs are built at once at start: thousands of
// discovered libraries must not all be read into memory together.
const warmers = 4

// warmAll has warm prepare every library of libs, warmers at a time.
func warmAll(libs []fm.Library, warm func(libraryID string)) {
	var g errgroup.Group
	g.SetLimit(warmers)
	for _, l := range libs {
		g.Go(func() error { warm(l.ID); return nil })
	}
	_ = g.Wait() // warm logs its own failures
}

// following waits until the index is reached (reached, of reach), then
// reads what other replicas commit (Watch) until the daemon closes. False:
// the daemon closed first, or the database turned out to be one
// foldermirror must not use.
func (d *daemonParts) following(reached func() error) bool {
	if err := reached(); err != nil {
		if d.ctx.Err() == nil {
			d.logger.Error("the index database may not be used; the API answers 503, and no sync runs", "err", err)
		}
		return false
	}
	d.background.Go(func() { d.db.Watch(d.ctx) })
	return true
}

// newRegistry returns the daemon's Prometheus registry, with Go's and the
// process's collectors and the index's size.
func newRegistry(db fm.Index) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "foldermirror_index_size_bytes",
			Help: "Size of the index: the bbolt file, or the PostgreSQL database.",
		}, func() float64 { return float64(db.Info(context.Background()).SizeBytes) }),
	)
	return reg
}

// Close shuts the daemon down in order.
func (d *daemonParts) Close() error {
	d.cancel()
	errs := []error{d.api.stop(apiShutdownTimeout)}
	d.stopPush()
	d.background.Wait()
	if d.scheduler != nil {
		d.scheduler.Stop()
	}
	errs = append(errs, d.admin.stop(adminShutdownTimeout))
	if d.auth != nil {
		d.auth.Close()
	}
	if d.db != nil {
		errs = append(errs, d.db.Close())
	}
	return errors.Join(errs...)
}
