//go:build unix

package syncer

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapReadOnly maps the first size bytes of f into memory, read only; nil
// for none.
func mapReadOnly(f *os.File, size int64) ([]byte, error) {
	if size == 0 {
		return nil, nil
	}
	return unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
}

// unmapReadOnly undoes mapReadOnly.
func unmapReadOnly(m []byte) error { return unix.Munmap(m) }

// releaseMapped drops the pages of m the process has read: they stay in
// the file and the system's cache, and are read again if used.
func releaseMapped(m []byte) error {
	if len(m) == 0 {
		return nil
	}
	return unix.Madvise(m, unix.MADV_DONTNEED)
}
