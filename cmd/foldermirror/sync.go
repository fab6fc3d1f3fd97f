package main

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/httpapi/admin"
	"github.com/foldermirror/foldermirror/internal/wire"
	"github.com/foldermirror/foldermirror/schedule"
	"github.com/prometheus/client_golang/prometheus"
)

// syncCommand syncs now, showing progress: through the daemon when one runs
// (it holds the index), else by opening the index itself.
type syncCommand struct {
	stdout, stderr io.Writer
	configPath     string
	logLevel       string
	library        string
	full           bool
	wait           time.Duration

	db       fm.Index
	progress *progressDisplay
	jobs     int // how many jobs were asked for
}

func (c *syncCommand) ParseFlags(args []string) error {
	f := newFlags("sync", "--config FILE [--library ID] [--full] [--wait DURATION] [--log-level LEVEL]",
		"Syncs now, showing progress: through the daemon when one runs (it holds the index), else by opening the index.")
	f.config(&c.configPath)
	f.logLevel(&c.logLevel, "warn") // progress says what info logs would
	f.fs.StringVar(&c.library, "library", "", "sync only this library `ID` (default: every directory and library)")
	f.fs.BoolVar(&c.full, "full", false, "read whole trees even where a changes token is saved")
	f.fs.DurationVar(&c.wait, "wait", time.Minute, "with a PostgreSQL index, how long (`DURATION`, such as 30s or 5m) to wait for a library another process (a replica) is syncing")
	return f.parse(args, &c.configPath)
}

func (c *syncCommand) Run(ctx context.Context) error {
	cfg, err := config.Load(c.configPath)
	if err != nil {
		return err
	}
	if c.library != "" && cfg.Library(c.library) == nil {
		return fmt.Errorf("--library %s: no such library in %s", c.library, c.configPath)
	}
	c.jobs = len(wire.Plan(cfg).Jobs(c.library))
	token, err := cfg.AdminToken()
	if err != nil {
		return err
	}
	// A daemon holds a bbolt index alone: it is asked. A PostgreSQL index is
	// shared: this command syncs by itself, under the jobs' leases.
	base, daemonRuns := "", false
	if !cfg.Index.IsPostgres() {
		if base, daemonRuns, err = findDaemon(ctx, cfg.AdminListen, token); err != nil {
			return err
		}
	}
	if daemonRuns {
		fmt.Fprintf(c.stderr, "a foldermirror daemon holds the index; asking it (%s)\n", base)
	}
	c.progress = newProgressDisplay(c.stderr, listingOf(cfg))
	defer c.progress.close()
	if daemonRuns {
		return c.viaDaemon(ctx, base, token)
	}
	return c.locally(ctx, cfg)
}

// findDaemon returns the admin listener's base URL if a daemon answers
// there; its error says that what answers does not prove it holds token.
func findDaemon(ctx context.Context, adminListen, token string) (string, bool, error) {
	base, err := adminBaseURL(adminListen)
	if err != nil {
		return "", false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	switch err := checkDaemon(ctx, base, token); {
	case errors.Is(err, errNoDaemon):
		return "", false, nil
	case err != nil:
		return "", false, err
	}
	return base, true, nil
}

// adminClient asks admin listeners directly, never through a proxy of the
// environment, which would see the token.
var adminClient = &http.Client{Transport: &http.Transport{Proxy: nil}}

// errNoDaemon says that no foldermirror daemon answers at an address.
var errNoDaemon = errors.New("no foldermirror daemon answers")

// checkDaemon asks base/healthz whether a foldermirror daemon answers
// there (else an error wrapping errNoDaemon) and, when token is not "",
// with a fresh challenge, whether it proves it holds token (else an error
// saying that the token is not sent): a process of another user may have
// bound the port while the daemon was down, to collect the token.
func checkDaemon(ctx context.Context, base, token string) error {
	challenge := rand.Text()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz?"+url.Values{admin.ChallengeParam: {challenge}}.Encode(), nil)
	if err != nil {
		return fmt.Errorf("%w at %s: %w", errNoDaemon, base, err)
	}
	resp, err := adminClient.Do(req)
	if err != nil {
		return fmt.Errorf("%w at %s: %w", errNoDaemon, base, plainNetError(err))
	}
	defer resp.Body.Close()
	var health struct{ Service, Proof string }
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&health); err != nil || health.Service != admin.Service {
		return fmt.Errorf("%w at %s: it answered %s, not a foldermirror daemon's health", errNoDaemon, base, resp.Status)
	}
	if token != "" && !hmac.Equal([]byte(health.Proof), []byte(admin.Proof(token, challenge))) {
		return fmt.Errorf("the process answering on %s does not prove that it holds adminTokenFile's token: not sending it "+
			"(does the daemon read another token file, or did another program bind adminListen?)", req.URL.Host)
	}
	return nil
}

// adminBaseURL returns the URL by which this host reaches an admin
// listener on adminListen: a wildcard host is reached on loopback.
func adminBaseURL(adminListen string) (string, error) {
	host, port, err := net.SplitHostPort(adminListen)
	if err != nil || port == "0" {
		return "", fmt.Errorf("%q is not an address a client can reach (a host and a fixed port)", adminListen)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port), nil
}

// setAdminToken makes req carry the admin listener's token, unless it is "".
func setAdminToken(req *http.Request, token string) {
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
}

// viaDaemon asks the daemon to sync, with the admin token unless it is "",
// and shows the progress it streams.
func (c *syncCommand) viaDaemon(ctx context.Context, base, token string) error {
	q := url.Values{"mode": {"incremental"}}
	if c.full {
		q.Set("mode", "full")
	}
	if c.library != "" {
		q.Set("library", c.library)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/sync?"+q.Encode(), nil)
	req.Header.Set(admin.RequestHeader, "foldermirror sync")
	setAdminToken(req, token)
	resp, err := adminClient.Do(req)
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
		var ev schedule.Event
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
	return c.joinFailures(failed)
}

// locally opens the index and syncs: directories first (all only), then
// libraries.
func (c *syncCommand) locally(ctx context.Context, cfg *config.Config) error {
	logger, err := newLogger(c.progress, c.logLevel)
	if err != nil {
		return err
	}
	if c.db, err = openIndex(cfg, logger, nil); err != nil {
		if !cfg.Index.IsPostgres() {
			err = fmt.Errorf("%w; no daemon answered at adminListen %s either", err, cfg.AdminListen)
		}
		return err
	}
	if err := connect(ctx, c.db); err != nil {
		return err
	}
	s, _, err := wire.NewSyncer(cfg, c.db, logger, prometheus.NewRegistry())
	if err != nil {
		return err
	}
	runner := schedule.Runner{Syncer: s, Leases: c.db.Leases()}
	mode := fm.SyncAuto
	if c.full {
		mode = fm.SyncFull
	}
	var failed []error
	for _, job := range wire.Plan(cfg).Jobs(c.library) {
		ev, err := runner.Run(ctx, job, mode, func(p fm.Progress) { c.progress.update(job, p) }, schedule.RunOptions{LeaseWait: c.wait})
		if err != nil {
			ev.Error = err.Error()
		}
		if err := c.show(ev); err != nil {
			failed = append(failed, err)
		}
	}
	return c.joinFailures(failed)
}

// show shows an event: progress, or a job's outcome (an error if it failed).
func (c *syncCommand) show(ev schedule.Event) error {
	if !ev.Final() {
		c.progress.update(ev.Job, *ev.Progress)
		return nil
	}
	c.progress.done(ev.Job)
	switch {
	case ev.Error != "":
		c.progress.println(c.stderr, fmt.Sprintf("%s: failed: %s", ev.Job, ev.Error))
		return jobFailed(ev.Job)
	case ev.Directory != nil:
		c.progress.println(c.stdout, directoryLine(ev.Job, ev.Directory))
	case ev.Result != nil:
		c.progress.println(c.stdout, summary(ev.Result))
	}
	return nil
}

// directoryLine is a directory sync's outcome in a line.
func directoryLine(job string, d *fm.DirectoryResult) string {
	return fmt.Sprintf("%s: %s, %s, %s, %s", job, count(d.Users, "user"), count(d.Groups, "group"),
		count(d.Calls, "Directory call"), d.Duration.Round(time.Millisecond))
}

// jobFailed is the error of a job whose failure was shown already.
type jobFailed string

func (j jobFailed) Error() string { return string(j) }

// summary is a library sync's outcome in a line; a full sync says why it
// read the whole library, in how many createdTime ranges when more than
// one, and why they fell back to one sequential listing if they did.
func summary(r *fm.SyncResult) string {
	if r.Full {
		why := ""
		if r.FullReason != "" {
			why = " (" + string(r.FullReason) + ")"
		}
		calls := count(r.Calls, "Drive call")
		if r.Ranges > 1 {
			calls += fmt.Sprintf(" in %d createdTime ranges", r.Ranges)
		}
		if r.ListingFallback != "" {
			calls += ", then one sequential listing (" + r.ListingFallback + ")"
		}
		return fmt.Sprintf("%s: full sync%s: %s, %s, drift %d, %s, %s", r.Library, why, count(r.Folders, "folder"),
			count(r.Permissions, "permission"), r.Drift.Total(), calls, r.Duration.Round(time.Millisecond))
	}
	return fmt.Sprintf("%s: incremental sync: %s, %s written or removed, %s, %s, %s", r.Library, count(r.Changes, "change"),
		count(r.Applied, "folder"), count(r.Folders, "folder"), count(r.Calls, "Drive call"), r.Duration.Round(time.Millisecond))
}

// joinFailures says which jobs failed, in a line: each job's reason was
// shown when it failed.
func (c *syncCommand) joinFailures(failed []error) error {
	if len(failed) == 0 {
		return nil
	}
	names := make([]string, len(failed))
	for i, err := range failed {
		names[i] = err.Error()
	}
	return fmt.Errorf("%d of %s failed (%s); the reasons are above", len(failed), count(max(c.jobs, len(failed)), "sync"), strings.Join(names, ", "))
}

func (c *syncCommand) Close() error {
	if c.db == nil {
		return nil
	}
	return c.db.Close()
}
