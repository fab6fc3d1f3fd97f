// Package config loads and validates the foldermirror configuration: a YAML
// file (see deploy/config.example.yaml) whose scalar keys may be overridden by
// FOLDERMIRROR_* environment variables.
//
// Loading is strict. An unknown key is an error, reported with its line and a
// suggestion when a known key is close, and validation reports every problem
// at once, each naming its key by full path, such as libraries[1].rootFolderId,
// or the environment variable that set it.
package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	fm "github.com/foldermirror/foldermirror"
)

// Config is the whole configuration of the daemon.
type Config struct {
	// Listen is the host:port of the REST API.
	Listen string `yaml:"listen"`
	// AdminListen is the host:port of the admin endpoints (resync, status,
	// /metrics); loopback by default.
	AdminListen string `yaml:"adminListen"`
	// DataDir is the directory of the bbolt index. A relative path is
	// resolved against the directory of the config file.
	DataDir  string   `yaml:"dataDir"`
	Storage  Storage  `yaml:"storage"`
	Schedule Schedule `yaml:"schedule"`
	Auth     Auth     `yaml:"auth"`
	Limits   Limits   `yaml:"limits"`
	Index    Index    `yaml:"index"`
	Push     Push     `yaml:"push"`
	// FlagDefaults are the feature flags of every domain, unless its Flags
	// say otherwise. Values are text: an unquoted false is "false".
	FlagDefaults map[string]string `yaml:"flagDefaults"`
	// Domains are the Workspace domains served: at least one is required,
	// for a configuration without any would serve nothing. Domains without
	// libraries, configured or discovered (sharedDrives), serve their
	// configuration flags only.
	Domains []Domain `yaml:"domains"`
	// Libraries are the folder trees mirrored, each of a configured domain.
	Libraries []Library `yaml:"libraries"`
	// AdminTokenFile, when set, is a file whose content, trimmed, is the
	// bearer token every admin request needs but GET /healthz and GET
	// /readyz. It is required when AdminListen is not a loopback address. A
	// relative path is resolved against the directory of the config file.
	AdminTokenFile string `yaml:"adminTokenFile"`
	// TrustedProxies are the reverse proxies, as CIDRs or single addresses,
	// whose X-Forwarded-For header names the API's client (see
	// TrustedProxyPrefixes).
	TrustedProxies []string `yaml:"trustedProxies"`
	// Path is the file the configuration was loaded from; it is not a key.
	Path string `yaml:"-"`
}

// Storage says how to reach Google Drive and the Directory.
type Storage struct {
	// CredentialsFile is a Google JSON key: a service account (whose
	// token_uri is honoured) or an authorized_user. A relative path is
	// resolved against the directory of the config file.
	CredentialsFile string `yaml:"credentialsFile"`
	// Endpoint, when set, replaces the Drive API endpoint (the value for
	// option.WithEndpoint, e.g. http://127.0.0.1:9000/drive/v3/).
	Endpoint string `yaml:"endpoint"`
	// DirectoryEndpoint, when set, replaces the Directory API endpoint (the
	// value for option.WithEndpoint, e.g. http://127.0.0.1:9000/).
	DirectoryEndpoint string `yaml:"directoryEndpoint"`
	// RequestsPerSecond caps the calls made to Google.
	RequestsPerSecond float64 `yaml:"requestsPerSecond"`
	// Concurrency is how many syncs (of libraries and of domains'
	// directories) run at once, and how many Drive or Directory calls each
	// sync makes in parallel; calls in flight may thus reach its square.
	Concurrency int `yaml:"concurrency"`
}

// Schedule holds the robfig/cron specs (5 fields or descriptors such as
// "@every 1m") of the syncs.
type Schedule struct {
	Incremental string `yaml:"incremental"`
	Full        string `yaml:"full"`
}

// Limits bound what one API caller may ask, with defaults no ordinary
// client reaches.
type Limits struct {
	// CallerConcurrent is how many of a caller's requests are answered at
	// once, each until its answer has left; over it, 429 with Retry-After.
	CallerConcurrent int `yaml:"callerConcurrent,omitempty"` // 0 when built in code: the default
	// CallerRequestsPerSecond is each caller's sustained request budget;
	// over it, requests are answered 429 with Retry-After.
	CallerRequestsPerSecond float64 `yaml:"callerRequestsPerSecond"`
	// CallerBurst is how many requests a caller may make at once.
	CallerBurst int `yaml:"callerBurst"`
}

// Index says where the index lives.
type Index struct {
	// URL is "" for the bbolt file in DataDir, or a postgres:// (or
	// postgresql://) URL of a database that replicas share.
	URL string `yaml:"url"`
	// LeaseTTL is how long a sync lease lasts after its holder last renewed
	// it (a PostgreSQL index's).
	LeaseTTL time.Duration `yaml:"leaseTtl"`
}

// IsPostgres tells whether the index lives in PostgreSQL.
func (i Index) IsPostgres() bool { return i.URL != "" }

// Push says whether Drive pushes its changes to the service (changes.watch
// channels), so that they are synced within seconds rather than at the next
// scheduled incremental sync.
type Push struct {
	// Address is the URL Google posts Drive's notifications to: https://
	// (Drive requires it; a proxy in front terminates TLS) or http://
	// (emulators, tests), whose path the API listener answers POST on. ""
	// turns push off: the schedule alone syncs.
	Address string `yaml:"address"`
	// ChannelTTL is the lifetime asked for each channel, from 10s to 168h;
	// each is renewed before it expires.
	ChannelTTL time.Duration `yaml:"channelTtl"`
}

// Enabled tells whether Drive is asked to push its changes.
func (p Push) Enabled() bool { return p.Address != "" }

// Auth says which identity tokens the API accepts.
type Auth struct {
	// ClockSkew is the leeway allowed when checking token times.
	ClockSkew time.Duration `yaml:"clockSkew"`
	Google    GoogleAuth    `yaml:"google"`
	Microsoft MicrosoftAuth `yaml:"microsoft"`
}

// GoogleAuth configures Google ID and access tokens.
type GoogleAuth struct {
	// ClientIDs are the accepted audiences of ID tokens.
	ClientIDs    []string `yaml:"clientIds"`
	JWKSURL      string   `yaml:"jwksUrl"`
	TokeninfoURL string   `yaml:"tokeninfoUrl"`
}

// MicrosoftAuth configures Microsoft identity platform tokens.
type MicrosoftAuth struct {
	// JWKSURLs are the key sets that may sign a token.
	JWKSURLs []string `yaml:"jwksUrls"`
	Tenants  []Tenant `yaml:"tenants"`
}

// Tenant is a Microsoft tenant whose tokens are accepted.
type Tenant struct {
	// TenantID is a lower-cased GUID.
	TenantID string `yaml:"tenantId"`
	// ApplicationIDs are the accepted audiences.
	ApplicationIDs []string `yaml:"applicationIds"`
}

// Domain is a Google Workspace domain. Its name and e-mails are lower-cased.
type Domain struct {
	Name string `yaml:"name"`
	// AdminEmail, when set, is the administrator whose Directory access
	// lists the domain's users and groups.
	AdminEmail string `yaml:"adminEmail"`
	// AllowlistedDomains are other domains whose users may be granted access.
	AllowlistedDomains []string       `yaml:"allowlistedDomains"`
	Users              []string       `yaml:"users"`
	SecurityCodes      []SecurityCode `yaml:"securityCodes"`
	// Flags override FlagDefaults for this domain.
	Flags map[string]string `yaml:"flags"`
	// SharedDrives, when set, makes every shared drive its storage account
	// is a member of a library of the domain (DESIGN §10); nil, no drive is
	// found by itself.
	SharedDrives *SharedDrives `yaml:"sharedDrives,omitempty"`
}

// SharedDrives is a domain's sharedDrives: the shared drives found by
// themselves, each served as a library whose ID is the drive's. Being
// inside the list domains[], its keys have no FOLDERMIRROR_* variable.
type SharedDrives struct {
	// StorageAccount is the user whose drives.list finds the drives, and
	// who reads them; it is lower-cased.
	StorageAccount string `yaml:"storageAccount"`
	// Include are drive-name patterns (path.Match): a drive is a library
	// if its name matches one. Left out, it is ["*"], every drive; so is
	// none marshalled (omitempty), as fm.SharedDriveDiscovery reads none.
	Include []string `yaml:"include,omitempty"`
	// Exclude are drive-name patterns too; a drive whose name matches one
	// is no library, whatever Include says.
	Exclude []string `yaml:"exclude,omitempty"`
	// FolderDefinitionID is the folderDefinitionId of the drives'
	// libraries, as a library's under libraries[].
	FolderDefinitionID string `yaml:"folderDefinitionId"`
}

// Core returns the sharedDrives of the domain named domain as the domain
// core knows them.
func (s *SharedDrives) Core(domain string) fm.SharedDriveDiscovery {
	return fm.SharedDriveDiscovery{Domain: domain, StorageAccount: s.StorageAccount,
		Include: slices.Clone(s.Include), Exclude: slices.Clone(s.Exclude), FolderDefinitionID: s.FolderDefinitionID}
}

// SecurityCode is a shared secret that lets its holder act as someone in a
// domain. Only its SHA-256 is configured.
type SecurityCode struct {
	// SHA256 is the lower-case hex SHA-256 of the code.
	SHA256 string `yaml:"sha256"`
	// ActAs is "admin" or "user:EMAIL".
	ActAs string `yaml:"actAs"`
	// Expires is when the code stops working; zero means never.
	Expires time.Time `yaml:"expires"`
}

// Library is a library as configured under libraries[]; Core maps it onto
// the domain core's fm.Library.
type Library struct {
	// ID names the library in URL paths.
	ID string `yaml:"id"`
	// Name is for display; it defaults to ID.
	Name string `yaml:"name"`
	// Domain is the name of the configured domain the library belongs to.
	Domain string `yaml:"domain"`
	// StorageAccount is the user whose Drive is read.
	StorageAccount string `yaml:"storageAccount"`
	// RootFolderID is the Drive ID of the root of a folder tree; exactly one
	// of it and SharedDriveID is set.
	RootFolderID string `yaml:"rootFolderId"`
	// SharedDriveID is the ID of a shared drive mirrored whole.
	SharedDriveID string `yaml:"sharedDriveId"`
	// FolderDefinitionID is the folderDefinitionId the API reports for the
	// library's folders that have none of their own in Drive.
	FolderDefinitionID string `yaml:"folderDefinitionId"`
}

// Core returns the library as the domain core knows it. (Library has
// fm.Library's fields, with their keys: a field added to one and not the
// other stops this conversion from compiling.)
func (l *Library) Core() fm.Library { return fm.Library(*l) }

// IsSharedDrive reports whether the library is a shared drive rather than a
// folder tree.
func (l *Library) IsSharedDrive() bool { return l.SharedDriveID != "" }

// Load reads the configuration file at path, applies the FOLDERMIRROR_*
// variables of the process environment and validates the result; see Parse.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	return Parse(data, path, os.Environ())
}

// Parse decodes the YAML in data, applies the FOLDERMIRROR_* variables in
// environ ("NAME=VALUE" entries, as from os.Environ) and validates the result.
// path names the file in messages, and relative paths in the configuration are
// resolved against its directory. Any problem makes the error a
// *ProblemsError listing them all; when the file has a syntax error or a
// value of the wrong type, the values are not validated until it is fixed.
func Parse(data []byte, path string, environ []string) (*Config, error) {
	c := Default()
	c.Path = path
	ck := newChecker()
	decoded := decode(data, c, ck)
	applyEnv(c, environ, ck)
	if decoded {
		c.finish()
		validate(c, ck)
	}
	if len(ck.problems) > 0 {
		return nil, &ProblemsError{Path: path, Problems: ck.problems}
	}
	return c, nil
}

// Default returns the configuration of an empty file, before validation
// (which finds it lacks a domain): what each key is when not set.
//
// A Config marshals with yaml.Marshal to the file it was decoded from, all
// keys spelled out; Parse of a Default with the keys it needs set, so
// marshalled, gives it back.
func Default() *Config {
	return &Config{
		Listen:      ":8080",
		AdminListen: "127.0.0.1:8081",
		DataDir:     "./data",
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
	}
}

// finish completes a decoded configuration: it resolves relative paths
// against the directory of the config file, lower-cases domains, e-mails,
// GUIDs and digests, names each unnamed library after its id, and includes
// every drive in sharedDrives that leave include out.
func (c *Config) finish() {
	dir := filepath.Dir(c.Path)
	c.DataDir = resolve(dir, c.DataDir)
	c.Storage.CredentialsFile = resolve(dir, c.Storage.CredentialsFile)
	c.AdminTokenFile = resolve(dir, c.AdminTokenFile)
	for i := range c.Auth.Microsoft.Tenants {
		t := &c.Auth.Microsoft.Tenants[i]
		t.TenantID = strings.ToLower(t.TenantID)
	}
	for i := range c.Domains {
		c.Domains[i].normalize()
	}
	for i := range c.Libraries {
		l := &c.Libraries[i]
		if l.Name == "" {
			l.Name = l.ID
		}
		l.Domain = strings.ToLower(l.Domain)
		l.StorageAccount = strings.ToLower(l.StorageAccount)
	}
}

// normalize lower-cases the names, e-mails and digests of d, and gives its
// sharedDrives their default include.
func (d *Domain) normalize() {
	d.Name = strings.ToLower(d.Name)
	d.AdminEmail = strings.ToLower(d.AdminEmail)
	lowerAll(d.AllowlistedDomains)
	lowerAll(d.Users)
	for i := range d.SecurityCodes {
		sc := &d.SecurityCodes[i]
		sc.SHA256 = strings.ToLower(sc.SHA256)
		if email, ok := sc.ActAsUser(); ok {
			sc.ActAs = userPrefix + strings.ToLower(email)
		}
	}
	if s := d.SharedDrives; s != nil {
		s.StorageAccount = strings.ToLower(s.StorageAccount)
		if s.Include == nil {
			s.Include = []string{"*"} // every drive
		}
	}
}

// resolve returns p, made relative to dir unless it is empty or absolute.
func resolve(dir, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// lowerAll lower-cases every element of s in place.
func lowerAll(s []string) {
	for i := range s {
		s[i] = strings.ToLower(s[i])
	}
}

// Library returns the library with the given id, or nil if there is none.
func (c *Config) Library(id string) *Library {
	for i := range c.Libraries {
		if c.Libraries[i].ID == id {
			return &c.Libraries[i]
		}
	}
	return nil
}

// CoreLibraries returns every configured library mapped onto fm.Library
// (each one's Core), in their order in the file. (A method cannot be named
// Libraries: that is the field they are decoded into.)
func (c *Config) CoreLibraries() []fm.Library {
	libs := make([]fm.Library, len(c.Libraries))
	for i := range c.Libraries {
		libs[i] = c.Libraries[i].Core()
	}
	return libs
}

// SharedDriveDiscoveries returns the sharedDrives of every domain that has
// them (each one's Core), in the domains' order in the file.
func (c *Config) SharedDriveDiscoveries() []fm.SharedDriveDiscovery {
	var rules []fm.SharedDriveDiscovery
	for i := range c.Domains {
		if s := c.Domains[i].SharedDrives; s != nil {
			rules = append(rules, s.Core(c.Domains[i].Name))
		}
	}
	return rules
}

// Domain returns the domain with the given name, compared without regard to
// case, or nil if there is none.
func (c *Config) Domain(name string) *Domain {
	for i := range c.Domains {
		if strings.EqualFold(c.Domains[i].Name, name) {
			return &c.Domains[i]
		}
	}
	return nil
}

// userPrefix starts an ActAs that names a user.
const userPrefix = "user:"

// ActAsUser returns the e-mail of an ActAs of the form "user:EMAIL" and true,
// or "" and false for "admin".
func (s SecurityCode) ActAsUser() (email string, ok bool) {
	if email, ok = strings.CutPrefix(s.ActAs, userPrefix); !ok {
		return "", false
	}
	return email, true
}
