package bolt

import "golang.org/x/sys/unix"

// unmapPages drops the process's mappings of size bytes of the index file
// mapped at addr (MADV_DONTNEED on a shared, read-only file mapping: the data
// stays in the file and the page cache, and is faulted in again when read).
func unmapPages(addr, size uintptr) error {
	if size == 0 {
		return nil
	}
	if _, _, errno := unix.Syscall(unix.SYS_MADVISE, addr, size, unix.MADV_DONTNEED); errno != 0 {
		return errno
	}
	return nil
}
