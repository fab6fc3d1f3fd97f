package main

import (
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/foldermirror/foldermirror/config"
)

// composeFile is what TestComposeFile reads of deploy/compose.yaml.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
}

type composeService struct {
	Image       string            `yaml:"image"`
	Build       string            `yaml:"build"`
	Environment map[string]string `yaml:"environment"`
	Volumes     []string          `yaml:"volumes"`
	Ports       []string          `yaml:"ports"`
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Healthcheck *struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
}

// TestComposeFile checks the compose file the README gives for several
// replicas: PostgreSQL 15 or later with a healthcheck, and at least two
// replicas built from the repository's Dockerfile, each on a port of its
// own, all on that database (a URL the configuration takes, naming the
// database, user and password the server is made with), started once it is
// healthy, with the configuration and the key mounted where the image reads
// them.
func TestComposeFile(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.Unmarshal(data, &cf); err != nil {
		t.Fatalf("deploy/compose.yaml: %v", err)
	}
	dbName, db := postgresService(t, cf)
	fullPath := filepath.Join("..", "..", "config", "testdata", "full.yaml") // its key beside it
	full, err := os.ReadFile(fullPath)
	if err != nil {
		t.Fatal(err)
	}
	var replicas, hostPorts []string
	for name, s := range cf.Services {
		if s.Build != ".." {
			continue
		}
		replicas = append(replicas, name)
		indexURL := s.Environment["FOLDERMIRROR_INDEX_URL"]
		u, err := url.Parse(indexURL)
		if err != nil || u.Hostname() != dbName || u.User.Username() != db.Environment["POSTGRES_USER"] ||
			strings.TrimPrefix(u.Path, "/") != db.Environment["POSTGRES_DB"] {
			t.Errorf("%s: FOLDERMIRROR_INDEX_URL %q does not name the database of service %s", name, indexURL, dbName)
		}
		if pw, _ := u.User.Password(); pw != db.Environment["POSTGRES_PASSWORD"] {
			t.Errorf("%s: FOLDERMIRROR_INDEX_URL's password is not the server's POSTGRES_PASSWORD", name)
		}
		if _, err := config.Parse(full, fullPath, []string{"FOLDERMIRROR_INDEX_URL=" + indexURL}); err != nil {
			t.Errorf("%s: the configuration does not take its FOLDERMIRROR_INDEX_URL: %v", name, err)
		}
		if s.DependsOn[dbName].Condition != "service_healthy" {
			t.Errorf("%s: starts before %s is healthy", name, dbName)
		}
		for _, mount := range []string{":/etc/foldermirror/config.yaml:ro", ":/etc/foldermirror/sa.json:ro"} {
			if !slices.ContainsFunc(s.Volumes, func(v string) bool { return strings.HasSuffix(v, mount) }) {
				t.Errorf("%s: nothing mounted as %s", name, mount)
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

// postgresService returns the compose file's PostgreSQL service, checked.
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
		return name, s
	}
	t.Fatal("deploy/compose.yaml has no postgres service")
	return "", composeService{}
}
