package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/httpapi/admin"
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

// impostor plays what may answer on adminListen: a process that calls
// itself foldermirror, and knows the admin token when token is not "". It
// records the Authorization headers it is sent.
type impostor struct {
	token string
	mu    sync.Mutex
	sent  []string
}

func (p *impostor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	if a := r.Header.Get("Authorization"); a != "" {
		p.sent = append(p.sent, r.Method+" "+r.URL.Path+": "+a)
	}
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/healthz":
		answer := map[string]string{"status": "ok", "service": admin.Service}
		if challenge := r.URL.Query().Get("challenge"); p.token != "" && challenge != "" {
			answer["proof"] = admin.Proof(p.token, challenge)
		}
		json.NewEncoder(w).Encode(answer)
	case "/readyz":
		w.Write([]byte(`{"status":"ready"}`))
	default:
		http.Error(w, "no", http.StatusTeapot)
	}
}

func (p *impostor) forget() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sent = nil
}

func (p *impostor) tokensSent() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.sent)
}

// foldermirror sync and healthcheck send the admin token only to a process
// that proves it holds it (GET /healthz?challenge=): one that bound
// adminListen while the daemon was down gets nothing, and they say so.
func TestAdminTokenOnlyToItsHolder(t *testing.T) {
	fake := fmtest.StartGoogle(t)
	for _, tt := range []struct {
		name  string
		knows string // the token the process on adminListen holds
		says  string // "" when the token is sent
	}{
		{"an impostor", "", "does not prove that it holds adminTokenFile's token: not sending it"},
		{"another token", "not-the-token", "does not prove that it holds adminTokenFile's token: not sending it"},
		{"the daemon", "s3cret-token", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &impostor{token: tt.knows}
			srv := httptest.NewServer(p)
			defer srv.Close()
			c := fmtest.Config(t, fake, t.TempDir())
			c.Domains = []config.Domain{{Name: "example.com"}}
			c.AdminListen = srv.Listener.Addr().String()
			c.AdminTokenFile = filepath.Join(filepath.Dir(c.Path), "admin-token")
			writeToken(t, c.AdminTokenFile, "s3cret-token\n")
			path := fmtest.WriteConfig(t, c)
			for _, args := range [][]string{{"healthcheck", "--config", path}, {"sync", "--config", path}} {
				p.forget()
				var out, errOut bytes.Buffer
				status := run(context.Background(), args, &out, &errOut)
				said, sent := out.String()+errOut.String(), p.tokensSent()
				if tt.says == "" {
					if len(sent) == 0 {
						t.Errorf("%s: sent no token to the daemon; said %q", args[0], said)
					}
					continue
				}
				if len(sent) > 0 {
					t.Errorf("%s sent the token to a process that does not hold it: %q", args[0], sent)
				}
				if status != 1 || !strings.Contains(said, srv.Listener.Addr().String()) || !strings.Contains(said, tt.says) {
					t.Errorf("%s: status %d, said %q; want 1 and %q", args[0], status, said, tt.says)
				}
			}
		})
	}
}
