package syncer_test

import (
	"slices"
	"testing"

	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/syncer"
)

func TestJobs(t *testing.T) {
	cfg := &config.Config{
		Domains: []config.Domain{
			{Name: "example.com", AdminEmail: "admin@example.com"},
			{Name: "nodirectory.org"},
			{Name: "other.net", AdminEmail: "root@other.net"},
		},
		Libraries: []config.Library{{ID: "lib-a"}, {ID: "lib-b"}},
	}
	for _, tc := range []struct {
		library string
		want    []string
	}{
		{"", []string{"directory:example.com", "directory:other.net", "lib-a", "lib-b"}},
		{"lib-b", []string{"lib-b"}},
		{"lib-unknown", nil},
	} {
		if got := syncer.Jobs(cfg, tc.library); !slices.Equal(got, tc.want) {
			t.Errorf("Jobs(%q) = %q, want %q", tc.library, got, tc.want)
		}
	}
	if got := syncer.DirectoryJob("example.com"); got != "directory:example.com" {
		t.Errorf("DirectoryJob = %q", got)
	}
}
