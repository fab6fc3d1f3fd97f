//go:build !unix

package syncer

import "os"

// mapReadOnly maps nothing where files cannot be mapped: records are read
// with a system call each.
func mapReadOnly(*os.File, int64) ([]byte, error) { return nil, nil }

// unmapReadOnly undoes mapReadOnly.
func unmapReadOnly([]byte) error { return nil }

// releaseMapped has nothing to release.
func releaseMapped([]byte) error { return nil }
