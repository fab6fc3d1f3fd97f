package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/httpapi/admin"
	"github.com/foldermirror/foldermirror/index"
	"github.com/foldermirror/foldermirror/syncer"
)

// syncCommand syncs now, showing progress: through the daemon when one runs
// (it holds the index), else by opening the index itself.
type syncCommand struct {
	stdout, stderr io.Writer
	configPath     string
	logLevel       string
	library        string
	full           bool

	db    *index.DB
	views map[string]*progressView
}

func (c *syncCommand) ParseFlags(args []string) error {
	fs := newFlagSet("sync", &c.configPath, &c.logLevel, "warn") // progress says what info logs would
	fs.StringVar(&c.library, "library", "", "sync only this library (default: every directory and library)")
	fs.BoolVar(&c.full, "full", false, "read whole trees even where a changes token is saved")
	return parseArgs(fs, args, &c.configPath)
}

func (c *syncCommand) Run(ctx context.Context) error {
	cfg, err := config.Load(c.configPath)
	if err != nil {
		return err
	}
	if c.library != "" && cfg.Library(c.library) == nil {
		return fmt.Errorf("--library %s: no such library in %s", c.library, c.configPath)
	}
	c.views = map[string]*progressView{}
	if base, ok := findDaemon(ctx, cfg.AdminListen); ok {
		fmt.Fprintf(c.stderr, "a foldermirror daemon holds the index; asking it (%s)\n", base)
		return c.viaDaemon(ctx, base)
	}
	return c.locally(ctx, cfg)
}

// findDaemon returns the admin listener's base URL if a daemon answers there.
func findDaemon(ctx context.Context, adminListen string) (string, bool) {
	host, port, err := net.SplitHostPort(adminListen)
	if err != nil || port == "0" {
		return "", false
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	base := "http://" + net.JoinHostPort(host, port)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", false
	}
	defer resp.Body.Close()
	var health struct{ Service string }
	if json.NewDecoder(resp.Body).Decode(&health) != nil || health.Service != admin.Service {
		return "", false
	}
	return base, true
}

// viaDaemon asks the daemon to sync and shows the progress it streams.
func (c *syncCommand) viaDaemon(ctx context.Context, base string) error {
	q := url.Values{"mode": {"incremental"}}
	if c.full {
		q.Set("mode", "full")
	}
	if c.library != "" {
		q.Set("library", c.library)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/sync?"+q.Encode(), nil)
	req.Header.Set(admin.RequestHeader, "foldermirror sync")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("ask the daemon: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("the daemon refused: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	var failed []error
	finals := 0
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	for lines.Scan() {
		var ev syncer.Event
		if err := json.Unmarshal(lines.Bytes(), &ev); err != nil {
			return fmt.Errorf("the daemon's answer: %w", err)
		}
		if err := c.show(ev); err != nil {
			failed = append(failed, err)
		}
		if ev.Final() {
			finals++
		}
	}
	if err := lines.Err(); err != nil {
		return fmt.Errorf("the daemon's answer was cut: %w", err)
	}
	if finals == 0 {
		return errors.New("the daemon ended the sync without a result (is it shutting down?)")
	}
	return joinFailures(failed)
}

// locally opens the index and syncs: directories first (all only), then
// libraries.
func (c *syncCommand) locally(ctx context.Context, cfg *config.Config) error {
	logger, err := newLogger(c.stderr, c.logLevel)
	if err != nil {
		return err
	}
	if c.db, err = index.Open(cfg.DataDir, logger); err != nil {
		return fmt.Errorf("%w; no daemon answered at adminListen %s either", err, cfg.AdminListen)
	}
	s, err := syncer.New(cfg, c.db, syncer.Options{Logger: logger})
	if err != nil {
		return err
	}
	mode := syncer.Auto
	if c.full {
		mode = syncer.Full
	}
	var failed []error
	for _, job := range syncer.Jobs(cfg, c.library) {
		ev, err := s.Run(ctx, job, mode, c.view(job).update)
		if err != nil {
			ev.Error = err.Error()
		}
		if err := c.show(ev); err != nil {
			failed = append(failed, err)
		}
	}
	return joinFailures(failed)
}

// view returns the progress view of a job. Call it from one goroutine; the
// view itself takes updates from any.
func (c *syncCommand) view(job string) *progressView {
	view, ok := c.views[job]
	if !ok {
		view = newProgressView(c.stderr, job)
		c.views[job] = view
	}
	return view
}

// show shows an event: progress, or a job's outcome (an error if it failed).
func (c *syncCommand) show(ev syncer.Event) error {
	view := c.view(ev.Job)
	if !ev.Final() {
		view.update(*ev.Progress)
		return nil
	}
	view.finish()
	switch {
	case ev.Error != "":
		fmt.Fprintf(c.stderr, "%s: failed: %s\n", ev.Job, ev.Error)
		return fmt.Errorf("%s: %s", ev.Job, ev.Error)
	case ev.Directory != nil:
		d := ev.Directory
		fmt.Fprintf(c.stdout, "%s: %d users, %d groups, %d Directory calls, %s\n",
			ev.Job, d.Users, d.Groups, d.Calls, d.Duration.Round(time.Millisecond))
	case ev.Result != nil:
		fmt.Fprintf(c.stdout, "%s\n", summary(ev.Result))
	}
	return nil
}

func summary(r *syncer.Result) string {
	if r.Full {
		return fmt.Sprintf("%s: full sync: %d folders, %d permissions, drift %d, %d Drive calls, %s",
			r.Library, r.Folders, r.Permissions, r.Drift.Total(), r.Calls, r.Duration.Round(time.Millisecond))
	}
	return fmt.Sprintf("%s: incremental sync: %d changes, %d folders written or removed, %d folders, %d Drive calls, %s",
		r.Library, r.Changes, r.Applied, r.Folders, r.Calls, r.Duration.Round(time.Millisecond))
}

func joinFailures(failed []error) error {
	if len(failed) == 0 {
		return nil
	}
	return fmt.Errorf("%d syncs failed: %w", len(failed), errors.Join(failed...))
}

func (c *syncCommand) Close() error {
	if c.db == nil {
		return nil
	}
	return c.db.Close()
}
