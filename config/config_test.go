package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
)

// fakeKey is a minimal service-account key; config does not parse the PEM.
const fakeKey = `{"type": "service_account", "client_email": "sync@fake.iam.gserviceaccount.com",
 "private_key": "-----BEGIN PRIVATE KEY-----\nfake\n-----END PRIVATE KEY-----\n"}`

// clearEnv removes the FOLDERMIRROR_* variables of the process for the
// duration of the test, so that Load sees none.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		name, value, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, EnvPrefix) {
			t.Setenv(name, value) // restored after the test
			if err := os.Unsetenv(name); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// writeFile writes content to dir/name, creating directories, and returns
// the path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// parse parses src as the file config.yaml of a new temporary directory that
// also holds a valid key file, whose path replaces each KEYFILE in src.
func parse(t *testing.T, src string, environ ...string) (*Config, error) {
	t.Helper()
	dir := t.TempDir()
	src = strings.ReplaceAll(src, "KEYFILE", writeFile(t, dir, "sa.json", fakeKey))
	return Parse([]byte(src), filepath.Join(dir, "config.yaml"), environ)
}

// mustParse is parse for a configuration that must be valid.
func mustParse(t *testing.T, src string, environ ...string) *Config {
	t.Helper()
	c, err := parse(t, src, environ...)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return c
}

// problems returns the problems listed by err, a *ProblemsError.
func problems(t *testing.T, err error) []Problem {
	t.Helper()
	var pe *ProblemsError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not a *ProblemsError", err, err)
	}
	return pe.Problems
}

// wantProblem fails unless err lists a problem of key whose message holds
// every one of parts, and that the text of err shows it as "KEY: MESSAGE".
func wantProblem(t *testing.T, err error, key string, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want a problem of %s", key)
	}
	for _, p := range problems(t, err) {
		if p.Key != key {
			continue
		}
		for _, part := range parts {
			if !strings.Contains(p.Message, part) {
				t.Errorf("problem %s: %q lacks %q", key, p.Message, part)
			}
		}
		if !strings.Contains(err.Error(), key+": "+p.Message) {
			t.Errorf("error text lacks %q:\n%v", key+": "+p.Message, err)
		}
		return
	}
	t.Errorf("no problem of %s in:\n%v", key, err)
}

func TestLoadExample(t *testing.T) {
	clearEnv(t)
	c, err := Load("testdata/full.yaml")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := &Config{
		Listen:      ":8080",
		AdminListen: "127.0.0.1:8081",
		DataDir:     filepath.Join("testdata", "data"),
		Storage: Storage{
			CredentialsFile:   filepath.Join("testdata", "sa.json"),
			RequestsPerSecond: 50,
			Concurrency:       8,
		},
		Schedule: Schedule{Incremental: "@every 1m", Full: "0 3 * * *"},
		Limits:   Limits{CallerConcurrent: 32, CallerRequestsPerSecond: 1000, CallerBurst: 2000},
		Index:    Index{LeaseTTL: 30 * time.Second},
		Push:     Push{Address: "https://foldermirror.example.com/drive/push", ChannelTTL: 12 * time.Hour},
		Auth: Auth{
			ClockSkew: 30 * time.Second,
			Google: GoogleAuth{
				ClientIDs:    []string{"123.apps.googleusercontent.com"},
				JWKSURL:      "https://www.googleapis.com/oauth2/v3/certs",
				TokeninfoURL: "https://oauth2.googleapis.com/tokeninfo",
			},
			Microsoft: MicrosoftAuth{
				JWKSURLs: []string{
					"https://login.microsoftonline.com/common/discovery/keys",
					"https://login.microsoftonline.com/common/discovery/v2.0/keys",
				},
				Tenants: []Tenant{{
					TenantID:       "00000000-0000-0000-0000-000000000000",
					ApplicationIDs: []string{"11111111-1111-1111-1111-111111111111"},
				}},
			},
		},
		FlagDefaults: map[string]string{"someFlag": "false"},
		Domains: []Domain{{
			Name:               "example.com",
			AdminEmail:         "admin@example.com",
			AllowlistedDomains: []string{"partner.org"},
			Users:              []string{"alice@example.com"},
			SecurityCodes: []SecurityCode{{
				SHA256:  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
				ActAs:   "admin",
				Expires: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC),
			}},
			Flags: map[string]string{"someFlag": "true"},
			SharedDrives: &SharedDrives{
				StorageAccount:     "storage@example.com",
				Include:            []string{"*"},
				Exclude:            []string{"Private *"},
				FolderDefinitionID: "default",
			},
		}},
		Libraries: []Library{{
			ID:                 "lib-eng",
			Name:               "Engineering",
			Domain:             "example.com",
			StorageAccount:     "storage@example.com",
			RootFolderID:       "1AbCdEfGhIjKlMnOpQrStUvWxYz",
			FolderDefinitionID: "default",
		}, {
			ID:             "lib-shared",
			Name:           "lib-shared",
			Domain:         "example.com",
			StorageAccount: "storage@example.com",
			SharedDriveID:  "0ABcDeFgHiJkLmNoPqR",
		}},
		Path: "testdata/full.yaml",
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("Load(testdata/full.yaml) =\n%+v\nwant\n%+v", c, want)
	}
}

func TestLoadResolvesRelativePaths(t *testing.T) {
	clearEnv(t)
	key, err := os.ReadFile("testdata/sa.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFile(t, dir, "etc/keys/sa.json", string(key))
	abs := filepath.Join(dir, "abs", "state")
	const rest = "\nstorage: {credentialsFile: keys/sa.json}\ndomains: [{name: example.com}]\n"
	writeFile(t, dir, "etc/config.yaml", "dataDir: state"+rest)
	writeFile(t, dir, "etc/abs.yaml", "dataDir: "+abs+rest)
	tests := []struct {
		name, path, wantData, wantKey string
		chdir                         bool
	}{
		{"absolute config path", filepath.Join(dir, "etc/config.yaml"), filepath.Join(dir, "etc/state"), filepath.Join(dir, "etc/keys/sa.json"), false},
		{"relative config path", "etc/config.yaml", filepath.Join("etc", "state"), filepath.Join("etc", "keys", "sa.json"), true},
		{"absolute dataDir", filepath.Join(dir, "etc/abs.yaml"), abs, filepath.Join(dir, "etc/keys/sa.json"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.chdir {
				t.Chdir(dir)
			}
			c, err := Load(tt.path)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if c.DataDir != tt.wantData || c.Storage.CredentialsFile != tt.wantKey || c.Path != tt.path {
				t.Errorf("dataDir, credentialsFile, Path = %q, %q, %q; want %q, %q, %q",
					c.DataDir, c.Storage.CredentialsFile, c.Path, tt.wantData, tt.wantKey, tt.path)
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load("testdata/absent.yaml")
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "testdata/absent.yaml") {
		t.Errorf("Load(absent) = %v; want a not-exist error naming the file", err)
	}
}

func TestDefaults(t *testing.T) {
	want := &Config{
		Listen:      ":8080",
		AdminListen: "127.0.0.1:8081",
		DataDir:     "/etc/foldermirror/data",
		Storage:     Storage{RequestsPerSecond: 50, Concurrency: 8},
		Schedule:    Schedule{Incremental: "@every 1m", Full: "0 3 * * *"},
		Limits:      Limits{CallerConcurrent: 32, CallerRequestsPerSecond: 1000, CallerBurst: 2000},
		Index:       Index{LeaseTTL: 30 * time.Second},
		Push:        Push{ChannelTTL: 24 * time.Hour},
		Auth: Auth{
			ClockSkew: 30 * time.Second,
			Google: GoogleAuth{
				JWKSURL:      "https://www.googleapis.com/oauth2/v3/certs",
				TokeninfoURL: "https://oauth2.googleapis.com/tokeninfo",
			},
			Microsoft: MicrosoftAuth{JWKSURLs: []string{
				"https://login.microsoftonline.com/common/discovery/keys",
				"https://login.microsoftonline.com/common/discovery/v2.0/keys",
			}},
		},
		Domains: []Domain{{Name: "example.com"}},
		Path:    "/etc/foldermirror/config.yaml",
	}
	// The one key without a default, a domain, is given; every other key
	// takes its default, also when present and empty.
	const domain = "domains: [{name: example.com}]\n"
	for _, src := range []string{domain, "# nothing else\n" + domain, "{domains: [{name: example.com}]}\n", "listen:\nstorage:\nauth: {google: {}, microsoft: ~}\n" + domain} {
		c, err := Parse([]byte(src), "/etc/foldermirror/config.yaml", nil)
		if err != nil {
			t.Errorf("Parse(%q): %v", src, err)
			continue
		}
		if !reflect.DeepEqual(c, want) {
			t.Errorf("Parse(%q) =\n%+v\nwant\n%+v", src, c, want)
		}
	}
}

// An empty configuration, or one without domains, would serve nothing: it
// is an error naming what to add.
func TestEmptyConfiguration(t *testing.T) {
	for _, src := range []string{"", "# nothing yet\n", "{}\n", "~\n", "listen: ':8080'\n", "domains: []\n"} {
		_, err := parse(t, src)
		wantProblem(t, err, "domains", "is empty; expected at least one domain (domains[].name)", "libraries[]", "rootFolderId or sharedDriveId")
	}
}

func TestLibraryNameDefaultsToID(t *testing.T) {
	c := mustParse(t, `
storage: {credentialsFile: 'KEYFILE'}
domains: [{name: example.com}]
libraries:
  - {id: lib-a, domain: example.com, storageAccount: s@example.com, rootFolderId: r}
  - {id: lib-b, name: Bee, domain: example.com, storageAccount: s@example.com, rootFolderId: r}
`)
	if a, b := c.Library("lib-a").Name, c.Library("lib-b").Name; a != "lib-a" || b != "Bee" {
		t.Errorf("names = %q, %q; want lib-a, Bee", a, b)
	}
}

func TestNormalisesCase(t *testing.T) {
	c := mustParse(t, `
storage: {credentialsFile: 'KEYFILE'}
auth:
  microsoft:
    tenants: [{tenantId: AAAAAAAA-0000-0000-0000-00000000000B, applicationIds: [app]}]
domains:
  - name: Example.COM
    adminEmail: Admin@Example.com
    allowlistedDomains: [Partner.ORG]
    users: [Alice@EXAMPLE.com]
    securityCodes:
      - {sha256: FEDCBA9876543210FEDCBA9876543210FEDCBA9876543210FEDCBA9876543210, actAs: user:Alice@Example.COM}
    sharedDrives: {storageAccount: Drives@Example.COM, include: [Team*], exclude: [TEAM*]}
libraries:
  - {id: Lib-Eng, domain: EXAMPLE.com, storageAccount: Storage@Example.com, rootFolderId: r}
`)
	d, l := c.Domains[0], c.Libraries[0]
	got := []string{c.Auth.Microsoft.Tenants[0].TenantID, d.Name, d.AdminEmail, d.AllowlistedDomains[0], d.Users[0],
		d.SecurityCodes[0].SHA256, d.SecurityCodes[0].ActAs, l.ID, l.Domain, l.StorageAccount,
		d.SharedDrives.StorageAccount, d.SharedDrives.Include[0], d.SharedDrives.Exclude[0]}
	// Drive names are compared as they are: patterns keep their case.
	want := []string{"aaaaaaaa-0000-0000-0000-00000000000b", "example.com", "admin@example.com", "partner.org", "alice@example.com",
		"fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210", "user:alice@example.com", "Lib-Eng", "example.com", "storage@example.com",
		"drives@example.com", "Team*", "TEAM*"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("normalised =\n%q\nwant\n%q", got, want)
	}
}

// Each domain with sharedDrives is a discovery, in file order, its
// defaults applied: every drive included, none excluded, no
// folderDefinitionId (as a library's).
func TestSharedDriveDiscoveries(t *testing.T) {
	c := mustParse(t, withDomains(
		"{name: B.example, sharedDrives: {storageAccount: Drives@B.example}}",
		"{name: none.example}",
		"{name: a.example, sharedDrives: {storageAccount: s@a.example, include: ['Team *', Sales], exclude: ['* (old)'], folderDefinitionId: team}}",
	))
	want := []fm.SharedDriveDiscovery{
		{Domain: "b.example", StorageAccount: "drives@b.example", Include: []string{"*"}},
		{Domain: "a.example", StorageAccount: "s@a.example", Include: []string{"Team *", "Sales"}, Exclude: []string{"* (old)"}, FolderDefinitionID: "team"},
	}
	got := c.SharedDriveDiscoveries()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("SharedDriveDiscoveries() =\n%+v\nwant\n%+v", got, want)
	}
	got[1].Include[0] = "changed"
	if c.Domains[2].SharedDrives.Include[0] != "Team *" {
		t.Error("a discovery shares its patterns with the configuration")
	}
	if d := mustParse(t, withDomains("{name: example.com}")).SharedDriveDiscoveries(); d != nil {
		t.Errorf("no sharedDrives: discoveries %+v; want none", d)
	}
}

func TestAccessors(t *testing.T) {
	clearEnv(t)
	c, err := Load("testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		got  any
		want any
	}{
		{"Library found", c.Library("lib-eng").Name, "Engineering"},
		{"Library is a pointer into Libraries", c.Library("lib-shared") == &c.Libraries[1], true},
		{"Library absent", c.Library("LIB-ENG") == nil, true},
		{"Domain ignores case", c.Domain("EXAMPLE.com") == &c.Domains[0], true},
		{"Domain absent", c.Domain("partner.org") == nil, true},
		{"folder tree", c.Library("lib-eng").IsSharedDrive(), false},
		{"shared drive", c.Library("lib-shared").IsSharedDrive(), true},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}

func TestActAsUser(t *testing.T) {
	tests := []struct {
		actAs, email string
		ok           bool
	}{
		{"user:alice@example.com", "alice@example.com", true},
		{"admin", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		email, ok := SecurityCode{ActAs: tt.actAs}.ActAsUser()
		if email != tt.email || ok != tt.ok {
			t.Errorf("ActAsUser(%q) = %q, %v; want %q, %v", tt.actAs, email, ok, tt.email, tt.ok)
		}
	}
}

func TestProblemsErrorFormat(t *testing.T) {
	tests := []struct {
		err  *ProblemsError
		want string
	}{
		{
			&ProblemsError{Path: "fm.yaml", Problems: []Problem{
				{"libraries[0].id", "is missing"},
				{"FOLDERMIRROR_LISTEN", "bad"},
				{"", "yaml: line 1: oops"},
			}},
			"fm.yaml: libraries[0].id: is missing\nfm.yaml: FOLDERMIRROR_LISTEN: bad\nfm.yaml: yaml: line 1: oops",
		},
		{&ProblemsError{Problems: []Problem{{"listen", "bad"}}}, "listen: bad"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() =\n%s\nwant\n%s", got, tt.want)
		}
	}
}
