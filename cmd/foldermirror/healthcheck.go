package main

import (
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
)

// healthcheckCommand asks a daemon's admin listener whether it is ready
// (GET /readyz): exit 0 when it is, 1 with the reason when it is not or
// does not answer. For orchestrators' probes, such as Docker's HEALTHCHECK:
// the image has no shell nor curl.
type healthcheckCommand struct {
	stdout     io.Writer
	configPath string
	url        string
	timeout    time.Duration
}

func (c *healthcheckCommand) ParseFlags(args []string) error {
	f := newFlags("healthcheck", "[--config FILE | --url URL] [--timeout DURATION]",
		"Exits 0 when the daemon's admin listener says it is ready (GET /readyz), 1 with the reason otherwise.")
	f.config(&c.configPath)
	f.fs.StringVar(&c.url, "url", "", "the admin listener's `URL`, such as http://127.0.0.1:8081 (default: from adminListen of --config)")
	f.fs.DurationVar(&c.timeout, "timeout", 5*time.Second, "how long (`DURATION`, such as 5s) to wait for the answer")
	f.check(func() error {
		if c.timeout <= 0 {
			return fmt.Errorf("--timeout %v: expected a duration greater than 0, such as 5s", c.timeout)
		}
		return nil
	})
	f.check(func() error {
		if c.url == "" {
			return nil
		}
		u, err := url.Parse(c.url)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--url %q: expected the admin listener's http URL, such as http://127.0.0.1:8081", c.url)
		}
		return nil
	})
	if err := f.parse(args, nil); err != nil {
		return err
	}
	if c.url == "" && c.configPath == "" {
		return &usageError{usage: f.usage(), name: f.fs.Name(), err: fmt.Errorf("--config FILE or --url URL is required (or set $%s)", config.EnvConfig)}
	}
	return nil
}

func (c *healthcheckCommand) Run(ctx context.Context) error {
	target, token, err := c.readyzURL()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if token != "" { // from the configuration: target is /readyz at its adminListen
		if err := checkDaemon(ctx, strings.TrimSuffix(target, "/readyz"), token); err != nil {
			return err
		}
	}
	said, err := readiness(ctx, target, token)
	if err != nil {
		return err
	}
	fmt.Fprintln(c.stdout, said)
	return nil
}

func (c *healthcheckCommand) Close() error { return nil }

// readyzURL returns the URL of /readyz: from --url, or from adminListen;
// and, from the configuration, the admin listener's token ("" for none:
// /readyz needs none, but tells its details only with the token, sent where
// one is configured once the daemon proved it holds it).
func (c *healthcheckCommand) readyzURL() (target, token string, err error) {
	if c.url != "" {
		u, _ := url.Parse(c.url) // checked by ParseFlags
		if u.Path == "" || u.Path == "/" {
			u.Path = "/readyz"
		}
		return u.String(), "", nil
	}
	cfg, err := config.Load(c.configPath)
	if err != nil {
		return "", "", err
	}
	base, err := adminBaseURL(cfg.AdminListen)
	if err != nil {
		return "", "", fmt.Errorf("adminListen in %s: %w", cfg.Path, err)
	}
	token, err = cfg.AdminToken()
	return base + "/readyz", token, err
}

// readiness asks target (a /readyz URL), with the admin token unless it is
// "", and returns what it answered ("ready", or "degraded: " and the
// problem), or an error saying why the daemon is not ready.
func readiness(ctx context.Context, target, token string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return "", fmt.Errorf("%s: %w", target, err)
	}
	setAdminToken(req, token)
	resp, err := adminClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("no foldermirror daemon answers at %s: %w", target, plainNetError(err))
	}
	defer resp.Body.Close()
	var answer readyzAnswer
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&answer); err != nil || answer.Status == "" {
		return "", fmt.Errorf("%s answered %s, not a foldermirror readiness (is it the admin listener?)", target, resp.Status)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("not ready (%s): %s", target, answer)
	}
	if answer.Problem != "" {
		return answer.String() + " (serving what it read)", nil
	}
	return answer.String(), nil
}

// readyzAnswer is what GET /readyz answers.
type readyzAnswer struct {
	Status    string   `json:"status"`
	Problem   string   `json:"problem"`   // of the index, when it has one
	Libraries []string `json:"libraries"` // those not ready yet
}

// String says the status, then its problem or the libraries it waits for.
func (a readyzAnswer) String() string {
	switch {
	case a.Problem != "":
		return a.Status + ": " + a.Problem
	case len(a.Libraries) > 0:
		return a.Status + ": " + strings.Join(a.Libraries, ", ")
	}
	return a.Status
}

// plainNetError drops the method and URL that net/http puts in front of
// the cause of a failed request.
func plainNetError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return errors.New("no answer within --timeout")
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Err
	}
	return err
}
