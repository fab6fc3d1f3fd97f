package googlefake

import (
	"testing"
	"unsafe"
)

// TestFileStaysSmall guards the memory of a large world: a File, times
// included, fits the allocator's 192-byte size class, as it did before it
// had times.
func TestFileStaysSmall(t *testing.T) {
	if size := unsafe.Sizeof(File{}); size > 192 {
		t.Errorf("a File takes %d bytes, over 192: mind the padding", size)
	}
}
