package schedule_test

import (
	"slices"
	"testing"

	"github.com/foldermirror/foldermirror/schedule"
)

func TestJobs(t *testing.T) {
	plan := schedule.Plan{Directories: []string{"example.com", "other.net"}, Libraries: libraries("lib-a", "lib-b")}
	for _, tc := range []struct {
		library string
		want    []string
	}{
		{"", []string{"directory:example.com", "directory:other.net", "lib-a", "lib-b"}},
		{"lib-b", []string{"lib-b"}},
		{"lib-unknown", nil},
		{"directory:example.com", nil},
	} {
		if got := plan.Jobs(tc.library); !slices.Equal(got, tc.want) {
			t.Errorf("Jobs(%q) = %q, want %q", tc.library, got, tc.want)
		}
	}
	if got := schedule.DirectoryJob("example.com"); got != "directory:example.com" {
		t.Errorf("DirectoryJob = %q", got)
	}
}
