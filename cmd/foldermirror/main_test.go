package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/internal/fmtest"
)

// writeKeyFile writes dir/key.json, a Google key that config accepts.
func writeKeyFile(t *testing.T, dir string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "key.json"), []byte(`{"type":"authorized_user","client_id":"c","client_secret":"s","refresh_token":"r"}`), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestConfigCheck(t *testing.T) {
	dir := t.TempDir()
	writeKeyFile(t, dir)
	const good = `
storage: {credentialsFile: key.json}
domains: [{name: example.com}]
libraries: [{id: eng, domain: example.com, storageAccount: s@example.com, rootFolderId: "1abc"}]
`
	for _, tc := range []struct {
		name, yaml string
		status     int
		says       []string
	}{
		{"valid", good, 0, []string{"valid (1 domain, 1 library)"}},
		{"empty", "", 1, []string{"domains: is empty; expected at least one domain"}},
		{"flags only", "domains: [{name: example.com, flags: {theme: dark}}]\n", 0, []string{"valid (1 domain, 0 libraries)", "configuration flags only"}},
		{"discovery", strings.Replace(good, "domains: [{name: example.com}]", "domains: [{name: example.com, sharedDrives: {storageAccount: s@example.com}}, {name: example.org}]", 1), 0,
			[]string{"valid (2 domains, 1 library, shared drives discovered in 1 domain)\n"}},
		{"bad pattern", strings.Replace(good, "domains: [{name: example.com}]", "domains: [{name: example.com, sharedDrives: {storageAccount: s@example.com, include: ['Team *', '[']}}]", 1), 1,
			[]string{`domains[0].sharedDrives.include[1]: bad pattern "[": syntax error in pattern`}},
		{"missing storage account", strings.Replace(good, "domains: [{name: example.com}]", "domains: [{name: example.com, sharedDrives: {exclude: [Old*]}}]", 1), 1,
			[]string{"domains[0].sharedDrives.storageAccount: is missing"}},
		{"both roots", strings.Replace(good, `rootFolderId: "1abc"`, `rootFolderId: "1abc", sharedDriveId: "0d"`, 1), 1, []string{"libraries[0]", "rootFolderId", "sharedDriveId"}},
		{"neither root", strings.Replace(good, `, rootFolderId: "1abc"`, ``, 1), 1, []string{"libraries[0].rootFolderId"}},
		{"unknown domain", strings.Replace(good, "domain: example.com", "domain: example.org", 1), 1, []string{"libraries[0].domain", "example.org"}},
		{"duplicate library", strings.Replace(good, "libraries: [", `libraries: [{id: eng, domain: example.com, storageAccount: s@example.com, rootFolderId: "2"}, `, 1), 1, []string{"libraries[1].id", "duplicates"}},
		{"bad cron", good + "schedule: {full: \"every day\"}\n", 1, []string{"schedule.full"}},
		{"missing key file", strings.Replace(good, "key.json", "nope.json", 1), 1, []string{"storage.credentialsFile", "nope.json"}},
		{"unknown key", good + "listne: \":80\"\n", 1, []string{"listne: unknown key"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "config.yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			var out, errOut bytes.Buffer
			status := run(context.Background(), []string{"config", "check", "--config", path}, &out, &errOut)
			said := out.String() + errOut.String()
			if status != tc.status {
				t.Errorf("status %d, want %d; said %q", status, tc.status, said)
			}
			for _, s := range tc.says {
				if !strings.Contains(said, s) {
					t.Errorf("said %q; want it to name %q", said, s)
				}
			}
		})
	}
}

// A domain that discovers shared drives serves libraries without any
// configured: config check counts it, and says no more.
func TestConfigCheckDiscoveryWithoutLibraries(t *testing.T) {
	dir := t.TempDir()
	writeKeyFile(t, dir)
	path := filepath.Join(dir, "config.yaml")
	const yaml = "storage: {credentialsFile: key.json}\ndomains: [{name: example.com, sharedDrives: {storageAccount: s@example.com}}]\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	status := run(context.Background(), []string{"config", "check", "--config", path}, &out, &errOut)
	want := path + ": valid (1 domain, 0 libraries, shared drives discovered in 1 domain)\n"
	if status != 0 || out.String() != want || errOut.Len() > 0 {
		t.Errorf("status %d, stdout %q, stderr %q; want 0, %q and nothing", status, out.String(), errOut.String(), want)
	}
}

// The command line: usage errors print the usage, then the error once,
// and exit 2; --help prints the usage on stdout and exits 0.
func TestCommandLine(t *testing.T) {
	t.Setenv("FOLDERMIRROR_CONFIG", "")
	tests := []struct {
		args   []string
		status int
		says   string // on stderr for a usage error, on stdout else
	}{
		{nil, 2, "foldermirror: no command given"},
		{[]string{"frobnicate"}, 2, `foldermirror: unknown command "frobnicate"`},
		{[]string{"config"}, 2, "foldermirror config: no subcommand given; expected check"},
		{[]string{"config", "frob"}, 2, `foldermirror config: unknown subcommand "frob"; expected check`},
		{[]string{"sync"}, 2, "foldermirror sync: --config FILE is required (or set $FOLDERMIRROR_CONFIG)"},
		{[]string{"serve"}, 2, "foldermirror serve: --config FILE is required"},
		{[]string{"config", "check"}, 2, "foldermirror config check: --config FILE is required"},
		{[]string{"serve", "--config"}, 2, "foldermirror serve: flag needs an argument: -config"},
		{[]string{"serve", "--bogus"}, 2, "foldermirror serve: flag provided but not defined: -bogus"},
		{[]string{"sync", "--config", "x", "extra"}, 2, `foldermirror sync: unexpected argument "extra"`},
		{[]string{"serve", "--config", "x", "--log-level", "loud"}, 2, `foldermirror serve: --log-level "loud": want debug, info, warn or error`},
		{[]string{"demo", "--listen", "8080"}, 2, `foldermirror demo: --listen "8080" is not host:port`},
		{[]string{"demo", "--admin-listen", "localhost"}, 2, `foldermirror demo: --admin-listen "localhost" is not host:port`},
		{[]string{"demo", "--admin-listen", ":8081"}, 2, `foldermirror demo: --admin-listen ":8081": the demo's admin listener has no token (adminTokenFile), so it stays on loopback`},
		{[]string{"demo", "--folders", "0"}, 2, "foldermirror demo: --folders 0 is out of range"},
		{[]string{"healthcheck"}, 2, "foldermirror healthcheck: --config FILE or --url URL is required"},
		{[]string{"healthcheck", "--url", "x", "--timeout", "0s"}, 2, "foldermirror healthcheck: --timeout 0s"},
		{[]string{"version", "now"}, 2, `foldermirror version: unexpected argument "now"`},

		{[]string{"--help"}, 0, "foldermirror serve --config FILE"},
		{[]string{"help"}, 0, "foldermirror healthcheck"},
		{[]string{"config", "--help"}, 0, "foldermirror config check --config FILE"},
		{[]string{"config", "-h"}, 0, "foldermirror config check --config FILE"},
		{[]string{"config", "check", "--help"}, 0, "usage: foldermirror config check --config FILE"},
		{[]string{"serve", "-h"}, 0, "usage: foldermirror serve --config FILE"},
		{[]string{"sync", "--help"}, 0, "-library ID"},
		{[]string{"demo", "--help"}, 0, "-admin-listen ADDR"},
		{[]string{"healthcheck", "--help"}, 0, "-url URL"},
		{[]string{"version", "--help"}, 0, "usage: foldermirror version"},
		{[]string{"version"}, 0, "foldermirror "},
		{[]string{"--version"}, 0, "foldermirror "},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			status := run(context.Background(), tt.args, &out, &errOut)
			if status != tt.status {
				t.Errorf("status %d, want %d\nstdout: %s\nstderr: %s", status, tt.status, out.String(), errOut.String())
			}
			if tt.status == 0 {
				if !strings.Contains(out.String(), tt.says) || errOut.Len() > 0 {
					t.Errorf("stdout %q, stderr %q; want stdout to say %q and nothing on stderr", out.String(), errOut.String(), tt.says)
				}
				return
			}
			said := errOut.String()
			usageAt, errorAt := strings.Index(said, "usage:"), strings.Index(said, tt.says)
			if usageAt < 0 || errorAt < usageAt || strings.Count(said, tt.says) != 1 || !strings.HasSuffix(strings.TrimSpace(said), strings.Split(said[errorAt:], "\n")[0]) {
				t.Errorf("stderr:\n%s\nwant the usage, then %q once, last", said, tt.says)
			}
			if strings.Contains(said, "foldermirror: foldermirror") || out.Len() > 0 {
				t.Errorf("doubled prefix, or something on stdout: %q %q", said, out.String())
			}
		})
	}
}

// A command that runs and fails exits 1, its reason naming the file.
func TestRunFailures(t *testing.T) {
	var out, errOut bytes.Buffer
	if status := run(context.Background(), []string{"sync", "--config", "/nonexistent/config.yaml"}, &out, &errOut); status != 1 ||
		!strings.Contains(errOut.String(), "/nonexistent/config.yaml") || strings.Contains(errOut.String(), "usage:") {
		t.Errorf("missing config: status %d, %q", status, errOut.String())
	}
}

// serve says a taken port at once, naming the key and the file, before it
// opens the index or syncs anything.
func TestServeTakenPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	dir := t.TempDir()
	writeKeyFile(t, dir)
	for _, key := range []string{"listen", "adminListen"} {
		t.Run(key, func(t *testing.T) {
			addrs := map[string]string{"listen": "127.0.0.1:0", "adminListen": "127.0.0.1:0"}
			addrs[key] = taken.Addr().String()
			c := config.Default()
			c.Path = filepath.Join(dir, key+".yaml")
			c.Listen, c.AdminListen = addrs["listen"], addrs["adminListen"]
			c.DataDir = filepath.Join(dir, "data-"+key)
			c.Storage.CredentialsFile = filepath.Join(dir, "key.json")
			c.Storage.Endpoint = "http://127.0.0.1:1/drive/v3/"
			c.Domains = []config.Domain{{Name: "example.com"}}
			c.Libraries = []config.Library{{ID: "eng", Domain: "example.com", StorageAccount: "s@example.com", RootFolderID: "1abc"}}
			path := fmtest.WriteConfig(t, c)
			var out, errOut bytes.Buffer
			status := run(context.Background(), []string{"serve", "--config", path}, &out, &errOut)
			want := fmt.Sprintf("foldermirror: %s in %s: %s is already in use", key, path, taken.Addr())
			if status != 1 || !strings.HasPrefix(errOut.String(), want) {
				t.Errorf("status %d, said %q; want 1 and %q", status, errOut.String(), want)
			}
			if _, err := os.Stat(filepath.Join(dir, "data-"+key)); !os.IsNotExist(err) {
				t.Errorf("the index was opened before the port was found taken (%v)", err)
			}
		})
	}
}

func TestVersionLine(t *testing.T) {
	setting := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	tests := []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"release", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.0"},
			Settings: setting("vcs.revision", "0123456789abcdef0123", "vcs.time", "2026-01-02T03:04:05Z", "vcs.modified", "false")},
			"foldermirror v1.2.0 (revision 0123456789ab, 2026-01-02T03:04:05Z) go1.26.8"},
		{"local changes", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: setting("vcs.revision", "abc", "vcs.modified", "true")},
			"foldermirror (devel) (revision abc, with local changes) go1.26.8"},
		{"no VCS", &debug.BuildInfo{GoVersion: "go1.26.8"}, "foldermirror (devel) (no VCS revision stamped: built by go run, with -buildvcs=false, or outside a git checkout) go1.26.8"},
		{"no build information", nil, "foldermirror (no build information)"},
	}
	for _, tt := range tests {
		if got := versionLine(tt.info); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// Every command's usage line and flag list name the same flags, written
// alike: "--wait DURATION" in both, not "-wait duration" in the list.
func TestUsageAgreesWithFlagList(t *testing.T) {
	inSynopsis := regexp.MustCompile(`--([a-z-]+)(?: ([A-Z]+))?`)
	inList := regexp.MustCompile(`(?m)^  (-+)([a-z-]+)(?: (\S+))?$`)
	for _, command := range [][]string{{"sync"}, {"serve"}, {"demo"}, {"healthcheck"}, {"config", "check"}, {"version"}} {
		t.Run(strings.Join(command, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			if status := run(context.Background(), append(command, "--help"), &out, &errOut); status != 0 {
				t.Fatalf("status %d: %s", status, errOut.String())
			}
			synopsis, list, _ := strings.Cut(out.String(), "\n")
			if strings.HasSuffix(synopsis, " ") {
				t.Errorf("usage line %q ends in a space", synopsis)
			}
			want := map[string]string{}
			for _, m := range inSynopsis.FindAllStringSubmatch(synopsis, -1) {
				want[m[1]] = m[2]
			}
			got := map[string]string{}
			for _, m := range inList.FindAllStringSubmatch(list, -1) {
				if m[1] != "--" {
					t.Errorf("the flag list writes %s%s; want --%s, as the usage line does", m[1], m[2], m[2])
				}
				got[m[2]] = m[3]
			}
			if !maps.Equal(got, want) {
				t.Errorf("the flag list says %v; the usage line %v:\n%s", got, want, out.String())
			}
		})
	}
}

// The README's table of commands shows each command as its --help does,
// every flag included.
func TestREADMECommandsAreTheUsage(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, command := range [][]string{{"sync"}, {"serve"}, {"demo"}, {"healthcheck"}, {"config", "check"}, {"version"}} {
		var out, errOut bytes.Buffer
		if status := run(context.Background(), append(command, "--help"), &out, &errOut); status != 0 {
			t.Fatalf("%s: status %d: %s", command, status, errOut.String())
		}
		synopsis, _, _ := strings.Cut(strings.TrimPrefix(out.String(), "usage: "), "\n")
		if row := "| `" + strings.ReplaceAll(synopsis, "|", `\|`) + "` |"; !strings.Contains(string(readme), row) {
			t.Errorf("README.md's table of commands has no row %s", row)
		}
	}
}
