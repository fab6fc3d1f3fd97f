package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/pgtest"
)

// The one way to reach an index: a bbolt index is reached at once; a
// database that does not answer is told of, then tried again until the
// context ends, and named under index.url; a database foldermirror must
// not use fails at once, under index.url, saying why.
func TestReach(t *testing.T) {
	closed := closedAddress(t)
	for _, tc := range []struct {
		name string
		url  func(t *testing.T) string
		// refused: reach fails at once; unreachable: it tells of a failure
		// and waits.
		refused, unreachable bool
		want                 string // the error begins so ("" for none)
		says                 string // and says so
	}{
		{name: "bbolt", url: func(*testing.T) string { return "" }},
		{name: "unreachable", url: func(*testing.T) string { return "postgres://fm@" + closed + "/fm" },
			unreachable: true, want: "index.url: the database " + closed + "/fm: ", says: "gave up trying"},
		{name: "another service's database", url: func(t *testing.T) string {
			url := pgtest.NewDatabase(t)
			pgtest.Exec(t, url, "CREATE TABLE invoices (id int)")
			return url
		}, refused: true, want: "index.url: index database ", says: "tables of another service (invoices)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &config.Config{DataDir: t.TempDir(), Index: config.Index{URL: tc.url(t)}}
			db, err := openIndex(cfg, slog.New(slog.DiscardHandler), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var told error
			reached, err := reach(ctx, db, func(err error) { told = err })
			if tc.refused {
				if !errors.Is(err, fm.ErrIndexRefused) || !strings.HasPrefix(err.Error(), tc.want+db.Info(ctx).Location+": ") ||
					!strings.Contains(err.Error(), tc.says) {
					t.Errorf("reach: %v; want it refused at once, beginning %q and saying %q", err, tc.want, tc.says)
				}
				return
			}
			if err != nil {
				t.Fatalf("reach: %v", err)
			}
			if (told != nil) != tc.unreachable {
				t.Errorf("told of %v; want told: %v", told, tc.unreachable)
			}
			cancel() // a database that does not answer is tried until then
			err = reached()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("reached: %v", err)
			case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.says)):
				t.Errorf("reached: %v; want an error beginning %q and saying %q", err, tc.want, tc.says)
			}
		})
	}
}

// A sync that cannot open its index (another process holds the bbolt
// file, and no daemon answers) fails saying why, and closes: it used to
// close an index it never opened, and panic.
func TestSyncIndexHeld(t *testing.T) {
	cfg := fmtest.Config(t, fmtest.StartGoogle(t), t.TempDir())
	cfg.Domains = []config.Domain{{Name: "example.com"}}
	path := fmtest.WriteConfig(t, cfg)
	held, err := openIndex(cfg, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	var out, errOut bytes.Buffer
	status := run(context.Background(), []string{"sync", "--config", path}, &out, &errOut)
	if status != 1 || !strings.Contains(errOut.String(), "locked by another process") || !strings.Contains(errOut.String(), "no daemon answered") {
		t.Errorf("sync of an index another process holds: status %d, %q; want 1, saying it is locked and no daemon answered", status, errOut.String())
	}
}

// closedAddress returns a loopback address where nothing listens.
func closedAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
