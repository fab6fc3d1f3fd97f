package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// envBase sets every scalar key that a variable may override.
const envBase = `
listen: ":1"
adminListen: "127.0.0.1:2"
dataDir: data
storage:
  credentialsFile: 'KEYFILE'
  endpoint: http://file/drive/v3/
  directoryEndpoint: http://file/
  requestsPerSecond: 1
  concurrency: 1
schedule: {incremental: "@every 2m", full: "@weekly"}
auth:
  clockSkew: 1s
  google: {jwksUrl: "http://file/certs", tokeninfoUrl: "http://file/tokeninfo"}
domains: [{name: example.com}]
`

func TestEnvOverrides(t *testing.T) {
	// A relative path from a variable, like one from the file, is resolved
	// against the directory of the config file.
	inConfigDir := func(c *Config) any {
		return c.Storage.CredentialsFile == filepath.Join(filepath.Dir(c.Path), "sa.json")
	}
	tests := []struct {
		env  string
		get  func(*Config) any
		want any
	}{
		{"FOLDERMIRROR_LISTEN=:9090", func(c *Config) any { return c.Listen }, ":9090"},
		{"FOLDERMIRROR_ADMINLISTEN=127.0.0.1:9", func(c *Config) any { return c.AdminListen }, "127.0.0.1:9"},
		{"FOLDERMIRROR_ADMIN_LISTEN=127.0.0.1:9", func(c *Config) any { return c.AdminListen }, "127.0.0.1:9"},
		{"FOLDERMIRROR_adminListen=127.0.0.1:9", func(c *Config) any { return c.AdminListen }, "127.0.0.1:9"},
		{"FOLDERMIRROR_DATADIR=/var/lib/fm", func(c *Config) any { return c.DataDir }, "/var/lib/fm"},
		{"FOLDERMIRROR_INDEX_URL=postgres://fm@db:5432/fm", func(c *Config) any { return c.Index.URL }, "postgres://fm@db:5432/fm"},
		{"FOLDERMIRROR_INDEX_LEASETTL=45s", func(c *Config) any { return c.Index.LeaseTTL }, 45 * time.Second},
		{"FOLDERMIRROR_PUSH_ADDRESS=https://fm.example.com/drive/push", func(c *Config) any { return c.Push.Address }, "https://fm.example.com/drive/push"},
		{"FOLDERMIRROR_PUSH_CHANNELTTL=1h", func(c *Config) any { return c.Push.ChannelTTL }, time.Hour},
		{"FOLDERMIRROR_PUSH_CHANNEL_TTL=90s", func(c *Config) any { return c.Push.ChannelTTL }, 90 * time.Second},
		{"FOLDERMIRROR_DATA_DIR=/var/lib/fm", func(c *Config) any { return c.DataDir }, "/var/lib/fm"},
		{"FOLDERMIRROR_STORAGE_CREDENTIALSFILE=sa.json", inConfigDir, true},
		{"FOLDERMIRROR_STORAGE_CREDENTIALS_FILE=sa.json", inConfigDir, true},
		{"FOLDERMIRROR_STORAGE_ENDPOINT=http://127.0.0.1:9000/drive/v3/", func(c *Config) any { return c.Storage.Endpoint }, "http://127.0.0.1:9000/drive/v3/"},
		{"FOLDERMIRROR_STORAGE_ENDPOINT=", func(c *Config) any { return c.Storage.Endpoint }, ""},
		{"FOLDERMIRROR_STORAGE_DIRECTORYENDPOINT=http://127.0.0.1:9000/", func(c *Config) any { return c.Storage.DirectoryEndpoint }, "http://127.0.0.1:9000/"},
		{"FOLDERMIRROR_STORAGE_DIRECTORY_ENDPOINT=http://127.0.0.1:9000/", func(c *Config) any { return c.Storage.DirectoryEndpoint }, "http://127.0.0.1:9000/"},
		{"FOLDERMIRROR_STORAGE_REQUESTSPERSECOND=2.5", func(c *Config) any { return c.Storage.RequestsPerSecond }, 2.5},
		{"FOLDERMIRROR_STORAGE_REQUESTS_PER_SECOND=100", func(c *Config) any { return c.Storage.RequestsPerSecond }, 100.0},
		{"FOLDERMIRROR_STORAGE_CONCURRENCY=16", func(c *Config) any { return c.Storage.Concurrency }, 16},
		{"FOLDERMIRROR_SCHEDULE_INCREMENTAL=@every 5m", func(c *Config) any { return c.Schedule.Incremental }, "@every 5m"},
		{"FOLDERMIRROR_SCHEDULE_FULL=30 2 * * 0", func(c *Config) any { return c.Schedule.Full }, "30 2 * * 0"},
		{"FOLDERMIRROR_AUTH_CLOCKSKEW=1m", func(c *Config) any { return c.Auth.ClockSkew }, time.Minute},
		{"FOLDERMIRROR_AUTH_CLOCK_SKEW=0s", func(c *Config) any { return c.Auth.ClockSkew }, time.Duration(0)},
		{"FOLDERMIRROR_AUTH_GOOGLE_JWKSURL=https://keys.test/certs", func(c *Config) any { return c.Auth.Google.JWKSURL }, "https://keys.test/certs"},
		{"FOLDERMIRROR_AUTH_GOOGLE_JWKS_URL=https://keys.test/certs", func(c *Config) any { return c.Auth.Google.JWKSURL }, "https://keys.test/certs"},
		{"FOLDERMIRROR_AUTH_GOOGLE_TOKENINFOURL=https://keys.test/ti", func(c *Config) any { return c.Auth.Google.TokeninfoURL }, "https://keys.test/ti"},
		{"FOLDERMIRROR_AUTH_GOOGLE_TOKENINFO_URL=https://keys.test/ti", func(c *Config) any { return c.Auth.Google.TokeninfoURL }, "https://keys.test/ti"},
		{"FOLDERMIRROR_CONFIG=/elsewhere.yaml", func(c *Config) any { return c.Listen }, ":1"},
		{"HOME=/root", func(c *Config) any { return c.Listen }, ":1"},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			c := mustParse(t, envBase, tt.env, "PATH=/bin")
			if got := tt.get(c); got != tt.want {
				t.Errorf("%s: got %v (%T), want %v (%T)", tt.env, got, got, tt.want, tt.want)
			}
		})
	}
}

func TestEnvErrors(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		key     string
		want    []string
	}{
		{"typo", []string{"FOLDERMIRROR_LISTN=:1"}, "FOLDERMIRROR_LISTN",
			[]string{"matches no configuration key; did you mean FOLDERMIRROR_LISTEN?"}},
		{"typo in the split spelling", []string{"FOLDERMIRROR_STORAGE_CONCURENCY=4"}, "FOLDERMIRROR_STORAGE_CONCURENCY",
			[]string{"did you mean FOLDERMIRROR_STORAGE_CONCURRENCY?"}},
		{"not a scalar key", []string{"FOLDERMIRROR_LIBRARIES=x"}, "FOLDERMIRROR_LIBRARIES",
			[]string{"matches no configuration key; expected one of FOLDERMIRROR_LISTEN, FOLDERMIRROR_ADMINLISTEN,", "(or FOLDERMIRROR_CONFIG)"}},
		{"a key inside a list", []string{"FOLDERMIRROR_DOMAINS_0_SHAREDDRIVES_STORAGEACCOUNT=s@example.com"}, "FOLDERMIRROR_DOMAINS_0_SHAREDDRIVES_STORAGEACCOUNT",
			[]string{"matches no configuration key; expected one of FOLDERMIRROR_LISTEN,"}},
		{"integer", []string{"FOLDERMIRROR_STORAGE_CONCURRENCY=lots"}, "FOLDERMIRROR_STORAGE_CONCURRENCY",
			[]string{`"lots" is not valid for storage.concurrency; expected an integer`}},
		{"number", []string{"FOLDERMIRROR_STORAGE_REQUESTS_PER_SECOND=fast"}, "FOLDERMIRROR_STORAGE_REQUESTS_PER_SECOND",
			[]string{`"fast" is not valid for storage.requestsPerSecond; expected a number`}},
		{"duration", []string{"FOLDERMIRROR_AUTH_CLOCK_SKEW=30"}, "FOLDERMIRROR_AUTH_CLOCK_SKEW",
			[]string{`"30" is not valid for auth.clockSkew; expected a duration`}},
		{"both spellings", []string{"FOLDERMIRROR_ADMIN_LISTEN=:3", "FOLDERMIRROR_ADMINLISTEN=:4"}, "FOLDERMIRROR_ADMIN_LISTEN",
			[]string{"sets adminListen, as does FOLDERMIRROR_ADMINLISTEN; set only one of them"}},
		{"value out of range", []string{"FOLDERMIRROR_STORAGE_CONCURRENCY=0"}, "FOLDERMIRROR_STORAGE_CONCURRENCY",
			[]string{"0 is out of range; expected an integer from 1 to 256"}},
		{"bad host:port", []string{"FOLDERMIRROR_LISTEN=8080"}, "FOLDERMIRROR_LISTEN",
			[]string{`"8080" is not host:port`}},
		{"push address not a URL", []string{"FOLDERMIRROR_PUSH_ADDRESS=fm.example.com/push"}, "FOLDERMIRROR_PUSH_ADDRESS",
			[]string{`"fm.example.com/push" is not an http(s) URL`}},
		{"channelTtl not a duration", []string{"FOLDERMIRROR_PUSH_CHANNEL_TTL=1d"}, "FOLDERMIRROR_PUSH_CHANNEL_TTL",
			[]string{`"1d" is not valid for push.channelTtl; expected a duration`}},
		{"channelTtl out of range", []string{"FOLDERMIRROR_PUSH_CHANNELTTL=1s"}, "FOLDERMIRROR_PUSH_CHANNELTTL",
			[]string{"1s is out of range; expected a duration from 10s to 168h"}},
		{"bad cron spec", []string{"FOLDERMIRROR_SCHEDULE_FULL=daily"}, "FOLDERMIRROR_SCHEDULE_FULL",
			[]string{`"daily" is not a cron spec`}},
		{"missing key file", []string{"FOLDERMIRROR_STORAGE_CREDENTIALS_FILE=/nonexistent/sa.json"}, "FOLDERMIRROR_STORAGE_CREDENTIALS_FILE",
			[]string{"cannot read key file /nonexistent/sa.json: no such file or directory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(t, envBase, tt.environ...)
			wantProblem(t, err, tt.key, tt.want...)
			for _, p := range problems(t, err) {
				if strings.Contains(p.Message, "(line") {
					t.Errorf("problem of a variable gives a line: %+v", p)
				}
			}
		})
	}
}

func TestEnvErrorsJoinFileProblems(t *testing.T) {
	tests := []struct {
		name string
		src  string
		keys []string
	}{
		{"valid YAML", "listen: nope\ndomains: [{name: example.com}]\n", []string{"FOLDERMIRROR_BOGUS", "listen"}},
		{"broken YAML", "listen: [\n", []string{"", "FOLDERMIRROR_BOGUS"}},
		{"mistyped YAML", "storage: {concurrency: x}\n", []string{"storage.concurrency", "FOLDERMIRROR_BOGUS"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(t, tt.src, "FOLDERMIRROR_BOGUS=1")
			var keys []string
			for _, p := range problems(t, err) {
				keys = append(keys, p.Key)
			}
			if strings.Join(keys, ",") != strings.Join(tt.keys, ",") {
				t.Errorf("problem keys = %q; want %q\n%v", keys, tt.keys, err)
			}
		})
	}
}

// The variables of foldermirror's own tests configure nothing and are no
// error.
func TestEnvOfTestsIgnored(t *testing.T) {
	c := mustParse(t, envBase, "FOLDERMIRROR_TEST_POSTGRES=postgres://u@h/db")
	if c.Index.URL != "" {
		t.Errorf("index.url %q", c.Index.URL)
	}
}

func TestEnvFirstOfSameNameWins(t *testing.T) {
	c := mustParse(t, envBase, "FOLDERMIRROR_LISTEN=:5", "FOLDERMIRROR_LISTEN=:6")
	if c.Listen != ":5" {
		t.Errorf("listen = %q; want :5, as os.Getenv would give", c.Listen)
	}
}

func TestLoadReadsProcessEnvironment(t *testing.T) {
	clearEnv(t)
	t.Setenv("FOLDERMIRROR_ADMIN_LISTEN", "127.0.0.1:9999")
	t.Setenv(EnvConfig, "ignored.yaml")
	c, err := Load("testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.AdminListen != "127.0.0.1:9999" {
		t.Errorf("adminListen = %q; want the variable's 127.0.0.1:9999", c.AdminListen)
	}
}
