package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/httpapi"
	"github.com/foldermirror/foldermirror/httpapi/auth"
	"github.com/foldermirror/foldermirror/index"
	"github.com/foldermirror/foldermirror/syncer"
)

// serveCommand runs the daemon until interrupted.
type serveCommand struct {
	stderr     io.Writer
	configPath string
	logLevel   string
	daemon     *daemonParts
}

func (c *serveCommand) isDaemon() {}

func (c *serveCommand) ParseFlags(args []string) error {
	fs := newFlagSet("serve", &c.configPath, &c.logLevel, "info")
	return parseArgs(fs, args, &c.configPath)
}

func (c *serveCommand) Run(context.Context) error {
	cfg, err := config.Load(c.configPath)
	if err != nil {
		return err
	}
	logger, err := newLogger(c.stderr, c.logLevel)
	if err != nil {
		return err
	}
	c.daemon, err = startDaemon(cfg, logger)
	return err
}

func (c *serveCommand) Close() error {
	if c.daemon == nil {
		return nil
	}
	return c.daemon.Close()
}

// shutdownTimeout bounds the wait for in-flight requests at shutdown.
const shutdownTimeout = 8 * time.Second

// daemonParts are the running parts of a daemon, closed in order: the API
// first (in-flight requests finish), then the syncs, then the index.
type daemonParts struct {
	logger    *slog.Logger
	db        *index.DB
	scheduler *syncer.Scheduler
	auth      *auth.Authenticator
	api       *httpapi.Server
	apiAddr   net.Addr
	served    chan error
}

// startDaemon opens the index, starts the scheduler and serves the API on
// cfg.Listen. On error, what was started is closed again.
func startDaemon(cfg *config.Config, logger *slog.Logger) (d *daemonParts, err error) {
	d = &daemonParts{logger: logger, served: make(chan error, 1)}
	defer func() {
		if err != nil {
			d.Close()
			d = nil
		}
	}()
	if d.db, err = index.Open(cfg.DataDir, logger); err != nil {
		return d, err
	}
	s, err := syncer.New(cfg, d.db, syncer.Options{Logger: logger})
	if err != nil {
		return d, err
	}
	if d.scheduler, err = syncer.NewScheduler(s); err != nil {
		return d, err
	}
	if d.auth, err = auth.New(cfg, auth.Directory{Config: cfg, Synced: d.db}, auth.Options{}); err != nil {
		return d, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return d, fmt.Errorf("listen: %w", err)
	}
	d.apiAddr = ln.Addr()
	d.api = httpapi.New(cfg, d.db, d.auth, httpapi.Options{Logger: logger})
	go func() { d.served <- d.api.Serve(ln) }()
	d.scheduler.Start()
	logger.Info("serving", "listen", d.apiAddr.String(), "libraries", len(cfg.Libraries))
	return d, nil
}

// Close shuts the daemon down in order.
func (d *daemonParts) Close() error {
	var errs []error
	if d.api != nil {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		errs = append(errs, d.api.Shutdown(ctx))
		cancel()
		errs = append(errs, <-d.served)
	}
	if d.scheduler != nil {
		d.scheduler.Stop()
	}
	if d.auth != nil {
		d.auth.Close()
	}
	if d.db != nil {
		errs = append(errs, d.db.Close())
	}
	return errors.Join(errs...)
}
