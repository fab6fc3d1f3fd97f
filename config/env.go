package config

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// EnvPrefix starts the name of every environment variable that overrides a
// scalar key: FOLDERMIRROR_ and the key path upper-cased with "." turned into
// "_", as in FOLDERMIRROR_STORAGE_CREDENTIALSFILE. Underscores may also split
// the words of a camelCase key (FOLDERMIRROR_STORAGE_CREDENTIALS_FILE): names
// are compared without underscores and without regard to case.
const EnvPrefix = "FOLDERMIRROR_"

// EnvConfig is the variable that names the config file for the command line.
// Parse ignores it; any other FOLDERMIRROR_* variable must match a key.
const EnvConfig = EnvPrefix + "CONFIG"

// envTestPrefix starts the variables foldermirror's own tests read (such as
// FOLDERMIRROR_TEST_POSTGRES): they configure no daemon, and are ignored.
const envTestPrefix = EnvPrefix + "TEST_"

// scalar is a key that an environment variable may override.
type scalar struct {
	key string
	ptr any // *string, *int, *float64 or *time.Duration into a Config
}

// scalars returns the keys of c that environment variables may override.
func scalars(c *Config) []scalar {
	return []scalar{
		{"listen", &c.Listen},
		{"adminListen", &c.AdminListen},
		{"dataDir", &c.DataDir},
		{"storage.credentialsFile", &c.Storage.CredentialsFile},
		{"storage.endpoint", &c.Storage.Endpoint},
		{"storage.directoryEndpoint", &c.Storage.DirectoryEndpoint},
		{"storage.requestsPerSecond", &c.Storage.RequestsPerSecond},
		{"storage.concurrency", &c.Storage.Concurrency},
		{"schedule.incremental", &c.Schedule.Incremental},
		{"schedule.full", &c.Schedule.Full},
		{"auth.clockSkew", &c.Auth.ClockSkew},
		{"auth.google.jwksUrl", &c.Auth.Google.JWKSURL},
		{"auth.google.tokeninfoUrl", &c.Auth.Google.TokeninfoURL},
		{"limits.callerConcurrent", &c.Limits.CallerConcurrent},
		{"limits.callerRequestsPerSecond", &c.Limits.CallerRequestsPerSecond},
		{"limits.callerBurst", &c.Limits.CallerBurst},
		{"index.url", &c.Index.URL},
		{"index.leaseTtl", &c.Index.LeaseTTL},
		{"push.address", &c.Push.Address},
		{"push.channelTtl", &c.Push.ChannelTTL},
		{"adminTokenFile", &c.AdminTokenFile},
	}
}

// applyEnv overrides the scalar keys of c with the FOLDERMIRROR_* variables
// in environ, reporting variables that match no key, that set a key another
// variable sets, or whose value does not parse.
func applyEnv(c *Config, environ []string, ck *checker) {
	table := scalars(c)
	squashed := make([]string, len(table))
	for i, s := range table {
		squashed[i] = squash(s.key)
	}
	for _, kv := range envVars(environ) {
		name, value, _ := strings.Cut(kv, "=")
		i := slices.Index(squashed, squash(strings.TrimPrefix(name, EnvPrefix)))
		switch {
		case i < 0:
			ck.report(name, unknownVar(name, squashed, table))
		case ck.env[table[i].key] != "":
			ck.report(name, fmt.Sprintf("sets %s, as does %s; set only one of them", table[i].key, ck.env[table[i].key]))
		default:
			ck.env[table[i].key] = name
			if !set(table[i].ptr, value) {
				ck.report(name, fmt.Sprintf("%q is not valid for %s; expected %s", value, table[i].key, describe(reflect.TypeOf(table[i].ptr).Elem())))
			}
		}
	}
}

// envVars returns the FOLDERMIRROR_* entries of environ but EnvConfig and
// the tests' own, sorted by name; of two entries with the same name, the
// first is kept, as by os.Getenv.
func envVars(environ []string) []string {
	var vars []string
	for _, kv := range environ {
		if strings.HasPrefix(kv, EnvPrefix) && !strings.HasPrefix(kv, EnvConfig+"=") && !strings.HasPrefix(kv, envTestPrefix) {
			vars = append(vars, kv)
		}
	}
	name := func(kv string) string { n, _, _ := strings.Cut(kv, "="); return n }
	slices.SortStableFunc(vars, func(a, b string) int { return cmp.Compare(name(a), name(b)) })
	return slices.CompactFunc(vars, func(a, b string) bool { return name(a) == name(b) })
}

// unknownVar says that the variable name matches no key, suggesting the
// canonical name of a close one.
func unknownVar(name string, squashed []string, table []scalar) string {
	if i := closest(squash(strings.TrimPrefix(name, EnvPrefix)), squashed); i >= 0 {
		return "matches no configuration key; did you mean " + envName(table[i].key) + "?"
	}
	names := make([]string, len(table))
	for i, s := range table {
		names[i] = envName(s.key)
	}
	return "matches no configuration key; expected one of " + strings.Join(names, ", ") + " (or " + EnvConfig + ")"
}

// envName returns the canonical name of the variable that overrides key.
func envName(key string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// squash lower-cases s and drops its dots and underscores, so that the
// spellings of a key and of its variable compare equal.
func squash(s string) string {
	return strings.ToLower(strings.NewReplacer(".", "", "_", "").Replace(s))
}

// set parses value into *ptr, leaving *ptr alone if it does not parse, and
// reports whether it parsed.
func set(ptr any, value string) bool {
	switch p := ptr.(type) {
	case *string:
		*p = value
		return true
	case *int:
		return parseInto(p, value, strconv.Atoi)
	case *float64:
		return parseInto(p, value, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) })
	case *time.Duration:
		return parseInto(p, value, time.ParseDuration)
	}
	return false
}

// parseInto sets *p to fn(value) when that succeeds, and reports whether it did.
func parseInto[T any](p *T, value string, fn func(string) (T, error)) bool {
	v, err := fn(value)
	if err == nil {
		*p = v
	}
	return err == nil
}
