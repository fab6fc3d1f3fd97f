package config

import (
	"reflect"
	"testing"
)

func TestUnknownKeys(t *testing.T) {
	tests := []struct {
		name, src string
		want      Problem
	}{
		{"library key in the wrong case", `
storage: {credentialsFile: 'KEYFILE'}
domains: [{name: example.com}]
libraries:
  - id: lib-eng
    domain: example.com
    storageAccount: s@example.com
    rootFolderID: r
    sharedDriveId: d
`, Problem{"libraries[0].rootFolderID", "unknown key (line 8); did you mean rootFolderId?"}},
		{"top-level typo", "listn: ':1'\n", Problem{"listn", "unknown key (line 1); did you mean listen?"}},
		{"singular of a list", "domain: []\n", Problem{"domain", "unknown key (line 1); did you mean domains?"}},
		{"nested typo", "storage:\n  credentialFile: x\n", Problem{"storage.credentialFile", "unknown key (line 2); did you mean credentialsFile?"}},
		{"deep typo", "auth:\n  microsoft:\n    tenants:\n      - tenantID: x\n",
			Problem{"auth.microsoft.tenants[0].tenantID", "unknown key (line 4); did you mean tenantId?"}},
		{"snake case", "domains:\n  - name: example.com\n    securityCodes: [{act_as: admin}]\n",
			Problem{"domains[0].securityCodes[0].act_as", "unknown key (line 3); did you mean actAs?"}},
		{"push typo", "push: {channelTTL: 1h}\n", Problem{"push.channelTTL", "unknown key (line 1); did you mean channelTtl?"}},
		{"sharedDrives typo", "domains:\n  - name: example.com\n    sharedDrives:\n      storageAcount: s@example.com\n",
			Problem{"domains[0].sharedDrives.storageAcount", "unknown key (line 4); did you mean storageAccount?"}},
		{"sharedDrives in the singular", "domains: [{name: example.com, sharedDrive: {storageAccount: s@example.com}}]\n",
			Problem{"domains[0].sharedDrive", "unknown key (line 1); did you mean sharedDrives?"}},
		{"library key under sharedDrives", "domains: [{name: example.com, sharedDrives: {storageAccount: s@example.com, sharedDriveId: d}}]\n",
			Problem{"domains[0].sharedDrives.sharedDriveId", "unknown key (line 1); expected one of storageAccount, include, exclude, folderDefinitionId"}},
		{"key of another section", "schedule: {clockSkew: 1s}\n",
			Problem{"schedule.clockSkew", "unknown key (line 1); expected one of incremental, full"}},
		{"nothing close", "frobnicate: 1\n", Problem{"frobnicate",
			"unknown key (line 1); expected one of listen, adminListen, dataDir, storage, schedule, auth, limits, index, push, flagDefaults, domains, libraries, adminTokenFile, trustedProxies"}},
		{"Path is not a key", "path: x\n", Problem{"path",
			"unknown key (line 1); expected one of listen, adminListen, dataDir, storage, schedule, auth, limits, index, push, flagDefaults, domains, libraries, adminTokenFile, trustedProxies"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(t, tt.src)
			ps := problems(t, err)
			if ps[0] != tt.want {
				t.Errorf("first problem = %+v; want %+v (all: %v)", ps[0], tt.want, err)
			}
		})
	}
}

func TestUnknownKeysDoNotStopValidation(t *testing.T) {
	_, err := parse(t, `
listn: ":1"
storage: {credentialsFile: 'KEYFILE', concurency: 3}
domains: [{name: example.com}]
libraries:
  - {id: lib-eng, domain: example.com, storageAccount: s@example.com, rootFolderID: r}
`)
	var keys []string
	for _, p := range problems(t, err) {
		keys = append(keys, p.Key)
	}
	want := []string{"listn", "storage.concurency", "libraries[0].rootFolderID", "libraries[0].rootFolderId"}
	if !reflect.DeepEqual(keys, want) {
		t.Errorf("problem keys = %q; want %q\n%v", keys, want, err)
	}
}

func TestStructureErrors(t *testing.T) {
	tests := []struct {
		name, src, key, want string
	}{
		{"text for an integer", "storage: {concurrency: abc}\n", "storage.concurrency", `expected an integer, got "abc" (line 1)`},
		{"fraction for an integer", "storage:\n  concurrency: 1.5\n", "storage.concurrency", `expected an integer, got "1.5" (line 2)`},
		{"text for a number", "storage: {requestsPerSecond: fast}\n", "storage.requestsPerSecond", `expected a number, got "fast"`},
		{"bare number for a duration", "auth: {clockSkew: 30}\n", "auth.clockSkew", `expected a duration such as 30s or 1m30s, got "30"`},
		{"bad duration", "auth: {clockSkew: soon}\n", "auth.clockSkew", `expected a duration`},
		{"date for a time", "domains: [{name: example.com, securityCodes: [{expires: 2027-01-01}]}]\n",
			"domains[0].securityCodes[0].expires", `expected an RFC 3339 time such as 2027-01-01T00:00:00Z, got "2027-01-01"`},
		{"text for a time", "domains: [{name: example.com, securityCodes: [{expires: \"next year\"}]}]\n",
			"domains[0].securityCodes[0].expires", `expected an RFC 3339 time`},
		{"mapping for a list", "libraries: {id: x}\n", "libraries", "expected a list, got a mapping (line 1)"},
		{"null in a list", "domains:\n  - name: example.com\n  -\n", "domains[1]", "expected a mapping, got nothing (null) (line 3)"},
		{"list in a list of strings", "auth: {google: {clientIds: [a, [b]]}}\n", "auth.google.clientIds[1]", "expected a string, got a list"},
		{"list for a string", "listen: [a]\n", "listen", "expected a string, got a list"},
		{"list for a mapping", "storage: [a]\n", "storage", "expected a mapping, got a list"},
		{"list for a flag", "flagDefaults: {someFlag: [x]}\n", "flagDefaults.someFlag", "expected a string, got a list"},
		{"switch for sharedDrives", "domains: [{name: example.com, sharedDrives: true}]\n", "domains[0].sharedDrives", `expected a mapping, got "true" (line 1)`},
		{"one pattern for a list", "domains: [{name: example.com, sharedDrives: {storageAccount: s@example.com, include: 'Team *'}}]\n",
			"domains[0].sharedDrives.include", `expected a list, got "Team *" (line 1)`},
		{"duplicate key", "listen: ':1'\nadminListen: ':2'\nlisten: ':3'\n", "listen", "duplicate key (line 3); already set on line 1"},
		{"top level is a list", "- a\n", "", "expected a mapping, got a list (line 1)"},
		{"syntax error", "listen: [\n", "", "yaml: "},
		{"alias in a list of itself", "auth: {google: {clientIds: &ids [*ids]}}\n", "auth.google.clientIds[0]", "expected a string, got a list"},
		{"merge of itself", "storage: &s {<<: *s}\n", "storage", "alias *s refers to a value that contains it (line 1)"},
		{"merge of a scalar", "storage: {<<: 5}\n", "storage.<<", `expected a mapping or a list of mappings to merge, got "5"`},
		{"complex key", "? [a]\n: b\n", "", "expected a plain key, got a list (line 1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(t, tt.src)
			wantProblem(t, err, tt.key, tt.want)
		})
	}
}

func TestStructureErrorsSkipValidation(t *testing.T) {
	_, err := parse(t, "listen: nope\nstorage: {concurrency: abc}\n")
	if ps := problems(t, err); len(ps) != 1 || ps[0].Key != "storage.concurrency" {
		t.Errorf("problems = %+v; want only the one of storage.concurrency", ps)
	}
}

func TestMergeKeys(t *testing.T) {
	c := mustParse(t, `
storage: {credentialsFile: 'KEYFILE'}
domains: [{name: example.com, flags: {<<: {a: "1", b: "2"}, b: "3"}}]
libraries:
  - &lib {id: one, domain: example.com, storageAccount: s@example.com, rootFolderId: r}
  - <<: *lib
    id: two
  - <<: [*lib]
    id: three
    name: Three
`)
	got := c.Libraries[1:]
	want := []Library{
		{ID: "two", Name: "two", Domain: "example.com", StorageAccount: "s@example.com", RootFolderID: "r"},
		{ID: "three", Name: "Three", Domain: "example.com", StorageAccount: "s@example.com", RootFolderID: "r"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("merged libraries = %+v; want %+v", got, want)
	}
	if flags := c.Domains[0].Flags; !reflect.DeepEqual(flags, map[string]string{"a": "1", "b": "3"}) {
		t.Errorf("merged flags = %q", flags)
	}
	_, err := parse(t, "libraries:\n  - &lib {iD: x}\n  - <<: *lib\n")
	wantProblem(t, err, "libraries[1].iD", "unknown key (line 2); did you mean id?")
}

func TestFlagValuesAreText(t *testing.T) {
	c := mustParse(t, `
flagDefaults: {a: false, b: 3, c: "x", d: 1.50, e: , f: null}
domains: [{name: example.com, flags: {a: true}}]
`)
	want := map[string]string{"a": "false", "b": "3", "c": "x", "d": "1.50", "e": "", "f": ""}
	if !reflect.DeepEqual(c.FlagDefaults, want) {
		t.Errorf("flagDefaults = %q; want %q", c.FlagDefaults, want)
	}
	if got := c.Domains[0].Flags["a"]; got != "true" {
		t.Errorf("flags.a = %q; want \"true\"", got)
	}
}

func TestClosest(t *testing.T) {
	names := []string{"listen", "adminListen", "rootFolderId", "credentialsFile", "id", "name"}
	tests := []struct{ word, want string }{
		{"LISTEN", "listen"},
		{"listn", "listen"},
		{"adminlisten", "adminListen"},
		{"rootFolder", "rootFolderId"},
		{"credentialFile", "credentialsFile"},
		{"ID", "id"},
		{"nam", "name"},
		{"xyz", ""},
		{"credentials", ""},
	}
	for _, tt := range tests {
		got := ""
		if i := closest(tt.word, names); i >= 0 {
			got = names[i]
		}
		if got != tt.want {
			t.Errorf("closest(%q) = %q; want %q", tt.word, got, tt.want)
		}
	}
}
