package main

import (
	"bytes"
	"strings"
	"testing"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/config"
)

// Off a terminal, progress is plain lines: one when a phase starts and at
// most one a second per job, each saying the job's current phases.
func TestPlainProgress(t *testing.T) {
	var out bytes.Buffer
	d := newProgressDisplay(&out, func(job string) string { return "the shared drive of " + job })
	for i := 1; i <= 100; i++ {
		d.update("team", fm.Progress{Library: "team", Phase: "listing", Done: i * 10})
		d.update("other", fm.Progress{Library: "other", Phase: "listing", Done: i})
		d.update("team", fm.Progress{Library: "team", Phase: "permissions", Done: i, Total: i + 5})
	}
	d.update("team", fm.Progress{Library: "team", Phase: "writing", Done: 0, Total: 50})
	d.update("team", fm.Progress{Library: "team", Phase: "writing", Done: 10, Total: 50})
	d.update("team", fm.Progress{Library: "team", Phase: "done"})
	d.done("team")
	d.close()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{
		"team: listing the shared drive of team: 10 folders",
		"other: listing the shared drive of other: 1 folder",
		"team: listing the shared drive of team: 10 folders, permissions: 1/6",
		"team: writing: 50 folders",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

// A plain line says how many folders writing writes when it starts, and
// how many of them it wrote on later lines: never a count that stays at 0.
func TestPlainWritingLine(t *testing.T) {
	for _, tt := range []struct {
		done, total int
		want        string
	}{
		{0, 1201, "writing: 1201 folders"},
		{600, 1201, "writing: 600/1201 folders"},
		{1, 1, "writing: 1/1 folder"},
		{0, 1, "writing: 1 folder"},
	} {
		j := &jobProgress{name: "lib", counts: map[string]fm.Progress{}}
		j.record(fm.Progress{Library: "lib", Phase: "writing", Done: tt.done, Total: tt.total})
		if got := j.describe("writing", true); got != tt.want {
			t.Errorf("%d/%d: %q, want %q", tt.done, tt.total, got, tt.want)
		}
	}
}

// On a terminal, a job's line says its phases, the bar's phase last, and
// the bar's counts after it; counts only while no total is known.
func TestProgressLine(t *testing.T) {
	p := func(phase string, done, total int) fm.Progress {
		return fm.Progress{Library: "lib", Phase: phase, Done: done, Total: total}
	}
	tests := []struct {
		name          string
		reports       []fm.Progress
		label, counts string
	}{
		{"listing My Drive", []fm.Progress{p("listing", 300, 0)}, "listing the whole Drive of s@example.com: 300 folders", ""},
		{"permissions while listing", []fm.Progress{p("listing", 300, 0), p("permissions", 120, 500)},
			"listing the whole Drive of s@example.com: 300 folders, permissions", "120/500"},
		{"writing ends the reading", []fm.Progress{p("listing", 300, 0), p("permissions", 500, 500), p("writing", 3, 10)}, "writing", "3/10 folders"},
		{"changes", []fm.Progress{p("changes", 12, 0)}, "reading changes: 12", ""},
		{"nothing to write", []fm.Progress{p("changes", 0, 0), p("writing", 0, 0)}, "writing: 0 folders", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := &jobProgress{name: "lib", listing: "the whole Drive of s@example.com", counts: map[string]fm.Progress{}}
			for _, r := range tt.reports {
				j.record(r)
			}
			if label, counts := j.label(), j.barCounts(); label != tt.label || counts != tt.counts {
				t.Errorf("line %q [bar] %q; want %q [bar] %q", label, counts, tt.label, tt.counts)
			}
		})
	}
}

// A sync's summary line says why a full sync read the whole library.
func TestSummarySaysWhyFull(t *testing.T) {
	for _, tt := range []struct {
		result fm.SyncResult
		want   string
	}{
		{fm.SyncResult{Library: "eng", Full: true, FullReason: fm.FullFirst, Folders: 3, Permissions: 4, Calls: 5},
			"eng: full sync (first sync): 3 folders, 4 permissions, drift 0, 5 Drive calls, 0s"},
		{fm.SyncResult{Library: "eng", Full: true, FullReason: fm.FullTokenRefused, Folders: 3},
			"eng: full sync (Drive refused the saved changes token): 3 folders, 0 permissions, drift 0, 0 Drive calls, 0s"},
		{fm.SyncResult{Library: "eng", Full: true, FullReason: fm.FullScheduled},
			"eng: full sync (scheduled): 0 folders, 0 permissions, drift 0, 0 Drive calls, 0s"},
		{fm.SyncResult{Library: "eng", Full: true, FullReason: fm.FullAsked, Folders: 9000, Calls: 14, Ranges: 4},
			"eng: full sync (asked): 9000 folders, 0 permissions, drift 0, 14 Drive calls in 4 createdTime ranges, 0s"},
		{fm.SyncResult{Library: "eng", Full: true, FullReason: fm.FullAsked, Folders: 9000, Calls: 24, Ranges: 8,
			ListingFallback: "the server ignored the createdTime bounds of a query"},
			"eng: full sync (asked): 9000 folders, 0 permissions, drift 0, 24 Drive calls in 8 createdTime ranges, " +
				"then one sequential listing (the server ignored the createdTime bounds of a query), 0s"},
		{fm.SyncResult{Library: "eng", Changes: 2, Applied: 1, Folders: 3, Calls: 1},
			"eng: incremental sync: 2 changes, 1 folder written or removed, 3 folders, 1 Drive call, 0s"},
		{fm.SyncResult{Library: "eng", Full: true, FullReason: fm.FullAsked, Folders: 1, Permissions: 1, Calls: 1},
			"eng: full sync (asked): 1 folder, 1 permission, drift 0, 1 Drive call, 0s"},
		{fm.SyncResult{Library: "eng", Changes: 1, Applied: 2, Folders: 1, Calls: 2},
			"eng: incremental sync: 1 change, 2 folders written or removed, 1 folder, 2 Drive calls, 0s"},
	} {
		if got := summary(&tt.result); got != tt.want {
			t.Errorf("summary:\n got %s\nwant %s", got, tt.want)
		}
	}
}

// Every count the sync and demo commands print agrees with its noun: "1
// group", "2 groups".
func TestCountsAgreeInNumber(t *testing.T) {
	one := &fm.DirectoryResult{Domain: "example.com", Users: 1, Groups: 1, Calls: 1}
	two := &fm.DirectoryResult{Domain: "example.com", Users: 2, Groups: 2, Calls: 2}
	lib := &config.Library{ID: "lib-eng", Name: "Engineering"}
	for _, tt := range []struct{ got, want string }{
		{directoryLine("directory:example.com", one), "directory:example.com: 1 user, 1 group, 1 Directory call, 0s"},
		{directoryLine("directory:example.com", two), "directory:example.com: 2 users, 2 groups, 2 Directory calls, 0s"},
		{(&syncCommand{jobs: 1}).joinFailures([]error{jobFailed("eng")}).Error(), "1 of 1 sync failed (eng); the reasons are above"},
		{(&syncCommand{jobs: 3}).joinFailures([]error{jobFailed("eng")}).Error(), "1 of 3 syncs failed (eng); the reasons are above"},
		{demoSyncLine(lib, &fm.SyncResult{Folders: 1, Permissions: 1, Calls: 1}),
			"  synced lib-eng      Engineering     1 folder       1 permission      1 Drive call   0s"},
		{demoSyncLine(lib, &fm.SyncResult{Folders: 1200, Permissions: 3000, Calls: 40}),
			"  synced lib-eng      Engineering  1200 folders   3000 permissions    40 Drive calls  0s"},
	} {
		if tt.got != tt.want {
			t.Errorf("\n got %q\nwant %q", tt.got, tt.want)
		}
	}
}
