package wire_test

import (
	"slices"
	"testing"

	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/internal/wire"
)

// The plan syncs the directories of the domains with an adminEmail, then
// every library.
func TestPlan(t *testing.T) {
	cfg := &config.Config{
		Domains: []config.Domain{
			{Name: "example.com", AdminEmail: "admin@example.com"},
			{Name: "nodirectory.org"},
			{Name: "other.net", AdminEmail: "root@other.net"},
		},
		Libraries: []config.Library{{ID: "lib-a"}, {ID: "lib-b"}},
	}
	plan := wire.Plan(cfg, wire.Libraries(cfg))
	if want := []string{"example.com", "other.net"}; !slices.Equal(plan.Directories, want) {
		t.Errorf("directories %q, want %q", plan.Directories, want)
	}
	if want := []string{"directory:example.com", "directory:other.net", "lib-a", "lib-b"}; !slices.Equal(plan.Jobs(""), want) {
		t.Errorf("jobs %q, want %q", plan.Jobs(""), want)
	}
}
