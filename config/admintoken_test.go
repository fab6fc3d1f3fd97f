package config

import (
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An admin listener off loopback needs adminTokenFile; a file that is set
// must hold a token. Each refusal names adminTokenFile, and none shows what
// the file holds.
func TestAdminTokenFileRefused(t *testing.T) {
	const domain = "domains: [{name: example.com}]\n"
	tests := []struct {
		name    string
		src     string
		file    string // the content of admin-token in the config's directory; "" for none
		environ []string
		key     string
		want    []string
	}{
		{"every address, no host", "adminListen: ':8081'\n" + domain, "", nil,
			"adminTokenFile", []string{"is not set", `adminListen ":8081" is not a loopback address`, "head -c 32 /dev/urandom"}},
		{"every IPv4 address", "adminListen: '0.0.0.0:8081'\n" + domain, "", nil,
			"adminTokenFile", []string{"is not set", `adminListen "0.0.0.0:8081" is not a loopback address`}},
		{"every IPv6 address", "adminListen: '[::]:8081'\n" + domain, "", nil,
			"adminTokenFile", []string{"is not set", "is not a loopback address"}},
		{"a private address", "adminListen: '10.0.0.5:8081'\n" + domain, "", nil,
			"adminTokenFile", []string{"is not set", "is not a loopback address"}},
		{"a host name", "adminListen: 'admin.internal:8081'\n" + domain, "", nil,
			"adminTokenFile", []string{"is not set", "is not a loopback address (admin.internal does not resolve: "}},
		{"adminListen from a variable", domain, "", []string{"FOLDERMIRROR_ADMIN_LISTEN=:9081"},
			"adminTokenFile", []string{"is not set", `adminListen ":9081" is not a loopback address`}},
		{"a missing file", "adminTokenFile: nope\n" + domain, "", nil,
			"adminTokenFile", []string{"cannot read the admin token file ", "nope: no such file or directory"}},
		{"a directory", "adminTokenFile: .\n" + domain, "", nil,
			"adminTokenFile", []string{"cannot read the admin token file ", "is a directory"}},
		{"an empty file", "adminTokenFile: admin-token\n" + domain, "\n", nil,
			"adminTokenFile", []string{"the admin token file ", "admin-token is empty"}},
		{"blanks only", "adminListen: ':8081'\nadminTokenFile: admin-token\n" + domain, " \t\r\n", nil,
			"adminTokenFile", []string{"admin-token is empty"}},
		{"too long", "adminTokenFile: admin-token\n" + domain, strings.Repeat("s3cret", 1000), nil,
			"adminTokenFile", []string{"admin-token is longer than 4096 bytes"}},
		{"a missing file from a variable", domain, "", []string{"FOLDERMIRROR_ADMIN_TOKEN_FILE=/nonexistent/token"},
			"FOLDERMIRROR_ADMIN_TOKEN_FILE", []string{"cannot read the admin token file /nonexistent/token"}},
	}
	resolveAs(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.file != "" {
				writeFile(t, dir, "admin-token", tt.file)
			}
			_, err := Parse([]byte(tt.src), filepath.Join(dir, "config.yaml"), tt.environ)
			wantProblem(t, err, tt.key, tt.want...)
			if err != nil && strings.Contains(err.Error(), "s3cret") {
				t.Errorf("the error shows the token: %v", err)
			}
		})
	}
}

// Loopback needs no token; a token file is read relative to the config
// file, or from FOLDERMIRROR_ADMIN_TOKEN_FILE, and its content trimmed.
func TestAdminToken(t *testing.T) {
	const domain = "domains: [{name: example.com}]\n"
	tests := []struct {
		name    string
		src     string
		environ []string
		want    string
	}{
		{"default adminListen", domain, nil, ""},
		{"127.0.0.1", "adminListen: '127.0.0.1:8081'\n" + domain, nil, ""},
		{"another loopback IPv4", "adminListen: '127.0.0.2:8081'\n" + domain, nil, ""},
		{"IPv6 loopback", "adminListen: '[::1]:8081'\n" + domain, nil, ""},
		{"localhost", "adminListen: 'localhost:8081'\n" + domain, nil, ""},
		{"off loopback with a token", "adminListen: ':8081'\nadminTokenFile: secrets/admin-token\n" + domain, nil, "s3cret token"},
		{"loopback with a token", "adminTokenFile: secrets/admin-token\n" + domain, nil, "s3cret token"},
		{"a token from a variable", domain, []string{"FOLDERMIRROR_ADMIN_TOKEN_FILE=secrets/admin-token"}, "s3cret token"},
		{"a variable, off loopback", domain, []string{"FOLDERMIRROR_ADMINTOKENFILE=secrets/admin-token", "FOLDERMIRROR_ADMINLISTEN=0.0.0.0:1"}, "s3cret token"},
	}
	resolveAs(t, map[string][]string{"localhost": {"127.0.0.1", "::1"}})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeFile(t, dir, "secrets/admin-token", "  s3cret token\n")
			c, err := Parse([]byte(tt.src), filepath.Join(dir, "config.yaml"), tt.environ)
			if err != nil {
				t.Fatal(err)
			}
			if tt.want != "" && c.AdminTokenFile != path {
				t.Errorf("adminTokenFile %q; want %q", c.AdminTokenFile, path)
			}
			token, err := c.AdminToken()
			if err != nil || token != tt.want {
				t.Errorf("AdminToken() = %q, %v; want %q", token, err, tt.want)
			}
		})
	}
}

// A token file that other users may read is refused, like ssh refuses such
// a key: the problem names adminTokenFile and the file, and says chmod 600.
func TestAdminTokenFileOpenToOthers(t *testing.T) {
	const src = "adminListen: ':8081'\nadminTokenFile: admin-token\ndomains: [{name: example.com}]\n"
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o660, 0o620, 0o602, 0o601, 0o610} {
		t.Run(mode.String(), func(t *testing.T) {
			path := writeFile(t, t.TempDir(), "admin-token", "s3cret token\n")
			if err := os.Chmod(path, mode); err != nil {
				t.Fatal(err)
			}
			_, err := Parse([]byte(src), filepath.Join(filepath.Dir(path), "config.yaml"), nil)
			wantProblem(t, err, "adminTokenFile", path, "other users", "chmod 600 "+path)
			if err != nil && strings.Contains(err.Error(), "s3cret") {
				t.Errorf("the error shows the token: %v", err)
			}
		})
	}
	for _, mode := range []os.FileMode{0o600, 0o400} {
		t.Run(mode.String(), func(t *testing.T) {
			path := writeFile(t, t.TempDir(), "admin-token", "s3cret token\n")
			if err := os.Chmod(path, mode); err != nil {
				t.Fatal(err)
			}
			c, err := Parse([]byte(src), filepath.Join(filepath.Dir(path), "config.yaml"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if token, err := c.AdminToken(); err != nil || token != "s3cret token" {
				t.Errorf("AdminToken() = %q, %v; want the token", token, err)
			}
		})
	}
}

// Whether adminListen is loopback is judged by what its host resolves to:
// a name (localhost included) is loopback only when every address it
// resolves to is; one that does not resolve is not.
func TestAdminListenResolved(t *testing.T) {
	resolveAs(t, map[string][]string{
		"localhost":      {"10.0.0.5"},
		"mixed.internal": {"127.0.0.1", "10.0.0.5"},
		"lo.internal":    {"127.0.0.1", "::1"},
	})
	const domain = "domains: [{name: example.com}]\n"
	for _, tt := range []struct {
		host string
		says string // "" when accepted
	}{
		{"localhost", `adminListen "localhost:8081" is not a loopback address (localhost resolves to 10.0.0.5)`},
		{"mixed.internal", `adminListen "mixed.internal:8081" is not a loopback address (mixed.internal resolves to 127.0.0.1, 10.0.0.5)`},
		{"nowhere.internal", `adminListen "nowhere.internal:8081" is not a loopback address (nowhere.internal does not resolve:`},
		{"lo.internal", ""},
		{"127.0.0.1", ""},
	} {
		t.Run(tt.host, func(t *testing.T) {
			_, err := Parse([]byte("adminListen: '"+tt.host+":8081'\n"+domain), filepath.Join(t.TempDir(), "config.yaml"), nil)
			if tt.says == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			wantProblem(t, err, "adminTokenFile", "is not set", tt.says)
		})
	}
}

// An admin listener that bound an address off loopback needs
// adminTokenFile, whatever adminListen said.
func TestCheckAdminBound(t *testing.T) {
	c := &Config{AdminListen: "localhost:8081"}
	for _, tt := range []struct {
		bound string
		ok    bool
	}{
		{"127.0.0.1:8081", true},
		{"[::1]:8081", true},
		{"10.0.0.5:8081", false},
		{"0.0.0.0:8081", false},
		{"[::]:8081", false},
	} {
		err := c.CheckAdminBound(net.TCPAddrFromAddrPort(netip.MustParseAddrPort(tt.bound)))
		switch {
		case tt.ok && err != nil:
			t.Errorf("bound %s: %v", tt.bound, err)
		case !tt.ok && (err == nil || !strings.HasPrefix(err.Error(), "adminTokenFile: is not set, and adminListen \"localhost:8081\" bound "+tt.bound+", not a loopback address")):
			t.Errorf("bound %s: %v; want a refusal naming adminTokenFile and the address bound", tt.bound, err)
		}
	}
	c.AdminTokenFile = "admin-token"
	if err := c.CheckAdminBound(&net.TCPAddr{IP: net.IPv4zero, Port: 8081}); err != nil {
		t.Errorf("with a token: %v", err)
	}
}

// resolveAs makes the configuration resolve each host name of resolves to
// its addresses until the test ends, and no other: no test asks DNS. The
// tests that call it must not run in parallel.
func resolveAs(t *testing.T, resolves map[string][]string) {
	t.Helper()
	lookupNetIP = func(_ context.Context, _, host string) ([]netip.Addr, error) {
		var addrs []netip.Addr
		for _, a := range resolves[host] {
			addrs = append(addrs, netip.MustParseAddr(a))
		}
		if len(addrs) == 0 {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
		return addrs, nil
	}
	t.Cleanup(func() { lookupNetIP = net.DefaultResolver.LookupNetIP })
}
