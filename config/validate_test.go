package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const (
	// code and code2 are valid security-code digests.
	code  = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
	code2 = "b3ee786b5707c27d42570785081ec17f5c7db9262a01366af362a1aa61a420b9"
	guid  = "00000000-0000-0000-0000-000000000000"
)

// withDomains returns a configuration with a key file and the given domains,
// each a flow mapping.
func withDomains(domains ...string) string {
	return "storage: {credentialsFile: 'KEYFILE'}\ndomains:\n  - " + strings.Join(domains, "\n  - ") + "\n"
}

// withLibraries returns a configuration with a key file, the domain
// example.com and the given libraries, each a flow mapping.
func withLibraries(libraries ...string) string {
	return withDomains("{name: example.com}") + "libraries:\n  - " + strings.Join(libraries, "\n  - ") + "\n"
}

func TestValidation(t *testing.T) {
	const lib = "{id: lib-eng, domain: example.com, storageAccount: s@example.com, rootFolderId: r}"
	tests := []struct {
		name, src, key string
		want           []string
	}{
		{"listen without port", "listen: nope\n", "listen", []string{`"nope" is not host:port`, `":8080"`}},
		{"listen with a named port", "listen: ':http'\n", "listen", []string{"numeric port"}},
		{"port too large", "listen: ':65536'\n", "listen", []string{"host:port"}},
		{"adminListen without port", "adminListen: localhost\n", "adminListen", []string{`"localhost" is not host:port`}},
		{"empty dataDir", "dataDir: ''\n", "dataDir", []string{"is empty; expected the directory"}},
		{"index url of another scheme", "index: {url: 'mysql://db/fm'}\n", "index.url", []string{`the scheme "mysql"`, "postgres://"}},
		{"index url malformed", "index: {url: 'postgres://u:secret@[::1'}\n", "index.url", []string{"is not a URL"}},
		{"index url without database", "index: {url: 'postgres://db.example:5432/'}\n", "index.url", []string{"names no database"}},
		{"index url without host", "index: {url: 'postgres:///fm'}\n", "index.url", []string{"names no host"}},
		{"leaseTtl too short", "index: {leaseTtl: 1s}\n", "index.leaseTtl", []string{"1s is out of range; expected a duration from 3s to 1h"}},
		{"push address of another scheme", "push: {address: 'ftp://fm.example.com/drive/push'}\n", "push.address",
			[]string{`"ftp://fm.example.com/drive/push" is not an http(s) URL`, "https://foldermirror.example.com/drive/push"}},
		{"push address relative", "push: {address: /drive/push}\n", "push.address", []string{`"/drive/push" is not an http(s) URL`}},
		{"push address malformed", "push: {address: 'https://[::1/drive/push'}\n", "push.address", []string{"is not a URL (", "or nothing to poll"}},
		{"push address without host", "push: {address: 'https:///drive/push'}\n", "push.address", []string{`"https:///drive/push" names no host`}},
		{"push address without path", "push: {address: 'https://fm.example.com'}\n", "push.address", []string{`"https://fm.example.com" has no path`}},
		{"push address on the root", "push: {address: 'https://fm.example.com/'}\n", "push.address", []string{"has no path"}},
		{"push address among the folder API", "push: {address: 'https://fm.example.com/folder/v1/push'}\n", "push.address",
			[]string{"its path /folder/v1/push is among the API's own (those under /folder, /domain, /openapi.json)"}},
		{"push address on the domain API", "push: {address: 'http://127.0.0.1:8080/domain'}\n", "push.address", []string{"is among the API's own"}},
		{"push address on the OpenAPI document", "push: {address: 'http://127.0.0.1:8080/openapi.json'}\n", "push.address", []string{"is among the API's own"}},
		{"push address with a wildcard", "push: {address: 'https://fm.example.com/drive/:push'}\n", "push.address", []string{"holds ':' or '*'"}},
		{"push address with a catch-all", "push: {address: 'https://fm.example.com/drive/*'}\n", "push.address", []string{"holds ':' or '*'"}},
		{"channelTtl too short", "push: {channelTtl: 9s}\n", "push.channelTtl", []string{"9s is out of range; expected a duration from 10s to 168h"}},
		{"channelTtl too long", "push: {channelTtl: 169h}\n", "push.channelTtl", []string{"169h0m0s is out of range"}},
		{"channelTtl without push", "push: {address: '', channelTtl: 0s}\n", "push.channelTtl", []string{"0s is out of range"}},
		{"endpoint not http", "storage: {endpoint: 'ftp://x/'}\n", "storage.endpoint", []string{`"ftp://x/" is not an absolute http(s) URL`}},
		{"directoryEndpoint relative", "storage: {directoryEndpoint: /directory}\n", "storage.directoryEndpoint", []string{"absolute http(s) URL"}},
		{"zero requestsPerSecond", "storage: {requestsPerSecond: 0}\n", "storage.requestsPerSecond", []string{"0 is out of range; expected a number greater than 0"}},
		{"infinite requestsPerSecond", "storage: {requestsPerSecond: .inf}\n", "storage.requestsPerSecond", []string{"+Inf is out of range"}},
		{"zero concurrency", "storage: {concurrency: 0}\n", "storage.concurrency", []string{"0 is out of range; expected an integer from 1 to 256"}},
		{"large concurrency", "storage: {concurrency: 257}\n", "storage.concurrency", []string{"257 is out of range"}},
		{"zero callerConcurrent", "limits: {callerConcurrent: 0}\n", "limits.callerConcurrent", []string{"0 is out of range; expected an integer of at least 1"}},
		{"bad incremental spec", "schedule: {incremental: every minute}\n", "schedule.incremental", []string{`"every minute" is not a cron spec`, `"@every 1m"`}},
		{"bad full spec", "schedule: {full: '0 3 * *'}\n", "schedule.full", []string{`"0 3 * *" is not a cron spec`, `"0 3 * * *"`}},
		{"bad @every", "schedule: {full: '@every fortnight'}\n", "schedule.full", []string{"is not a cron spec"}},
		{"clockSkew too large", "auth: {clockSkew: 11m}\n", "auth.clockSkew", []string{"11m0s is out of range; expected a duration from 0s to 10m0s"}},
		{"negative clockSkew", "auth: {clockSkew: -1s}\n", "auth.clockSkew", []string{"-1s is out of range"}},
		{"empty client id", "auth: {google: {clientIds: [ok, '']}}\n", "auth.google.clientIds[1]", []string{"is empty; expected an OAuth client ID"}},
		{"relative jwksUrl", "auth: {google: {jwksUrl: www.googleapis.com/certs}}\n", "auth.google.jwksUrl", []string{"absolute http(s) URL"}},
		{"empty tokeninfoUrl", "auth: {google: {tokeninfoUrl: ''}}\n", "auth.google.tokeninfoUrl", []string{`"" is not an absolute http(s) URL`}},
		{"bad microsoft jwksUrl", "auth: {microsoft: {jwksUrls: [nope]}}\n", "auth.microsoft.jwksUrls[0]", []string{"absolute http(s) URL"}},
		{"tenants without jwksUrls", "auth: {microsoft: {jwksUrls: [], tenants: [{tenantId: " + guid + ", applicationIds: [a]}]}}\n",
			"auth.microsoft.jwksUrls", []string{"required when tenants are configured"}},
		{"tenantId not a GUID", "auth: {microsoft: {tenants: [{tenantId: contoso, applicationIds: [a]}]}}\n",
			"auth.microsoft.tenants[0].tenantId", []string{`"contoso" is not a GUID`}},
		{"duplicate tenant", "auth: {microsoft: {tenants: [{tenantId: " + guid + ", applicationIds: [a]}, {tenantId: '" + strings.ToUpper(guid) + "', applicationIds: [b]}]}}\n",
			"auth.microsoft.tenants[1].tenantId", []string{"duplicates auth.microsoft.tenants[0].tenantId; expected each tenant to be unique"}},
		{"tenant without applications", "auth: {microsoft: {tenants: [{tenantId: " + guid + "}]}}\n",
			"auth.microsoft.tenants[0].applicationIds", []string{"is empty"}},
		{"empty application id", "auth: {microsoft: {tenants: [{tenantId: " + guid + ", applicationIds: ['']}]}}\n",
			"auth.microsoft.tenants[0].applicationIds[0]", []string{"is empty"}},
		{"empty default flag name", "flagDefaults: {'': x}\n", "flagDefaults", []string{"empty name"}},

		{"missing key file setting", "libraries: [" + lib + "]\ndomains: [{name: example.com}]\n", "storage.credentialsFile",
			[]string{"is missing", "required when libraries, a domain adminEmail or a domain sharedDrives are configured"}},
		{"key file needed by adminEmail", "domains: [{name: example.com, adminEmail: admin@example.com}]\n", "storage.credentialsFile", []string{"is missing"}},
		{"key file needed by sharedDrives", "domains: [{name: example.com, sharedDrives: {storageAccount: s@example.com}}]\n", "storage.credentialsFile", []string{"is missing"}},

		{"bad domain name", withDomains("{name: Not_A_Domain}"), "domains[0].name", []string{`"not_a_domain" is not a domain name`}},
		{"single-label domain", withDomains("{name: localhost}"), "domains[0].name", []string{"is not a domain name; expected one such as example.com"}},
		{"missing domain name", withDomains("{users: []}"), "domains[0].name", []string{`"" is not a domain name`}},
		{"duplicate domain", withDomains("{name: example.com}", "{name: Example.COM}"), "domains[1].name",
			[]string{"duplicates domains[0].name; expected each domain to be unique"}},
		{"adminEmail elsewhere", withDomains("{name: example.com, adminEmail: admin@other.org}"), "domains[0].adminEmail",
			[]string{`"admin@other.org" is not in domain example.com; expected an address ending in @example.com`}},
		{"adminEmail not an e-mail", withDomains("{name: example.com, adminEmail: admin}"), "domains[0].adminEmail",
			[]string{`"admin" is not an e-mail address`}},
		{"bad allowlisted domain", withDomains("{name: example.com, allowlistedDomains: [partner.org, 'partner org']}"),
			"domains[0].allowlistedDomains[1]", []string{`"partner org" is not a domain name`}},
		{"user elsewhere", withDomains("{name: example.com, users: [alice@example.com, bob@other.org]}"), "domains[0].users[1]",
			[]string{`"bob@other.org" is not in domain example.com`}},
		{"user in a subdomain", withDomains("{name: example.com, users: [carol@eu.example.com]}"), "domains[0].users[0]",
			[]string{"is not in domain example.com"}},
		{"short sha256", withDomains("{name: example.com, securityCodes: [{sha256: " + code[1:] + ", actAs: admin}]}"),
			"domains[0].securityCodes[0].sha256", []string{"is not a SHA-256 digest; expected exactly 64 hex digits"}},
		{"non-hex sha256", withDomains("{name: example.com, securityCodes: [{sha256: " + strings.Repeat("g", 64) + ", actAs: admin}]}"),
			"domains[0].securityCodes[0].sha256", []string{"64 hex digits"}},
		{"duplicate code in a domain", withDomains("{name: example.com, securityCodes: [{sha256: " + code + ", actAs: admin}, {sha256: " + code + ", actAs: admin}]}"),
			"domains[0].securityCodes[1].sha256", []string{"duplicates domains[0].securityCodes[0].sha256; expected each security code to be unique"}},
		{"duplicate code across domains", withDomains(
			"{name: example.com, securityCodes: [{sha256: "+code2+", actAs: admin}, {sha256: "+code+", actAs: admin}]}",
			"{name: example.org, securityCodes: [{sha256: "+strings.ToUpper(code)+", actAs: admin}]}"),
			"domains[1].securityCodes[0].sha256", []string{"duplicates domains[0].securityCodes[1].sha256"}},
		{"bad actAs", withDomains("{name: example.com, securityCodes: [{sha256: " + code + ", actAs: root}]}"),
			"domains[0].securityCodes[0].actAs", []string{`"root" is not an identity; expected "admin" or "user:EMAIL" with EMAIL in example.com`}},
		{"actAs a user elsewhere", withDomains("{name: example.com, securityCodes: [{sha256: " + code + ", actAs: 'user:bob@other.org'}]}"),
			"domains[0].securityCodes[0].actAs", []string{`"bob@other.org" is not in domain example.com`}},
		{"actAs a user without e-mail", withDomains("{name: example.com, securityCodes: [{sha256: " + code + ", actAs: 'user:'}]}"),
			"domains[0].securityCodes[0].actAs", []string{`"" is not an e-mail address`}},
		{"missing actAs", withDomains("{name: example.com, securityCodes: [{sha256: " + code + "}]}"),
			"domains[0].securityCodes[0].actAs", []string{"is missing"}},
		{"empty domain flag name", withDomains("{name: example.com, flags: {'': x}}"), "domains[0].flags", []string{"empty name"}},

		{"bad include pattern", withDomains("{name: example.com, sharedDrives: {storageAccount: s@example.com, include: ['Team *', '[']}}"),
			"domains[0].sharedDrives.include[1]", []string{`bad pattern "[": syntax error in pattern; expected a drive-name pattern of Go's path.Match`, `such as "Team *"`}},
		{"bad exclude pattern", withDomains("{name: example.com}", `{name: example.org, sharedDrives: {storageAccount: s@example.org, exclude: ['Archive\']}}`),
			"domains[1].sharedDrives.exclude[0]", []string{`bad pattern "Archive\\": syntax error in pattern`}},
		{"empty exclude pattern", withDomains("{name: example.com, sharedDrives: {storageAccount: s@example.com, exclude: [Old*, '']}}"),
			"domains[0].sharedDrives.exclude[1]", []string{"is empty, which matches no drive; expected a drive-name pattern"}},
		{"empty include", withDomains("{name: example.com, sharedDrives: {storageAccount: s@example.com, include: []}}"),
			"domains[0].sharedDrives.include", []string{`is empty, which includes no drive; expected drive-name patterns, or no include for every drive (["*"])`}},
		{"missing sharedDrives storageAccount", withDomains("{name: example.com, sharedDrives: {include: ['*']}}"),
			"domains[0].sharedDrives.storageAccount", []string{"is missing; expected the e-mail of the user whose shared drives are the domain's libraries"}},
		{"empty sharedDrives", withDomains("{name: example.com, sharedDrives: {}}"), "domains[0].sharedDrives.storageAccount", []string{"is missing"}},
		{"sharedDrives storageAccount not an e-mail", withDomains("{name: example.com, sharedDrives: {storageAccount: storage}}"),
			"domains[0].sharedDrives.storageAccount", []string{`"storage" is not an e-mail address; expected one such as storage@example.com`}},

		{"both rootFolderId and sharedDriveId", withLibraries("{id: a, domain: example.com, storageAccount: s@example.com, rootFolderId: r, sharedDriveId: d}"),
			"libraries[0].rootFolderId", []string{"is set and so is sharedDriveId; expected exactly one of rootFolderId"}},
		{"neither rootFolderId nor sharedDriveId", withLibraries(lib, "{id: b, domain: example.com, storageAccount: s@example.com}"),
			"libraries[1].rootFolderId", []string{"is missing and so is sharedDriveId; expected exactly one of rootFolderId"}},
		{"unknown domain", withLibraries("{id: a, domain: example.org, storageAccount: s@example.org, rootFolderId: r}"),
			"libraries[0].domain", []string{`unknown domain "example.org"; expected the name of a configured domain (example.com)`}},
		{"no domains at all", "storage: {credentialsFile: 'KEYFILE'}\nlibraries: [" + lib + "]\n",
			"libraries[0].domain", []string{`unknown domain "example.com"; expected the name of a configured domain (none is configured)`}},
		{"missing domain", withLibraries("{id: a, storageAccount: s@example.com, rootFolderId: r}"), "libraries[0].domain", []string{"is missing"}},
		{"duplicate library id", withLibraries(lib, lib), "libraries[1].id", []string{"duplicates libraries[0].id; expected each library id to be unique"}},
		{"missing library id", withLibraries("{domain: example.com, storageAccount: s@example.com, rootFolderId: r}"), "libraries[0].id", []string{"is missing"}},
		{"library id with a slash", withLibraries("{id: eng/docs, domain: example.com, storageAccount: s@example.com, rootFolderId: r}"),
			"libraries[0].id", []string{`"eng/docs" cannot appear in URL paths`}},
		{"library id ..", withLibraries("{id: .., domain: example.com, storageAccount: s@example.com, rootFolderId: r}"),
			"libraries[0].id", []string{"cannot appear in URL paths"}},
		{"missing storageAccount", withLibraries("{id: a, domain: example.com, rootFolderId: r}"), "libraries[0].storageAccount", []string{"is missing"}},
		{"storageAccount not an e-mail", withLibraries("{id: a, domain: example.com, storageAccount: storage, rootFolderId: r}"),
			"libraries[0].storageAccount", []string{`"storage" is not an e-mail address`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(t, tt.src)
			wantProblem(t, err, tt.key, tt.want...)
		})
	}
}

func TestValidConfigurations(t *testing.T) {
	const oneDomain = "domains: [{name: example.com}]\n"
	tests := []struct{ name, src string }{
		{"domain without adminEmail needs no key file", "domains: [{name: example.com, users: [alice@example.com]}]\n"},
		{"port 0 and IPv6", "listen: '[::1]:0'\nadminListen: 'localhost:8081'\n" + oneDomain},
		{"descriptors", "schedule: {incremental: '@hourly', full: '@every 24h'}\n" + oneDomain},
		{"acting as a user", withDomains("{name: example.com, securityCodes: [{sha256: " + code + ", actAs: 'user:alice@example.com', expires: '2027-01-01T00:00:00+02:00'}]}")},
		{"shared drive", withLibraries("{id: A.b_c-1, domain: EXAMPLE.com, storageAccount: s@example.com, sharedDriveId: d}")},
		{"no microsoft tenants nor keys", "auth: {microsoft: {jwksUrls: []}}\n" + oneDomain},
		{"push over https", "push: {address: 'https://fm.example.com/drive/push?from=drive', channelTtl: 168h}\n" + oneDomain},
		{"push over http, shortest channels", "push: {address: 'http://127.0.0.1:8080/folders-push', channelTtl: 10s}\n" + oneDomain},
		{"push under a prefix like the API's", "push: {address: 'https://fm.example.com/folderx/push'}\n" + oneDomain},
		{"domains without libraries serve flags", "domains: [{name: example.com, flags: {theme: dark}}]\n"},
		{"shared drives discovered, no library", withDomains("{name: example.com, sharedDrives: {storageAccount: s@example.com}}")},
		{"shared drives of another domain's account", withDomains("{name: example.com, sharedDrives: {storageAccount: s@other.org, include: ['[A-M]*', 'Team \\*'], exclude: []}}")},
		{"sharedDrives null: no discovery", withDomains("{name: example.com, sharedDrives: ~}")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { mustParse(t, tt.src) })
	}
}

func TestValidationCollectsEveryProblem(t *testing.T) {
	const patternHelp = `(* any run of characters, / included, ? one, [a-z] one of a class, \ escaping the next), such as "Team *"`
	_, err := parse(t, `
listen: nope
storage:
  credentialsFile: 'KEYFILE'
  concurrency: 0
schedule: {full: never}
domains:
  - name: example.com
    securityCodes: [{sha256: `+code+`, actAs: admin}]
  - name: example.org
    securityCodes: [{sha256: `+code+`, actAs: root}]
    sharedDrives:
      include: ['Team *', '[']
      exclude: ['']
libraries:
  - {id: a, domain: example.com, storageAccount: s@example.com, rootFolderId: r, sharedDriveId: d}
  - {id: a, domain: example.net, storageAccount: s@example.com}
`)
	var got []string
	for _, p := range problems(t, err) {
		got = append(got, p.Key+": "+p.Message)
	}
	want := []string{
		`listen: "nope" is not host:port; expected an optional host and a numeric port, such as ":8080" or "127.0.0.1:8081" (line 2)`,
		`storage.concurrency: 0 is out of range; expected an integer from 1 to 256 (line 5)`,
		`schedule.full: "never" is not a cron spec (expected exactly 5 fields, found 1: [never]); expected 5 fields such as "0 3 * * *" or a descriptor such as "@every 1m" or "@daily" (line 6)`,
		`domains[1].securityCodes[0].sha256: duplicates domains[0].securityCodes[0].sha256; expected each security code to be unique (line 11)`,
		`domains[1].securityCodes[0].actAs: "root" is not an identity; expected "admin" or "user:EMAIL" with EMAIL in example.org (line 11)`,
		`domains[1].sharedDrives.storageAccount: is missing; expected the e-mail of the user whose shared drives are the domain's libraries (line 12)`,
		`domains[1].sharedDrives.include[1]: bad pattern "[": syntax error in pattern; expected a drive-name pattern of Go's path.Match ` + patternHelp + ` (line 13)`,
		`domains[1].sharedDrives.exclude[0]: is empty, which matches no drive; expected a drive-name pattern of Go's path.Match ` + patternHelp + ` (line 14)`,
		`libraries[0].rootFolderId: is set and so is sharedDriveId; expected exactly one of rootFolderId (a folder tree) and sharedDriveId (a shared drive) (line 16)`,
		`libraries[1].id: duplicates libraries[0].id; expected each library id to be unique (line 17)`,
		`libraries[1].domain: unknown domain "example.net"; expected the name of a configured domain (example.com, example.org) (line 17)`,
		`libraries[1].rootFolderId: is missing and so is sharedDriveId; expected exactly one of rootFolderId (a folder tree) and sharedDriveId (a shared drive) (line 17)`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestCredentialsFile(t *testing.T) {
	tests := []struct {
		name    string
		content string // "" for no file at all
		want    []string
	}{
		{"missing", "", []string{"cannot read key file ", "sa.json: no such file or directory"}},
		{"bad JSON", `{"type": "service_account",`, []string{"sa.json is not valid JSON: unexpected end of JSON input"}},
		{"not an object", `["service_account"]`, []string{"sa.json holds a JSON array, not an object"}},
		{"unknown type", `{"type": "external_account"}`, []string{`sa.json has "type" "external_account"; expected a Google JSON key of "type" "service_account" or "authorized_user"`}},
		{"no type", `{"client_email": "x@y.z"}`, []string{`has "type" ""`}},
		{"service account without key", `{"type": "service_account", "client_email": "x@y.z", "private_key": ""}`,
			[]string{"sa.json (service_account) lacks private_key; expected non-empty client_email, private_key"}},
		{"authorized user without token", `{"type": "authorized_user", "client_id": "a", "client_secret": "b"}`,
			[]string{"(authorized_user) lacks refresh_token"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "keys", "sa.json")
			if tt.content != "" {
				writeFile(t, dir, "keys/sa.json", tt.content)
			}
			src := "storage: {credentialsFile: keys/sa.json}\ndomains: [{name: example.com, adminEmail: admin@example.com}]\n"
			_, err := Parse([]byte(src), filepath.Join(dir, "config.yaml"), nil)
			wantProblem(t, err, "storage.credentialsFile", append(tt.want, path)...)
		})
	}
}

func TestCredentialsFileKinds(t *testing.T) {
	sa, err := os.ReadFile("testdata/sa.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, content := range []string{string(sa), `{"type": "authorized_user", "client_id": "a", "client_secret": "b", "refresh_token": "c"}`} {
		dir := t.TempDir()
		writeFile(t, dir, "key.json", content)
		src := "storage: {credentialsFile: key.json}\ndomains: [{name: example.com, adminEmail: admin@example.com}]\n"
		if _, err := Parse([]byte(src), filepath.Join(dir, "config.yaml"), nil); err != nil {
			t.Errorf("Parse with key %.40q...: %v", content, err)
		}
	}
}

func TestCredentialsFileIsADirectory(t *testing.T) {
	dir := t.TempDir()
	_, err := Parse([]byte("storage: {credentialsFile: .}\n"), filepath.Join(dir, "config.yaml"), nil)
	wantProblem(t, err, "storage.credentialsFile", "cannot read key file "+dir, "is a directory")
}
