package syncer

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// UnreadableGroups is foldermirror_directory_unreadable_groups, for the
// tests of package syncer_test to read with testutil.
func (m *Metrics) UnreadableGroups() *prometheus.GaugeVec { return m.unreadableGroups }

// SetSplitFolders sets, for t, the fewest folders a createdTime range must
// have left to be cut, so that small libraries are listed in many ranges.
func SetSplitFolders(t testing.TB, n int) {
	old := splitFolders
	splitFolders = n
	t.Cleanup(func() { splitFolders = old })
}

// SetListPageSize sets, for t, how many folders a files.list call of a
// full sync asks for, so that small libraries take many pages.
func SetListPageSize(t testing.TB, n int) {
	old := listPageSize
	listPageSize = n
	t.Cleanup(func() { listPageSize = old })
}
