package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"strings"
)

// maxAdminTokenBytes bounds the admin token file: a token is far shorter.
const maxAdminTokenBytes = 4096

// makeAdminToken says how to make a token file, for messages.
const makeAdminToken = "expected a file holding the admin listener's bearer token, such as one made with " +
	"head -c 32 /dev/urandom | base64 > admin-token"

// AdminToken returns the bearer token the admin listener requires: the
// content of AdminTokenFile, trimmed, or "" when no file is set. Its error
// names the file, never what the file holds.
func (c *Config) AdminToken() (string, error) {
	if c.AdminTokenFile == "" {
		return "", nil
	}
	token, err := readAdminToken(c.AdminTokenFile)
	if err != nil {
		return "", fmt.Errorf("adminTokenFile: %w", err)
	}
	return token, nil
}

// validateAdminToken checks that a set token file holds a token, and that
// an admin listener off loopback has one.
func validateAdminToken(c *Config, ck *checker) {
	if c.AdminTokenFile != "" {
		if _, err := readAdminToken(c.AdminTokenFile); err != nil {
			ck.add("adminTokenFile", "%v; %s", err, makeAdminToken)
		}
		return
	}
	if _, _, err := net.SplitHostPort(c.AdminListen); err != nil || IsLoopback(c.AdminListen) {
		return // a malformed adminListen is a problem of its own
	}
	ck.add("adminTokenFile", "is not set, and adminListen %q is not a loopback address: anyone who reaches it could start syncs and read /status; %s",
		c.AdminListen, makeAdminToken)
}

// IsLoopback tells whether a listener on addr (host:port) is reached from
// this machine only: its host is localhost or a loopback IP. No host,
// 0.0.0.0 and :: bind every address.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// readAdminToken returns the content of the token file at path, trimmed.
func readAdminToken(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", cannotRead(path, err)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxAdminTokenBytes+1))
	_ = f.Close() // read only: its close loses nothing
	switch {
	case err != nil:
		return "", cannotRead(path, err)
	case len(data) > maxAdminTokenBytes:
		return "", fmt.Errorf("the admin token file %s is longer than %d bytes", path, maxAdminTokenBytes)
	}
	token := strings.TrimSpace(string(data))
	if token == "" {
		return "", fmt.Errorf("the admin token file %s is empty", path)
	}
	return token, nil
}

// cannotRead says that the token file at path cannot be read, and why,
// without repeating the path that a *fs.PathError holds.
func cannotRead(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("cannot read the admin token file %s: %w", path, err)
}
