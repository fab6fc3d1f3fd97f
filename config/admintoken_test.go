package config

import (
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
			"adminTokenFile", []string{"is not set", "is not a loopback address"}},
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
