// Package fmtest is the set-up foldermirror's tests share: a Google fake, a
// service-account key of it, a configuration that points at it, an index,
// a syncer of the configuration.
//
// Each helper takes the test first, fails it on an error and registers its
// own clean-up with t.Cleanup, so that a test reads as what it sets up:
//
//	fake := fmtest.StartGoogle(t)
//	cfg := fmtest.Config(t, fake, t.TempDir())
//	cfg.Domains = []config.Domain{{Name: "example.com"}}
//	cfg = fmtest.LoadConfig(t, cfg)
//	db := fmtest.OpenIndex(t, fmtest.Bolt, cfg.DataDir)
//
// Configuration files are written with yaml.Marshal of a config.Config,
// never formatted by hand, so that they say what the test set.
package fmtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/httpapi/auth"
	"github.com/foldermirror/foldermirror/index"
	"github.com/foldermirror/foldermirror/index/bolt"
	"github.com/foldermirror/foldermirror/index/indextest"
	"github.com/foldermirror/foldermirror/index/postgres"
	"github.com/foldermirror/foldermirror/internal/googlefake"
	"github.com/foldermirror/foldermirror/internal/pgtest"
	"go.yaml.in/yaml/v3"
	"golang.org/x/oauth2/google"
	"google.golang.org/api/drive/v3"
	"google.golang.org/api/option"
)

// ServiceAccount is the e-mail of the service-account key WriteKey writes.
const ServiceAccount = "sa@project.iam.gserviceaccount.com"

// ClientID is the OAuth client whose Google ID tokens the configurations of
// Config accept.
const ClientID = "test.apps.googleusercontent.com"

// quiet is the logger of the indexes the helpers open.
var quiet = slog.New(slog.DiscardHandler)

// StartGoogle starts a fake of Google's APIs on loopback, closed when the
// test ends.
func StartGoogle(t testing.TB) *googlefake.Server {
	t.Helper()
	fake := googlefake.New()
	fake.Start()
	t.Cleanup(fake.Close)
	return fake
}

// WriteKey writes the JSON key of fake's service account ServiceAccount at
// path and returns path. The key's token_uri is fake's, so credentials made
// from it get their tokens from fake.
func WriteKey(t testing.TB, fake *googlefake.Server, path string) string {
	t.Helper()
	if err := os.WriteFile(path, fake.ServiceAccountKey(ServiceAccount), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Config returns the configuration of a daemon in dir that reads fake: its
// file is dir/config.yaml and its index dir/data; it reads Drive and the
// Directory at fake's endpoints with a key of fake's (WriteKey, at
// dir/sa.json), up to 100,000 calls a second (more than a test makes); it
// accepts fake's Google ID tokens for ClientID and its access tokens; both
// listeners are on loopback, on ports the kernel picks. Every other key has
// its default, and it has no domain and no library: the test adds those,
// changes what it needs, and writes or loads the result (WriteConfig,
// LoadConfig).
func Config(t testing.TB, fake *googlefake.Server, dir string) *config.Config {
	t.Helper()
	c := config.Default()
	c.Path = filepath.Join(dir, "config.yaml")
	c.Listen = "127.0.0.1:0"
	c.AdminListen = "127.0.0.1:0"
	c.DataDir = filepath.Join(dir, "data")
	c.Storage.CredentialsFile = WriteKey(t, fake, filepath.Join(dir, "sa.json"))
	c.Storage.Endpoint = fake.DriveEndpoint()
	c.Storage.DirectoryEndpoint = fake.DirectoryEndpoint()
	c.Storage.RequestsPerSecond = 100000
	c.Auth.Google.ClientIDs = []string{ClientID}
	c.Auth.Google.JWKSURL = fake.GoogleJWKSURL()
	c.Auth.Google.TokeninfoURL = fake.TokeninfoURL()
	return c
}

// AuthOptions returns the options of an Authenticator that takes what the
// configurations of Config take: fake's Google ID tokens for ClientID and
// its access tokens, with the default clock skew. It knows no domain and no
// directory: the test adds those.
func AuthOptions(fake *googlefake.Server) auth.Options {
	return auth.Options{
		ClockSkew: config.Default().Auth.ClockSkew,
		Google:    auth.Google{ClientIDs: []string{ClientID}, JWKSURL: fake.GoogleJWKSURL(), TokeninfoURL: fake.TokeninfoURL()},
	}
}

// WriteConfig writes c, marshalled with yaml.Marshal, to the file c.Path
// and returns its path.
func WriteConfig(t testing.TB, c *config.Config) string {
	t.Helper()
	data, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.Path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return c.Path
}

// LoadConfig writes c (WriteConfig) and returns the file loaded as the
// daemon loads it, validated and normalised, without the FOLDERMIRROR_*
// variables of the process environment.
func LoadConfig(t testing.TB, c *config.Config) *config.Config {
	t.Helper()
	data, err := os.ReadFile(WriteConfig(t, c))
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := config.Parse(data, c.Path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return loaded
}

// EditConfig loads the configuration file at path as it was written, without
// validating it, lets edit change it, and writes it again.
func EditConfig(t testing.TB, path string, edit func(c *config.Config)) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c := config.Default()
	if err := yaml.Unmarshal(data, c); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	c.Path = path
	edit(c)
	WriteConfig(t, c)
}

// The index backends.
const (
	// Bolt is the bbolt file in the data directory.
	Bolt = "bbolt"
	// Postgres is a PostgreSQL database.
	Postgres = "postgres"
)

// Backends returns the index backends a test runs on: Bolt, and Postgres
// when pgtest.EnvURL names a server (the test logs that it does not
// otherwise).
func Backends(t testing.TB) []string {
	t.Helper()
	if os.Getenv(pgtest.EnvURL) == "" {
		t.Logf("PostgreSQL variants not run: set %s to a server's URL to run them", pgtest.EnvURL)
		return []string{Bolt}
	}
	return []string{Bolt, Postgres}
}

// OpenIndex opens an empty index on backend as the daemon does
// (index.Open, then Connect), closed when the test ends: a bbolt file in
// dataDir, or a PostgreSQL database of its own (a pgtest.NewDatabase;
// dataDir is not used).
func OpenIndex(t testing.TB, backend, dataDir string) indextest.Index {
	t.Helper()
	opts := index.Options{DataDir: dataDir, Logger: quiet}
	switch backend {
	case Bolt:
	case Postgres:
		opts.URL = pgtest.NewDatabase(t)
	default:
		t.Fatalf("no index backend %q; expected %q or %q", backend, Bolt, Postgres)
	}
	db, err := index.Open(opts)
	if err != nil {
		t.Fatalf("open the %s index: %v", backend, err)
	}
	t.Cleanup(func() { closeIndex(t, db) })
	if err := db.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	idx, ok := db.(indextest.Index)
	if !ok {
		t.Fatalf("the %s index (%T) has no Snapshot", backend, db)
	}
	return idx
}

// OpenBolt opens the bbolt index in dataDir, closed when the test ends:
// for a test of what only the bbolt backend has (OpenIndex otherwise).
func OpenBolt(t testing.TB, dataDir string) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(dataDir, quiet)
	if err != nil {
		t.Fatalf("open the index in %s: %v", dataDir, err)
	}
	t.Cleanup(func() { closeIndex(t, db) })
	return db
}

// OpenPostgres opens the PostgreSQL index at url with opts (without a
// logger, a quiet one) and connects it; it is closed when the test ends.
// It is for a test of what only the PostgreSQL backend has, or that needs
// its options (OpenIndex otherwise).
func OpenPostgres(t testing.TB, url string, opts postgres.Options) *postgres.DB {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	db, err := postgres.Open(url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeIndex(t, db) })
	if err := db.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	return db
}

// Do sends req with http.DefaultClient and returns the response with its
// body read whole (and closed); an error sending it or reading the body
// fails the test.
func Do(t testing.TB, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", req.Method, req.URL, err)
	}
	return resp, body
}

// DriveAs returns a Drive client of the fake acting as subject, through
// the service account's key (domain-wide delegation), as the syncer does.
func DriveAs(t testing.TB, fake *googlefake.Server, subject string) *drive.Service {
	t.Helper()
	creds, err := google.CredentialsFromJSONWithTypeAndParams(context.Background(), fake.ServiceAccountKey(ServiceAccount),
		google.ServiceAccount, google.CredentialsParams{Scopes: []string{drive.DriveReadonlyScope}, Subject: subject})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := drive.NewService(context.Background(), option.WithEndpoint(fake.DriveEndpoint()), option.WithTokenSource(creds.TokenSource))
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// CodeDigest returns the lower-case hex SHA-256 of a security code: what
// config.SecurityCode's SHA256 holds.
func CodeDigest(code string) string {
	h := sha256.Sum256([]byte(code))
	return hex.EncodeToString(h[:])
}

// closeIndex closes db when a test ends (again, if the test closed it to
// reopen it: that is no error), failing the test if it cannot.
func closeIndex(t testing.TB, db io.Closer) {
	t.Helper()
	if err := db.Close(); err != nil {
		t.Errorf("close the index: %v", err)
	}
}

// FileIDs returns every "fileId" of a decoded JSON answer of the API, at any
// depth.
func FileIDs(v any) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		if id, ok := x["fileId"].(string); ok {
			out = append(out, id)
		}
		for _, e := range x {
			out = append(out, FileIDs(e)...)
		}
	case []any:
		for _, e := range x {
			out = append(out, FileIDs(e)...)
		}
	}
	return out
}
