package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/httpapi/admin"
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
	daemon, err := c.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	answer, err := daemon.Ready(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w (--timeout %s)", err, c.timeout)
	}
	if err != nil {
		return err
	}
	said := answer.String()
	if answer.Problem != "" {
		said += " (serving what it read)"
	}
	fmt.Fprintln(c.stdout, said)
	return nil
}

func (c *healthcheckCommand) Close() error { return nil }

// client returns a client of the admin listener: at --url (whose path, if
// any, is the listener's, /readyz dropped), or at adminListen with the
// admin token of the configuration ("" for none: /readyz needs none, but
// tells its details only with the token, sent where one is configured once
// the daemon proved it holds it).
func (c *healthcheckCommand) client() (*admin.Client, error) {
	if c.url != "" {
		u, _ := url.Parse(c.url) // checked by ParseFlags
		base := url.URL{Scheme: u.Scheme, Host: u.Host, Path: strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/readyz")}
		return admin.NewClient(base.String(), "", nil), nil
	}
	cfg, err := config.Load(c.configPath)
	if err != nil {
		return nil, err
	}
	base, err := admin.BaseURL(cfg.AdminListen)
	if err != nil {
		return nil, fmt.Errorf("adminListen in %s: %w", cfg.Path, err)
	}
	token, err := cfg.AdminToken()
	if err != nil {
		return nil, err
	}
	return admin.NewClient(base, token, nil), nil
}
