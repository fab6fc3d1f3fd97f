// Package wire makes the options of the packages that sync and serve from
// the configuration, which none of them reads: the daemon (cmd/foldermirror),
// the tests' set-up and the benchmark build them alike. Each function that
// takes opts returns them, the options the caller sets itself (its logger,
// its index...), with those the configuration says.
package wire

import (
	"log/slog"

	"crypto/sha256"
	"encoding/hex"
	"maps"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/googleclient"
	"github.com/foldermirror/foldermirror/httpapi"
	"github.com/foldermirror/foldermirror/httpapi/admin"
	"github.com/foldermirror/foldermirror/httpapi/auth"
	"github.com/foldermirror/foldermirror/push"
	"github.com/foldermirror/foldermirror/schedule"
	"github.com/foldermirror/foldermirror/syncer"
	"github.com/prometheus/client_golang/prometheus"
)

// AuthOptions returns opts with the tokens the configuration accepts and
// its domains' users and security codes.
func AuthOptions(cfg *config.Config, opts auth.Options) auth.Options {
	a := cfg.Auth
	opts.ClockSkew = a.ClockSkew
	opts.Google = auth.Google{ClientIDs: a.Google.ClientIDs, JWKSURL: a.Google.JWKSURL, TokeninfoURL: a.Google.TokeninfoURL}
	opts.Microsoft = auth.Microsoft{JWKSURLs: a.Microsoft.JWKSURLs}
	for _, t := range a.Microsoft.Tenants {
		opts.Microsoft.Tenants = append(opts.Microsoft.Tenants, auth.Tenant{ID: t.TenantID, ApplicationIDs: t.ApplicationIDs})
	}
	opts.Domains = make([]auth.Domain, len(cfg.Domains))
	for i, d := range cfg.Domains {
		opts.Domains[i] = auth.Domain{Name: d.Name, Users: d.Users, SecurityCodes: securityCodes(d.SecurityCodes)}
	}
	return opts
}

// securityCodes returns a domain's security codes as auth takes them.
func securityCodes(codes []config.SecurityCode) []auth.SecurityCode {
	out := make([]auth.SecurityCode, 0, len(codes))
	for _, sc := range codes {
		digest, err := hex.DecodeString(sc.SHA256)
		if err != nil || len(digest) != sha256.Size {
			continue // config.Parse refuses it: never matched, were it let through
		}
		code := auth.SecurityCode{SHA256: [sha256.Size]byte(digest), Expires: sc.Expires}
		if email, ok := sc.ActAsUser(); ok {
			code.ActAsUser = email
		} else {
			code.ActAsAdmin = true
		}
		out = append(out, code)
	}
	return out
}

// APIOptions returns opts with a set of the configured libraries unless
// opts has one, the domains the configuration serves, each domain's flags
// resolved (flagDefaults, under its own), the trusted proxies and the
// callers' budget.
func APIOptions(cfg *config.Config, opts httpapi.Options) httpapi.Options {
	if opts.Libraries == nil {
		opts.Libraries = fm.NewLibrarySet(cfg.CoreLibraries())
	}
	opts.Domains = make([]httpapi.Domain, len(cfg.Domains))
	for i, d := range cfg.Domains {
		flags := map[string]string{}
		maps.Copy(flags, cfg.FlagDefaults)
		maps.Copy(flags, d.Flags)
		opts.Domains[i] = httpapi.Domain{Name: d.Name, AllowlistedDomains: d.AllowlistedDomains, Flags: flags}
	}
	opts.TrustedProxies = cfg.TrustedProxyPrefixes()
	opts.CallerRequestsPerSecond, opts.CallerBurst = cfg.Limits.CallerRequestsPerSecond, cfg.Limits.CallerBurst
	opts.CallerConcurrent = cfg.Limits.CallerConcurrent
	return opts
}

// AdminOptions returns opts with the admin listener's configured address
// and the libraries the configuration syncs.
func AdminOptions(cfg *config.Config, opts admin.Options) admin.Options {
	opts.Listen = cfg.AdminListen
	if opts.Libraries == nil {
		opts.Libraries = fm.NewLibrarySet(cfg.CoreLibraries())
	}
	return opts
}

// GoogleOptions are the options of the Google clients cfg's storage
// describes.
func GoogleOptions(cfg *config.Config) googleclient.Options {
	return googleclient.Options{
		CredentialsFile:   cfg.Storage.CredentialsFile,
		DriveEndpoint:     cfg.Storage.Endpoint,
		DirectoryEndpoint: cfg.Storage.DirectoryEndpoint,
		RequestsPerSecond: cfg.Storage.RequestsPerSecond,
	}
}

// Libraries returns a set of cfg's libraries, none discovered yet: the
// one a process makes at start, which every package that syncs or serves
// then reads.
func Libraries(cfg *config.Config) *fm.LibrarySet { return fm.NewLibrarySet(cfg.CoreLibraries()) }

// SyncerOptions are the options of a syncer of the libraries libs and of
// cfg's domains.
func SyncerOptions(cfg *config.Config, libs *fm.LibrarySet) syncer.Options {
	opts := syncer.Options{Libraries: libs, Concurrency: cfg.Storage.Concurrency}
	for _, d := range cfg.Domains {
		opts.Domains = append(opts.Domains, syncer.Domain{Name: d.Name, AdminEmail: d.AdminEmail})
	}
	return opts
}

// Plan names what there is to sync: the directories of cfg's domains that
// have an adminEmail, and the libraries libs.
func Plan(cfg *config.Config, libs *fm.LibrarySet) schedule.Plan {
	var p schedule.Plan
	for _, d := range cfg.Domains {
		if d.AdminEmail != "" {
			p.Directories = append(p.Directories, d.Name)
		}
	}
	p.Libraries = libs
	return p
}

// SchedulerOptions returns opts with the plan of cfg's directories and of
// opts.Plan.Libraries, cfg's schedules and concurrency, and the share of
// storage.requestsPerSecond a round of incremental polls may take.
func SchedulerOptions(cfg *config.Config, opts schedule.Options) schedule.Options {
	opts.Incremental, opts.Full = cfg.Schedule.Incremental, cfg.Schedule.Full
	opts.Concurrency = cfg.Storage.Concurrency
	opts.Plan = Plan(cfg, opts.Plan.Libraries)
	opts.PollsPerSecond = cfg.Storage.RequestsPerSecond * pollShare
	return opts
}

// pollShare is the share of storage.requestsPerSecond that a round of
// incremental polls (the safety net under push) may take, leaving the rest
// to the syncs that notifications and requests start.
const pollShare = 0.5

// PushOptions returns opts with cfg's push.address and push.channelTtl, a
// set of cfg's libraries unless opts has one, the storage accounts whose
// shared drives are discovered, and the share of storage.requestsPerSecond
// the channels' calls may take.
func PushOptions(cfg *config.Config, opts push.Options) push.Options {
	opts.Address, opts.ChannelTTL = cfg.Push.Address, cfg.Push.ChannelTTL
	if opts.Libraries == nil {
		opts.Libraries = fm.NewLibrarySet(cfg.CoreLibraries())
	}
	for _, d := range cfg.SharedDriveDiscoveries() {
		opts.DiscoveryAccounts = append(opts.DiscoveryAccounts, d.StorageAccount)
	}
	opts.CallsPerSecond = cfg.Storage.RequestsPerSecond * pushShare / push.RequestsPerWatch
	return opts
}

// pushShare is the share of storage.requestsPerSecond that registering,
// renewing and stopping push channels may take. The keeper's rate counts
// its calls, and a watch is push.RequestsPerWatch requests (a stop one):
// counted as watches, its calls keep within the share.
const pushShare = 0.25

// NewSyncer returns the syncer of the libraries libs and of cfg's domains,
// writing into idx, and the Google clients it reads with (cfg's storage),
// for other readers of Google to share; its metrics, and the clients', are
// registered with reg.
func NewSyncer(cfg *config.Config, libs *fm.LibrarySet, idx syncer.Index, logger *slog.Logger, reg prometheus.Registerer) (*syncer.Syncer, *googleclient.Clients, error) {
	gopts := GoogleOptions(cfg)
	gopts.Metrics = googleclient.NewMetrics(reg)
	clients, err := googleclient.New(gopts)
	if err != nil {
		return nil, nil, err
	}
	opts := SyncerOptions(cfg, libs)
	opts.Logger = logger
	opts.Metrics = syncer.NewMetrics(reg)
	return syncer.New(idx, clients, opts), clients, nil
}
