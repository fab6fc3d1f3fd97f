package googlefake

import "google.golang.org/api/drive/v3"

// arena recycles the client-library structs answers are built from. An
// answer is encoded before the server's lock is released and none of its
// structs is kept after, so the next answer can reuse them: a page of 1,000
// files with their permissions, built afresh, would allocate some 4 MB that
// the garbage collector must then reclaim while the store of a large world
// fills the heap. Use with the lock held; reset before each answer.
type arena struct {
	files       slab[fileParts]
	perms       slab[drive.Permission]
	permPtrs    slab[*drive.Permission]
	details     slab[drive.PermissionPermissionDetails]
	detailPtrs  slab[*drive.PermissionPermissionDetails]
	parentLists slab[string]
}

// fileParts is a file resource with the structs it points to.
type fileParts struct {
	file         drive.File
	restrictions drive.DownloadRestrictionsMetadata
	restriction  drive.DownloadRestriction
	capabilities drive.FileCapabilities
	owner        drive.User
	owners       [1]*drive.User
}

// reset makes every struct handed out available again.
func (a *arena) reset() {
	a.files.reset()
	a.perms.reset()
	a.permPtrs.reset()
	a.details.reset()
	a.detailPtrs.reset()
	a.parentLists.reset()
}

// slabChunk is how many values a slab allocates at a time.
const slabChunk = 256

// slab hands out zeroed values of T from chunks it keeps between resets.
type slab[T any] struct {
	chunks [][]T
	// chunk is the chunk being handed out, used how much of it is.
	chunk, used int
}

// take returns n contiguous zeroed values, capped so that appending to them
// copies.
func (s *slab[T]) take(n int) []T {
	for {
		if s.chunk == len(s.chunks) {
			s.chunks = append(s.chunks, make([]T, max(slabChunk, n)))
		}
		if c := s.chunks[s.chunk]; s.used+n <= len(c) {
			out := c[s.used : s.used+n : s.used+n]
			s.used += n
			clear(out)
			return out
		}
		s.chunk, s.used = s.chunk+1, 0
	}
}

// one returns a zeroed value.
func (s *slab[T]) one() *T { return &s.take(1)[0] }

func (s *slab[T]) reset() { s.chunk, s.used = 0, 0 }
