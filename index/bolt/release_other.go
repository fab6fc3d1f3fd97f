//go:build !linux

package bolt

// unmapPages does nothing where the index does not release mapped pages.
func unmapPages(addr, size uintptr) error { return nil }
