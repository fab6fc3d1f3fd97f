package tests

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/foldermirror/foldermirror/config"
)

// examplePath is the configuration operators start from.
var examplePath = filepath.Join("..", "deploy", "config.example.yaml")

// The example configuration cannot be used as is: config check refuses
// it, with a key file given, for its placeholders only, each security
// code's sha256, saying how to make one; with the placeholders filled, it
// is valid.
func TestExampleConfigNeedsItsPlaceholdersFilled(t *testing.T) {
	key, err := filepath.Abs(filepath.Join("..", "config", "testdata", "sa.json"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("FOLDERMIRROR_STORAGE_CREDENTIALS_FILE", key)
	r := runBinary(t, "config", "check", "--config", examplePath)
	status := r.code
	said := strings.TrimPrefix(strings.TrimSpace(r.said()), "foldermirror: ")
	lines := strings.Split(said, "\n")
	placeholder := regexp.MustCompile(`^` + regexp.QuoteMeta(examplePath) + `: domains\[\d+\]\.securityCodes\[\d+\]\.sha256: ".*" is not a SHA-256 digest; .*printf %s .* \| sha256sum`)
	if status != 1 {
		t.Fatalf("config check of the example: status %d, said\n%s\nwant 1 and each placeholder named", status, said)
	}
	for _, line := range lines {
		if !placeholder.MatchString(line) {
			t.Errorf("config check of the example said %q; want only its placeholders refused, each saying how to fill it", line)
		}
	}

	// Filled in, it is valid: the rest of it is a working configuration.
	data, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	digests := 0
	filled := regexp.MustCompile(`sha256: "<[^"]*>"`).ReplaceAllStringFunc(string(data), func(string) string {
		digests++
		return `sha256: "` + strings.Repeat(string(rune('a'+digests)), 64) + `"`
	})
	if digests != len(lines) {
		t.Errorf("%d placeholders in the example, %d refused", digests, len(lines))
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(filled), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Load(path); err != nil {
		t.Errorf("the example, its placeholders filled: %v", err)
	}
}
