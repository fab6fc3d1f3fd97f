package main

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"

	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/httpapi"
	"github.com/foldermirror/foldermirror/httpapi/admin"
	"github.com/foldermirror/foldermirror/httpapi/auth"
)

// The API, its authentication and the admin listener do not read the
// configuration: each takes options of its own, which the functions of this
// file fill in from it. Each returns opts, the options the daemon sets
// itself (its logger, its index...), with those the configuration says.

// authOptions returns opts with the tokens the configuration accepts and
// its domains' users and security codes.
func authOptions(cfg *config.Config, opts auth.Options) auth.Options {
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

// apiOptions returns opts with the libraries and domains the configuration
// serves, each domain's flags resolved (flagDefaults, under its own), the
// trusted proxies and the callers' budget.
func apiOptions(cfg *config.Config, opts httpapi.Options) httpapi.Options {
	opts.Libraries = cfg.CoreLibraries()
	opts.Domains = make([]httpapi.Domain, len(cfg.Domains))
	for i, d := range cfg.Domains {
		flags := map[string]string{}
		maps.Copy(flags, cfg.FlagDefaults)
		maps.Copy(flags, d.Flags)
		opts.Domains[i] = httpapi.Domain{Name: d.Name, AllowlistedDomains: d.AllowlistedDomains, Flags: flags}
	}
	opts.TrustedProxies = cfg.TrustedProxyPrefixes()
	opts.CallerRequestsPerSecond, opts.CallerBurst = cfg.Limits.CallerRequestsPerSecond, cfg.Limits.CallerBurst
	return opts
}

// adminOptions returns opts with the admin listener's configured address
// and the libraries the configuration syncs.
func adminOptions(cfg *config.Config, opts admin.Options) admin.Options {
	opts.Listen = cfg.AdminListen
	opts.Libraries = make([]string, len(cfg.Libraries))
	for i, l := range cfg.Libraries {
		opts.Libraries[i] = l.ID
	}
	return opts
}
