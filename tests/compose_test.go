package tests

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.yaml.in/yaml/v3"

	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/index/postgres"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/pgtest"
)

// composeFile is what TestComposeFile reads of deploy/compose.yaml.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Secrets  map[string]struct {
		File string `yaml:"file"`
	} `yaml:"secrets"`
}

type composeService struct {
	Image       string            `yaml:"image"`
	Build       string            `yaml:"build"`
	Environment map[string]string `yaml:"environment"`
	Secrets     []string          `yaml:"secrets"`
	Volumes     []string          `yaml:"volumes"`
	Ports       []string          `yaml:"ports"`
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Healthcheck *struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
}

// deployDir is the directory of the compose file.
var deployDir = filepath.Join("..", "deploy")

// initScript is the PostgreSQL service's script that makes foldermirror's
// role and database.
var initScript = filepath.Join(deployDir, "initdb", "10-foldermirror.sh")

// secretsDir holds the compose file's secrets, made by the operator.
const secretsDir = "secrets"

// pgpassLine is the pgpass secret as the README has the operator write it.
const pgpassLine = "*:*:foldermirror:foldermirror:%s\n"

func readCompose(t *testing.T) composeFile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(deployDir, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.Unmarshal(data, &cf); err != nil {
		t.Fatalf("deploy/compose.yaml: %v", err)
	}
	return cf
}

// TestComposeFile checks the compose file the README gives for several
// replicas: PostgreSQL 15 or later with a healthcheck, and at least two
// replicas built from the repository's Dockerfile, each on a port of its
// own, all on that database as a role that is not the superuser, started
// once it is healthy, with the configuration mounted where the image reads
// it. The key and the passwords are compose secrets, files under
// deploy/secrets that neither git nor the image's build context takes, and
// no password is written in the file.
func TestComposeFile(t *testing.T) {
	cf := readCompose(t)
	dbName, db := postgresService(t, cf)
	checkSecretFiles(t, cf)
	fullPath := filepath.Join("..", "config", "testdata", "full.yaml") // its key beside it
	full, err := os.ReadFile(fullPath)
	if err != nil {
		t.Fatal(err)
	}
	superuser := cmpOr(db.Environment["POSTGRES_USER"], "postgres")
	var replicas, hostPorts []string
	for name, s := range cf.Services {
		if s.Build != ".." {
			continue
		}
		replicas = append(replicas, name)
		checkNoPasswords(t, name, s)
		indexURL := s.Environment["FOLDERMIRROR_INDEX_URL"]
		u, err := url.Parse(indexURL)
		if err != nil || u.Hostname() != dbName {
			t.Errorf("%s: FOLDERMIRROR_INDEX_URL %q does not name the database of service %s", name, indexURL, dbName)
			continue
		}
		if u.User.Username() == "" || u.User.Username() == superuser {
			t.Errorf("%s: FOLDERMIRROR_INDEX_URL %q: the application connects as %q; want a role of its own, not the superuser %s", name, indexURL, u.User.Username(), superuser)
		}
		checkPassfile(t, name, s, u)
		if _, err := config.Parse(full, fullPath, []string{"FOLDERMIRROR_INDEX_URL=" + indexURL}); err != nil {
			t.Errorf("%s: the configuration does not take its FOLDERMIRROR_INDEX_URL: %v", name, err)
		}
		if key := s.Environment["FOLDERMIRROR_STORAGE_CREDENTIALS_FILE"]; !isSecretOf(s, key) {
			t.Errorf("%s: FOLDERMIRROR_STORAGE_CREDENTIALS_FILE %q: want the Google key as one of the service's secrets, /run/secrets/NAME", name, key)
		}
		if s.DependsOn[dbName].Condition != "service_healthy" {
			t.Errorf("%s: starts before %s is healthy", name, dbName)
		}
		if !slices.ContainsFunc(s.Volumes, func(v string) bool { return strings.HasSuffix(v, ":/etc/foldermirror/config.yaml:ro") }) {
			t.Errorf("%s: no configuration mounted as /etc/foldermirror/config.yaml:ro", name)
		}
		for _, v := range s.Volumes {
			if strings.HasSuffix(strings.Split(v, ":")[0], ".json") {
				t.Errorf("%s: volume %q: a key mounted from the deploy directory; want a secret", name, v)
			}
		}
		for _, p := range s.Ports {
			host, container, _ := strings.Cut(p, ":")
			if container != "8080" {
				t.Errorf("%s: port %q: the image serves the API on 8080", name, p)
			}
			hostPorts = append(hostPorts, host)
		}
	}
	if len(replicas) < 2 {
		t.Fatalf("replicas built from the repository: %v, want at least 2", replicas)
	}
	slices.Sort(hostPorts)
	if len(hostPorts) != len(replicas) || len(slices.Compact(hostPorts)) != len(replicas) {
		t.Errorf("host ports %v: want one of its own per replica", hostPorts)
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// postgresService returns the compose file's PostgreSQL service, checked:
// its superuser's password from a secret, an init script that makes the
// application's role.
func postgresService(t *testing.T, cf composeFile) (string, composeService) {
	t.Helper()
	for name, s := range cf.Services {
		image, tag, _ := strings.Cut(s.Image, ":")
		if image != "postgres" {
			continue
		}
		major, err := strconv.Atoi(strings.SplitN(tag, ".", 2)[0])
		if err != nil || major < 15 {
			t.Errorf("%s: image %s: the index needs PostgreSQL 15 or later, pinned", name, s.Image)
		}
		if s.Healthcheck == nil || !slices.Contains(s.Healthcheck.Test, "pg_isready") {
			t.Errorf("%s: no pg_isready healthcheck for the replicas to wait on", name)
		}
		checkNoPasswords(t, name, s)
		if pw := s.Environment["POSTGRES_PASSWORD_FILE"]; !isSecretOf(s, pw) {
			t.Errorf("%s: POSTGRES_PASSWORD_FILE %q: want the superuser's password from one of the service's secrets", name, pw)
		}
		script, err := os.ReadFile(initScript)
		if err != nil || !regexp.MustCompile(`CREATE ROLE .* NOSUPERUSER`).Match(script) || !regexp.MustCompile(`CREATE DATABASE .* OWNER`).Match(script) {
			t.Errorf("%s: want it to make a role that is not a superuser and a database it owns (%v)", initScript, err)
		}
		init := strings.TrimPrefix(filepath.ToSlash(initScript), "../deploy/")
		if !slices.ContainsFunc(s.Volumes, func(v string) bool {
			src, dst, _ := strings.Cut(v, ":")
			return path.Join(strings.TrimPrefix(dst, "/docker-entrypoint-initdb.d"), "x") != path.Join(dst, "x") &&
				(path.Clean(src) == path.Dir("./"+init) || path.Clean(src) == path.Clean("./"+init))
		}) {
			t.Errorf("%s: %s is not mounted under /docker-entrypoint-initdb.d: %q", name, init, s.Volumes)
		}
		return name, s
	}
	t.Fatal("deploy/compose.yaml has no postgres service")
	return "", composeService{}
}

// checkNoPasswords fails if a service's environment holds a password
// rather than the file of one.
func checkNoPasswords(t *testing.T, name string, s composeService) {
	t.Helper()
	for k, v := range s.Environment {
		if strings.Contains(strings.ToUpper(k), "PASSWORD") && !strings.HasSuffix(k, "_FILE") {
			t.Errorf("%s: %s is set in the compose file; want %s_FILE and a secret", name, k, k)
		}
		if u, err := url.Parse(v); err == nil && u.User != nil {
			if _, ok := u.User.Password(); ok {
				t.Errorf("%s: %s holds a URL with a password; want a passfile from a secret", name, k)
			}
		}
	}
}

// isSecretOf tells whether file is where one of s's secrets is mounted.
func isSecretOf(s composeService, file string) bool {
	secret, ok := strings.CutPrefix(file, "/run/secrets/")
	return ok && slices.Contains(s.Secrets, secret)
}

// checkPassfile checks that the replica's database URL takes its password
// from a passfile among its secrets, and that a pgpass secret written as
// the README says gives pgx the password for that URL.
func checkPassfile(t *testing.T, name string, s composeService, u *url.URL) {
	t.Helper()
	passfile := u.Query().Get("passfile")
	if !isSecretOf(s, passfile) {
		t.Errorf("%s: FOLDERMIRROR_INDEX_URL's passfile %q: want one of the service's secrets", name, passfile)
		return
	}
	written := filepath.Join(t.TempDir(), "pgpass")
	if err := os.WriteFile(written, fmt.Appendf(nil, pgpassLine, "s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("passfile", written)
	local := *u
	local.RawQuery = q.Encode()
	cfg, err := pgconn.ParseConfig(local.String())
	if err != nil || cfg.Password != "s3cret" {
		t.Errorf("%s: with the pgpass the README writes, the URL's password is %v (%v); want the pgpass's", name, cfg, err)
	}
}

// checkSecretFiles checks that the compose file's secrets are files under
// deploy/secrets, which git ignores and the build context leaves out, as
// it does the configuration the replicas mount.
func checkSecretFiles(t *testing.T, cf composeFile) {
	t.Helper()
	if len(cf.Secrets) < 3 {
		t.Errorf("secrets %v: want the Google key, the superuser's password and the application's pgpass", cf.Secrets)
	}
	files := []string{"deploy/config.yaml", "deploy/sa.json"}
	for name, s := range cf.Secrets {
		rel := path.Clean(s.File)
		if path.Dir(rel) != secretsDir {
			t.Errorf("secret %s: file %q; want it in deploy/%s", name, s.File, secretsDir)
		}
		files = append(files, path.Join("deploy", rel))
	}
	gitignore := readIgnore(t, filepath.Join("..", ".gitignore"))
	dockerignore := readIgnore(t, filepath.Join("..", ".dockerignore"))
	for _, f := range files {
		if !gitignore.ignores(f, true) {
			t.Errorf(".gitignore does not ignore %s", f)
		}
		if !dockerignore.ignores(f, false) {
			t.Errorf(".dockerignore does not keep %s out of the build context", f)
		}
	}
}

// TestComposeInitScript runs the PostgreSQL service's init script on the
// test server, as the image runs it on a new data directory: it makes the
// role and the database the pgpass secret names, the role no superuser and
// owning the database, and foldermirror's index opens there as that role.
func TestComposeInitScript(t *testing.T) {
	t.Parallel() // waits for the server to make and drop a database
	serverURL := pgtest.ServerURL(t)
	if _, err := exec.LookPath("psql"); err != nil {
		t.Skip("no psql to run the init script with")
	}
	server, err := url.Parse(serverURL)
	if err != nil {
		t.Fatal(err)
	}
	role := "fm_compose_" + strings.ToLower(rand.Text()[:10])
	pgpass := filepath.Join(t.TempDir(), "pgpass")
	line := strings.Replace(fmt.Sprintf(pgpassLine, "s3cret"), "foldermirror:foldermirror", role+":"+role, 1)
	if err := os.WriteFile(pgpass, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+role+" WITH (FORCE)")
		_, _ = admin.Exec(ctx, "DROP ROLE IF EXISTS "+role)
		admin.Close(ctx)
	})

	cmd := exec.Command("sh", initScript)
	cmd.Env = append(os.Environ(), "PGHOST="+server.Hostname(), "PGPORT="+server.Port(),
		"POSTGRES_USER="+server.User.Username(), "POSTGRES_DB="+strings.TrimPrefix(server.Path, "/"),
		"FOLDERMIRROR_PGPASS="+pgpass)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", initScript, err, out)
	}
	var super, createRole, createDB bool
	var owner string
	err = admin.QueryRow(ctx, `SELECT r.rolsuper, r.rolcreaterole, r.rolcreatedb, pg_get_userbyid(d.datdba)
		FROM pg_roles r, pg_database d WHERE r.rolname = $1 AND d.datname = $1`, role).Scan(&super, &createRole, &createDB, &owner)
	if err != nil || super || createRole || createDB || owner != role {
		t.Fatalf("role %s: superuser %v, createrole %v, createdb %v, owner of its database %q (%v); want a plain role owning it",
			role, super, createRole, createDB, owner, err)
	}
	u := *server
	u.User, u.Path = url.User(role), "/"+role
	db := fmtest.OpenPostgres(t, u.String(), postgres.Options{})
	if err := db.Connect(ctx); err != nil {
		t.Errorf("foldermirror's index as %s: %v", role, err)
	}
	db.Close()
}

// ignoreFile is a .gitignore's or a .dockerignore's patterns, in order.
type ignoreFile []string

func readIgnore(t *testing.T, file string) ignoreFile {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var patterns ignoreFile
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			patterns = append(patterns, line)
		}
	}
	return patterns
}

// ignores tells whether the patterns leave out the file at rel (slash
// separated, from the repository's root): the last pattern that matches it
// or a directory above it decides, a "!" pattern taking the file back. In a
// .dockerignore every pattern is relative to the root; in a .gitignore
// (git) a pattern without a slash but at its end matches at any depth.
func (f ignoreFile) ignores(rel string, git bool) bool {
	ignored := false
	for _, p := range f {
		negate := strings.HasPrefix(p, "!")
		p = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(p, "!"), "/"), "/")
		if git && !strings.Contains(p, "/") {
			p = "**/" + p
		}
		if matchesOrParent(p, rel) {
			ignored = !negate
		}
	}
	return ignored
}

// matchesOrParent tells whether the glob p (with ** for any directories)
// matches rel or one of the directories above it.
func matchesOrParent(p, rel string) bool {
	var re strings.Builder
	re.WriteString("^")
	for i := 0; i < len(p); i++ {
		switch {
		case strings.HasPrefix(p[i:], "**/"):
			re.WriteString("(.*/)?")
			i += 2
		case strings.HasPrefix(p[i:], "**"):
			re.WriteString(".*")
			i++
		case p[i] == '*':
			re.WriteString("[^/]*")
		case p[i] == '?':
			re.WriteString("[^/]")
		default:
			re.WriteString(regexp.QuoteMeta(p[i : i+1]))
		}
	}
	re.WriteString("(/.*)?$")
	return regexp.MustCompile(re.String()).MatchString(rel)
}
