package config

import (
	"errors"
	"math"
	"net"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

var (
	guidPattern      = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	sha256Pattern    = regexp.MustCompile(`^[0-9a-f]{64}$`)
	libraryIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
	labelPattern     = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
)

// maxClockSkew is the largest auth.clockSkew accepted.
const maxClockSkew = 10 * time.Minute

// validate checks every key of a decoded and finished configuration.
func validate(c *Config, ck *checker) {
	ck.hostPort("listen", c.Listen)
	ck.hostPort("adminListen", c.AdminListen)
	validateAdminToken(c, ck)
	for i, p := range c.TrustedProxies {
		validateProxy(p, index("trustedProxies", i), ck)
	}
	if c.DataDir == "" {
		ck.add("dataDir", "is empty; expected the directory of the index, such as ./data")
	}
	validateStorage(c, ck)
	validateLimits(c.Limits, ck)
	validateIndex(c.Index, ck)
	validatePush(c.Push, ck)
	validateSchedule(c.Schedule, ck)
	validateAuth(c.Auth, ck)
	validateFlags(c.FlagDefaults, "flagDefaults", ck)
	validateDomains(c.Domains, ck)
	if len(c.Domains) == 0 {
		ck.add("domains", "is empty; expected at least one domain (domains[].name) and the libraries to mirror "+
			"(libraries[] with id, domain, storageAccount and rootFolderId or sharedDriveId): without them the API serves nothing")
	}
	ids := map[string]string{}
	for i, l := range c.Libraries {
		validateLibrary(c, l, index("libraries", i), ids, ck)
	}
}

func validateStorage(c *Config, ck *checker) {
	s := c.Storage
	switch {
	case s.CredentialsFile != "":
		ck.keyFile("storage.credentialsFile", s.CredentialsFile)
	case len(c.Libraries) > 0 || slices.ContainsFunc(c.Domains, func(d Domain) bool { return d.AdminEmail != "" || d.SharedDrives != nil }):
		ck.add("storage.credentialsFile", "is missing; expected the path of a Google JSON key (service_account or authorized_user), required when libraries, a domain adminEmail or a domain sharedDrives are configured")
	}
	if s.Endpoint != "" {
		ck.httpURL("storage.endpoint", s.Endpoint)
	}
	if s.DirectoryEndpoint != "" {
		ck.httpURL("storage.directoryEndpoint", s.DirectoryEndpoint)
	}
	ck.rate("storage.requestsPerSecond", s.RequestsPerSecond, 50)
	if s.Concurrency < 1 || s.Concurrency > 256 {
		ck.add("storage.concurrency", "%d is out of range; expected an integer from 1 to 256", s.Concurrency)
	}
}

func validateIndex(i Index, ck *checker) {
	if i.URL != "" {
		u, err := url.Parse(i.URL)
		switch {
		case err != nil:
			ck.add("index.url", "is not a URL (%v); expected postgres://user@host:5432/database, or nothing for the bbolt file in dataDir", redactURLError(err))
		case u.Scheme != "postgres" && u.Scheme != "postgresql":
			ck.add("index.url", "has the scheme %q; expected postgres:// or postgresql:// (a PostgreSQL database), or nothing for the bbolt file in dataDir", u.Scheme)
		case u.Host == "" && u.Query().Get("host") == "":
			ck.add("index.url", "names no host; expected postgres://user@host:5432/database")
		case strings.Trim(u.Path, "/") == "":
			ck.add("index.url", "names no database; expected postgres://user@host:5432/database")
		}
	}
	if i.LeaseTTL < 3*time.Second || i.LeaseTTL > time.Hour {
		ck.add("index.leaseTtl", "%s is out of range; expected a duration from 3s to 1h, such as 30s", i.LeaseTTL)
	}
}

// redactURLError drops the URL from a url.Parse error: it may hold a
// password.
func redactURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func validateLimits(l Limits, ck *checker) {
	if l.CallerConcurrent < 1 {
		ck.add("limits.callerConcurrent", "%d is out of range; expected an integer of at least 1", l.CallerConcurrent)
	}
	ck.rate("limits.callerRequestsPerSecond", l.CallerRequestsPerSecond, 1000)
	if l.CallerBurst < 1 {
		ck.add("limits.callerBurst", "%d is out of range; expected an integer of at least 1", l.CallerBurst)
	}
}

func validateSchedule(s Schedule, ck *checker) {
	for _, spec := range []struct{ key, spec string }{{"schedule.incremental", s.Incremental}, {"schedule.full", s.Full}} {
		if _, err := cron.ParseStandard(spec.spec); err != nil {
			ck.add(spec.key, "%q is not a cron spec (%v); expected 5 fields such as \"0 3 * * *\" or a descriptor such as \"@every 1m\" or \"@daily\"", spec.spec, err)
		}
	}
}

func validateAuth(a Auth, ck *checker) {
	if a.ClockSkew < 0 || a.ClockSkew > maxClockSkew {
		ck.add("auth.clockSkew", "%v is out of range; expected a duration from 0s to %v", a.ClockSkew, maxClockSkew)
	}
	for i, id := range a.Google.ClientIDs {
		if strings.TrimSpace(id) == "" {
			ck.add(index("auth.google.clientIds", i), "is empty; expected an OAuth client ID such as 123.apps.googleusercontent.com")
		}
	}
	ck.httpURL("auth.google.jwksUrl", a.Google.JWKSURL)
	ck.httpURL("auth.google.tokeninfoUrl", a.Google.TokeninfoURL)
	m := a.Microsoft
	if len(m.Tenants) > 0 && len(m.JWKSURLs) == 0 {
		ck.add("auth.microsoft.jwksUrls", "is empty; expected the URLs of Microsoft's signing keys, required when tenants are configured")
	}
	for i, u := range m.JWKSURLs {
		ck.httpURL(index("auth.microsoft.jwksUrls", i), u)
	}
	tenants := map[string]string{}
	for i, t := range m.Tenants {
		validateTenant(t, index("auth.microsoft.tenants", i), tenants, ck)
	}
}

func validateTenant(t Tenant, key string, seen map[string]string, ck *checker) {
	if !guidPattern.MatchString(t.TenantID) {
		ck.add(key+".tenantId", "%q is not a GUID; expected a tenant ID such as 00000000-0000-0000-0000-000000000000", t.TenantID)
	} else {
		ck.once(seen, key+".tenantId", t.TenantID, "tenant")
	}
	if len(t.ApplicationIDs) == 0 {
		ck.add(key+".applicationIds", "is empty; expected the application (client) IDs whose tokens are accepted")
	}
	for i, id := range t.ApplicationIDs {
		if strings.TrimSpace(id) == "" {
			ck.add(index(key+".applicationIds", i), "is empty; expected an application (client) ID")
		}
	}
}

func validateFlags(flags map[string]string, key string, ck *checker) {
	if _, ok := flags[""]; ok {
		ck.add(key, "has a flag with an empty name; expected names such as someFlag")
	}
}

func validateDomains(ds []Domain, ck *checker) {
	names := map[string]string{}
	codes := map[string]string{}
	for i, d := range ds {
		key := index("domains", i)
		if ck.domainName(key+".name", d.Name) {
			ck.once(names, key+".name", d.Name, "domain")
		}
		if d.AdminEmail != "" {
			ck.member(key+".adminEmail", d.AdminEmail, d.Name)
		}
		for j, a := range d.AllowlistedDomains {
			ck.domainName(index(key+".allowlistedDomains", j), a)
		}
		for j, u := range d.Users {
			ck.member(index(key+".users", j), u, d.Name)
		}
		for j, sc := range d.SecurityCodes {
			validateCode(sc, index(key+".securityCodes", j), d.Name, codes, ck)
		}
		validateFlags(d.Flags, key+".flags", ck)
		if d.SharedDrives != nil {
			validateSharedDrives(d.SharedDrives, key+".sharedDrives", ck)
		}
	}
}

// validateSharedDrives checks the sharedDrives of a domain, at key.
func validateSharedDrives(s *SharedDrives, key string, ck *checker) {
	ck.storageAccount(key+".storageAccount", s.StorageAccount, "whose shared drives are the domain's libraries")
	if s.Include != nil && len(s.Include) == 0 {
		ck.add(key+".include", `is empty, which includes no drive; expected drive-name patterns, or no include for every drive (["*"])`)
	}
	validatePatterns(s.Include, key+".include", ck)
	validatePatterns(s.Exclude, key+".exclude", ck)
}

// validatePatterns checks the drive-name patterns of the list at key.
func validatePatterns(patterns []string, key string, ck *checker) {
	const want = `expected a drive-name pattern of Go's path.Match (* any run of characters, / included, ? one, [a-z] one of a class, \ escaping the next), such as "Team *"`
	for i, p := range patterns {
		if p == "" {
			ck.add(index(key, i), "is empty, which matches no drive; "+want)
			continue
		}
		if _, err := path.Match(p, ""); err != nil {
			ck.add(index(key, i), "bad pattern %q: %v; "+want, p, err)
		}
	}
}

// validateCode checks a security code of domain; codes maps each digest seen
// so far, in any domain, to its key.
func validateCode(sc SecurityCode, key, domain string, codes map[string]string, ck *checker) {
	if !sha256Pattern.MatchString(sc.SHA256) {
		ck.add(key+".sha256", "%q is not a SHA-256 digest; expected exactly 64 hex digits, the hex SHA-256 of the code, "+
			"such as printf %%s 'THE-CODE' | sha256sum prints (make a long random code: head -c 24 /dev/urandom | base64 | tr +/ -_)", sc.SHA256)
	} else {
		ck.once(codes, key+".sha256", sc.SHA256, "security code")
	}
	const want = `expected "admin" or "user:EMAIL" with EMAIL in `
	switch email, isUser := sc.ActAsUser(); {
	case sc.ActAs == "":
		ck.add(key+".actAs", "is missing; "+want+"%s", domain)
	case isUser:
		ck.member(key+".actAs", email, domain)
	case sc.ActAs != "admin":
		ck.add(key+".actAs", "%q is not an identity; "+want+"%s", sc.ActAs, domain)
	}
}

func validateLibrary(c *Config, l Library, key string, ids map[string]string, ck *checker) {
	switch {
	case l.ID == "":
		ck.add(key+".id", "is missing; expected an identifier such as lib-eng")
	case !libraryIDPattern.MatchString(l.ID) || l.ID == "." || l.ID == "..":
		ck.add(key+".id", "%q cannot appear in URL paths; expected letters, digits, '.', '_' and '-' only (and not . or ..)", l.ID)
	default:
		ck.once(ids, key+".id", l.ID, "library id")
	}
	switch {
	case l.Domain == "":
		ck.add(key+".domain", "is missing; expected the name of one of the domains")
	case c.Domain(l.Domain) == nil:
		ck.add(key+".domain", "unknown domain %q; expected the name of a configured domain (%s)", l.Domain, domainNames(c.Domains))
	}
	ck.storageAccount(key+".storageAccount", l.StorageAccount, "whose Drive holds the library")
	const want = "expected exactly one of rootFolderId (a folder tree) and sharedDriveId (a shared drive)"
	switch {
	case l.RootFolderID != "" && l.SharedDriveID != "":
		ck.add(key+".rootFolderId", "is set and so is sharedDriveId; "+want)
	case l.RootFolderID == "" && l.SharedDriveID == "":
		ck.add(key+".rootFolderId", "is missing and so is sharedDriveId; "+want)
	}
}

// domainNames lists the names of ds, for messages.
func domainNames(ds []Domain) string {
	if len(ds) == 0 {
		return "none is configured"
	}
	names := make([]string, len(ds))
	for i, d := range ds {
		names[i] = d.Name
	}
	return strings.Join(names, ", ")
}

// once records in seen the key of the first sighting of v; a later one is a
// problem naming the first.
func (ck *checker) once(seen map[string]string, key, v, what string) {
	if first, ok := seen[v]; ok {
		ck.add(key, "duplicates %s; expected each %s to be unique", first, what)
		return
	}
	seen[v] = key
}

// rate adds a problem unless v is a finite number greater than 0 (NaN is
// not); example is a sensible value, for the message.
func (ck *checker) rate(key string, v, example float64) {
	if !(v > 0) || math.IsInf(v, 1) {
		ck.add(key, "%v is out of range; expected a number greater than 0, such as %v", v, example)
	}
}

// hostPort adds a problem unless v is host:port with a numeric port.
func (ck *checker) hostPort(key, v string) {
	_, port, err := net.SplitHostPort(v)
	if err == nil {
		_, err = strconv.ParseUint(port, 10, 16)
	}
	if err != nil {
		ck.add(key, "%q is not host:port; expected an optional host and a numeric port, such as \":8080\" or \"127.0.0.1:8081\"", v)
	}
}

// httpURL adds a problem unless v is an absolute http or https URL.
func (ck *checker) httpURL(key, v string) {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		ck.add(key, "%q is not an absolute http(s) URL; expected one such as https://host/path", v)
	}
}

// domainName adds a problem and returns false unless v is a lower-case DNS
// domain name.
func (ck *checker) domainName(key, v string) bool {
	if validDomain(v) {
		return true
	}
	ck.add(key, "%q is not a domain name; expected one such as example.com", v)
	return false
}

// storageAccount adds a problem unless email, a storage account, is an
// e-mail address; whose says which user it is, for the message.
func (ck *checker) storageAccount(key, email, whose string) {
	switch {
	case email == "":
		ck.add(key, "is missing; expected the e-mail of the user %s", whose)
	case !validEmail(email):
		ck.add(key, "%q is not an e-mail address; expected one such as storage@example.com", email)
	}
}

// member adds a problem unless email is an e-mail address in domain.
func (ck *checker) member(key, email, domain string) {
	switch {
	case !validEmail(email):
		ck.add(key, "%q is not an e-mail address; expected one in %s, such as alice@%s", email, domain, domain)
	case email[strings.LastIndexByte(email, '@')+1:] != domain:
		ck.add(key, "%q is not in domain %s; expected an address ending in @%s", email, domain, domain)
	}
}

// validEmail reports whether s looks like a lower-case e-mail address:
// a local part, an @ and a domain name.
func validEmail(s string) bool {
	local, domain, ok := strings.Cut(s, "@")
	return ok && local != "" && !strings.ContainsAny(local, " \t\r\n\"(),:;<>[\\]") && validDomain(domain)
}

// validDomain reports whether s is a lower-case DNS name of two labels or
// more, such as example.com.
func validDomain(s string) bool {
	labels := strings.Split(s, ".")
	if len(s) > 253 || len(labels) < 2 {
		return false
	}
	for _, l := range labels {
		if !labelPattern.MatchString(l) {
			return false
		}
	}
	return true
}
