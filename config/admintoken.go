package config

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"
)

// maxAdminTokenBytes bounds the admin token file: a token is far shorter.
const maxAdminTokenBytes = 4096

// makeAdminToken says how to make a token file, for messages.
const makeAdminToken = "expected a file holding the admin listener's bearer token, that only its owner may read, such as one made with " +
	"head -c 32 /dev/urandom | base64 > admin-token && chmod 600 admin-token"

// offLoopback says why an admin listener off loopback needs a token.
const offLoopback = "anyone who reaches it could start syncs and read /status"

// resolveTimeout bounds the resolution of adminListen's host.
const resolveTimeout = 5 * time.Second

// lookupNetIP resolves a host name; tests replace it.
var lookupNetIP = net.DefaultResolver.LookupNetIP

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

// CheckAdminBound refuses an admin listener that bound an address off
// loopback (bound, what the listener says it bound) without
// AdminTokenFile: adminListen's host may have resolved elsewhere since the
// configuration was checked. Its error is the one of config check.
func (c *Config) CheckAdminBound(bound net.Addr) error {
	if c.AdminTokenFile != "" || isLoopbackAddr(bound) {
		return nil
	}
	return fmt.Errorf("adminTokenFile: is not set, and adminListen %q bound %s, not a loopback address: %s; %s",
		c.AdminListen, bound, offLoopback, makeAdminToken)
}

// validateAdminToken checks that a set token file holds a token that only
// its owner may read, and that an admin listener off loopback has one.
func validateAdminToken(c *Config, ck *checker) {
	if c.AdminTokenFile != "" {
		if _, err := readAdminToken(c.AdminTokenFile); err != nil {
			ck.add("adminTokenFile", "%v; %s", err, makeAdminToken)
		}
		return
	}
	if _, _, err := net.SplitHostPort(c.AdminListen); err != nil {
		return // a malformed adminListen is a problem of its own
	}
	if loopback, resolved := isLoopback(c.AdminListen); !loopback {
		ck.add("adminTokenFile", "is not set, and adminListen %q is not a loopback address%s: %s; %s",
			c.AdminListen, resolved, offLoopback, makeAdminToken)
	}
}

// IsLoopback tells whether a listener on addr (host:port) is reached from
// this machine only: its host is a loopback IP, or a name (localhost
// included) all of whose addresses are loopback IPs. No host, 0.0.0.0 and
// :: bind every address; a name that does not resolve is not loopback.
// The listener bound may still differ, the name resolving otherwise when
// it binds: see CheckAdminBound.
func IsLoopback(addr string) bool {
	loopback, _ := isLoopback(addr)
	return loopback
}

// isLoopback is IsLoopback, and for a host name, what it resolves to, to
// say in a message.
func isLoopback(addr string) (loopback bool, resolved string) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false, ""
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.Unmap().IsLoopback(), ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), resolveTimeout)
	defer cancel()
	ips, err := lookupNetIP(ctx, "ip", host)
	if err != nil {
		return false, fmt.Sprintf(" (%s does not resolve: %v)", host, err)
	}
	names := make([]string, len(ips))
	loopback = len(ips) > 0
	for i, ip := range ips {
		names[i] = ip.Unmap().String()
		loopback = loopback && ip.Unmap().IsLoopback()
	}
	return loopback, fmt.Sprintf(" (%s resolves to %s)", host, strings.Join(names, ", "))
}

// isLoopbackAddr tells whether a bound address is a loopback IP.
func isLoopbackAddr(a net.Addr) bool {
	ap, err := netip.ParseAddrPort(a.String())
	return err == nil && ap.Addr().Unmap().IsLoopback()
}

// readAdminToken returns the content of the token file at path, trimmed.
func readAdminToken(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", cannotRead(path, err)
	}
	if err := ownerOnly(f, path); err != nil {
		_ = f.Close() // read only: its close loses nothing
		return "", err
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

// ownerOnly refuses a token file that users other than its owner may read,
// write or run, as ssh refuses such a key. Only regular files are judged:
// reading anything else fails with its own reason.
func ownerOnly(f *os.File, path string) error {
	info, err := f.Stat()
	if err != nil {
		return cannotRead(path, err)
	}
	if mode := info.Mode(); mode.IsRegular() && mode.Perm()&0o077 != 0 {
		return fmt.Errorf("the admin token file %s is open to other users (mode %#o): chmod 600 %s", path, mode.Perm(), path)
	}
	return nil
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
