package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/foldermirror/foldermirror/internal/pgtest"
)

// testBackends are the index backends the end-to-end tests run on: bbolt,
// and PostgreSQL when FOLDERMIRROR_TEST_POSTGRES names a server.
func testBackends(t *testing.T) []string {
	t.Helper()
	if os.Getenv(pgtest.EnvURL) == "" {
		t.Logf("PostgreSQL variants not run: set %s to a server's URL to run them", pgtest.EnvURL)
		return []string{"bbolt"}
	}
	return []string{"bbolt", "postgres"}
}

// indexConfig returns the configuration lines that put the index on
// backend: none for bbolt, index.url of a new database for postgres.
func indexConfig(t *testing.T, backend string) string {
	t.Helper()
	if backend != "postgres" {
		return ""
	}
	return fmt.Sprintf("index: {url: %q, leaseTtl: 3s}\n", pgtest.NewDatabase(t))
}
