package main

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/internal/fmtest"
)

// config check and serve refuse an admin listener off loopback without
// adminTokenFile, and a token file that holds no token, naming the key.
func TestAdminTokenFileRequired(t *testing.T) {
	fake := fmtest.StartGoogle(t)
	tests := []struct {
		name        string
		adminListen string
		tokenFile   string // relative to the config file; "" for none
		token       string // written to tokenFile unless "-"
		says        string
	}{
		{"every address", ":0", "", "", `adminTokenFile: is not set, and adminListen ":0" is not a loopback address`},
		{"every IPv4 address", "0.0.0.0:0", "", "", `adminTokenFile: is not set, and adminListen "0.0.0.0:0" is not a loopback address`},
		{"a missing file", "127.0.0.1:0", "admin-token", "-", "adminTokenFile: cannot read the admin token file "},
		{"an empty file", "0.0.0.0:0", "admin-token", "  \n", "adminTokenFile: the admin token file "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fmtest.Config(t, fake, t.TempDir())
			c.Domains = []config.Domain{{Name: "example.com"}}
			c.AdminListen = tt.adminListen
			if tt.tokenFile != "" {
				c.AdminTokenFile = filepath.Join(filepath.Dir(c.Path), tt.tokenFile)
				if tt.token != "-" {
					writeToken(t, c.AdminTokenFile, tt.token)
				}
			}
			path := fmtest.WriteConfig(t, c)
			for _, args := range [][]string{{"config", "check", "--config", path}, {"serve", "--config", path}} {
				var out, errOut bytes.Buffer
				status := run(context.Background(), args, &out, &errOut)
				if said := out.String() + errOut.String(); status != 1 || !strings.Contains(said, tt.says) {
					t.Errorf("%s: status %d, said %q; want 1 and %q", args[0], status, said, tt.says)
				}
			}
		})
	}
}

func writeToken(t *testing.T, path, token string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
}

// offLoopback is a listener that says it bound an address off loopback, as
// one on adminListen "localhost:8081" does where localhost resolves
// elsewhere.
type offLoopback struct{ net.Listener }

func (offLoopback) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(10, 0, 0, 5), Port: 8081} }

// The daemon judges its admin listener by the address it bound, not by
// adminListen: bound off loopback without adminTokenFile, it refuses to
// start, naming adminTokenFile.
func TestServeJudgesTheAdminAddressBound(t *testing.T) {
	c := fmtest.Config(t, fmtest.StartGoogle(t), t.TempDir())
	c.Domains = []config.Domain{{Name: "example.com"}}
	cfg, err := config.Load(fmtest.WriteConfig(t, c))
	if err != nil {
		t.Fatal(err)
	}
	ls, err := bindListeners("127.0.0.1:0", "listen", "127.0.0.1:0", "adminListen")
	if err != nil {
		t.Fatal(err)
	}
	ls.admin = offLoopback{ls.admin}
	d, err := startDaemon(cfg, slog.New(slog.DiscardHandler), ls)
	if err == nil {
		d.Close()
		t.Fatal("the daemon started with its admin listener on 10.0.0.5:8081 and no adminTokenFile")
	}
	if want := `adminTokenFile: is not set, and adminListen "127.0.0.1:0" bound 10.0.0.5:8081, not a loopback address`; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("refused with %q; want %q", err, want)
	}
}
