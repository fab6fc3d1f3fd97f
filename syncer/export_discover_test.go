package syncer

import "testing"

// SetMaxDrivePages sets, for t, the most pages of drives.list a discovery
// reads.
func SetMaxDrivePages(t testing.TB, n int) {
	old := maxDrivePages
	maxDrivePages = n
	t.Cleanup(func() { maxDrivePages = old })
}
