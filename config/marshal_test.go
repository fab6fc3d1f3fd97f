package config

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// full is a configuration in which every key is set, none to its default,
// and each value already in the form Parse leaves it in.
func full(dir string) *Config {
	return &Config{
		Listen:      "127.0.0.1:9080",
		AdminListen: "127.0.0.1:9081",
		DataDir:     filepath.Join(dir, "state"),
		Storage: Storage{
			CredentialsFile:   filepath.Join(dir, "sa.json"),
			Endpoint:          "http://127.0.0.1:9000/drive/v3/",
			DirectoryEndpoint: "http://127.0.0.1:9000/",
			RequestsPerSecond: 12.5,
			Concurrency:       3,
		},
		Schedule: Schedule{Incremental: "@every 2m", Full: "0 4 * * *"},
		Auth: Auth{
			ClockSkew: 0, // valid, and not the default
			Google: GoogleAuth{
				ClientIDs:    []string{"a.apps.googleusercontent.com", "b.apps.googleusercontent.com"},
				JWKSURL:      "http://127.0.0.1:9000/oauth2/v3/certs",
				TokeninfoURL: "http://127.0.0.1:9000/tokeninfo",
			},
			Microsoft: MicrosoftAuth{
				JWKSURLs: []string{"http://127.0.0.1:9000/keys"},
				Tenants: []Tenant{{
					TenantID:       "00000000-0000-0000-0000-000000000000",
					ApplicationIDs: []string{"11111111-1111-1111-1111-111111111111"},
				}},
			},
		},
		Limits: Limits{CallerConcurrent: 5, CallerRequestsPerSecond: 1e6, CallerBurst: 1e6},
		Index:  Index{URL: "postgres://fm@db.example:5432/fm", LeaseTTL: 90 * time.Second},
		Push:   Push{Address: "https://fm.example.com/drive/push", ChannelTTL: 36 * time.Hour},
		// A flag value that reads as a boolean, a number and nothing stays text.
		FlagDefaults: map[string]string{"beta": "false", "limit": "3", "empty": ""},
		Domains: []Domain{{
			Name:               "example.com",
			AdminEmail:         "admin@example.com",
			AllowlistedDomains: []string{"partner.org"},
			Users:              []string{"alice@example.com"},
			SecurityCodes: []SecurityCode{{
				SHA256:  strings.Repeat("ab", 32),
				ActAs:   "user:alice@example.com",
				Expires: time.Date(2099, 1, 2, 3, 4, 5, 0, time.UTC),
			}, {
				SHA256: strings.Repeat("cd", 32),
				ActAs:  "admin",
			}},
			Flags: map[string]string{"beta": "true"},
			SharedDrives: &SharedDrives{
				StorageAccount:     "drives@example.com",
				Include:            []string{"Team *", "Sales"},
				Exclude:            []string{"* (archive)"},
				FolderDefinitionID: "team",
			},
		}},
		Libraries: []Library{{
			ID:                 "lib-eng",
			Name:               "Engineering",
			Domain:             "example.com",
			StorageAccount:     "storage@example.com",
			RootFolderID:       "root",
			FolderDefinitionID: "standard",
		}, {
			ID:             "lib-team",
			Name:           "lib-team",
			Domain:         "example.com",
			StorageAccount: "storage@example.com",
			SharedDriveID:  "0Drive",
		}},
		AdminTokenFile: filepath.Join(dir, "admin-token"),
		TrustedProxies: []string{"10.0.0.0/8", "2001:db8::/32", "192.168.1.7"},
		Path:           filepath.Join(dir, "config.yaml"),
	}
}

// A configuration marshalled with yaml.Marshal parses back to itself: the
// types marshal to the keys they are decoded from.
func TestMarshalRoundTrip(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "sa.json", fakeKey)
	writeFile(t, dir, "admin-token", "s3cret")
	want := full(dir)
	data, err := yaml.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(data, want.Path, nil)
	if err != nil {
		t.Fatalf("Parse of the marshalled configuration: %v\n%s", err, data)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip =\n%+v\nwant\n%+v\nmarshalled:\n%s", got, want, data)
	}
}

// The defaults, with only a domain added, survive marshalling: a test that
// starts from Default and sets a few keys writes a file that means what it
// set.
func TestMarshalDefault(t *testing.T) {
	c := Default()
	c.Domains = []Domain{{Name: "example.com"}}
	c.Path = "/etc/foldermirror/config.yaml"
	data, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(data, c.Path, nil)
	if err != nil {
		t.Fatalf("Parse: %v\n%s", err, data)
	}
	c.DataDir = "/etc/foldermirror/data" // resolved against the file's directory
	again, err := yaml.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := yaml.Marshal(c); string(again) != string(want) {
		t.Errorf("marshalled after a round trip:\n%s\nwant\n%s", again, want)
	}
}

// Every field of the configuration's types is a key: it has a yaml tag,
// so that yaml.Marshal writes the key the walker and the decoder expect.
func TestEveryFieldIsTagged(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var check func(t reflect.Type, path string)
	check = func(typ reflect.Type, path string) {
		switch typ.Kind() {
		case reflect.Slice, reflect.Map:
			check(typ.Elem(), path+"[]")
			return
		case reflect.Pointer:
			check(typ.Elem(), path)
			return
		case reflect.Struct:
		default:
			return
		}
		if typ == timeType || seen[typ] {
			return
		}
		seen[typ] = true
		for i := range typ.NumField() {
			f := typ.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "" {
				t.Errorf("%s.%s (%s) has no yaml key", path, f.Name, typ)
				continue
			}
			if name != "-" {
				check(f.Type, join(path, name))
			}
		}
	}
	check(reflect.TypeFor[Config](), "")
	for _, typ := range []reflect.Type{reflect.TypeFor[Library](), reflect.TypeFor[SharedDrives]()} {
		if !seen[typ] {
			t.Errorf("%s not checked", typ)
		}
	}
}

// A sharedDrives built in code without patterns, which
// fm.SharedDriveDiscovery reads as every drive, marshals to one that
// includes every drive, rather than to an empty include that Parse refuses.
func TestMarshalSharedDrivesWithoutPatterns(t *testing.T) {
	c := Default()
	c.Storage.CredentialsFile = "sa.json"
	c.Domains = []Domain{{Name: "example.com", SharedDrives: &SharedDrives{StorageAccount: "s@example.com"}}}
	data, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFile(t, dir, "sa.json", fakeKey)
	got, err := Parse(data, filepath.Join(dir, "config.yaml"), nil)
	if err != nil {
		t.Fatalf("Parse: %v\n%s", err, data)
	}
	if s := got.Domains[0].SharedDrives; !reflect.DeepEqual(s.Include, []string{"*"}) || s.Exclude != nil {
		t.Errorf("include %q, exclude %q; want [*] and none", s.Include, s.Exclude)
	}
}
