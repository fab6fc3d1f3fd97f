package googlefake

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
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

// TestDriveIndexesFollowTheFiles: through files made, moved between shared
// drives and My Drive, deleted, given times, and whole drives deleted, each
// shared drive's index holds exactly that drive's files, in the order of
// the index of every file.
func TestDriveIndexesFollowTheFiles(t *testing.T) {
	s := New()
	s.Seed(7)
	const owner = "owner@example.com"
	s.AddUser(owner)
	s.built(modifiedTime) // the modifiedTime index kept from the start too
	var drives, folders []string
	for i := range 4 {
		drives = append(drives, s.CreateSharedDrive(fmt.Sprint("drive ", i), owner))
	}
	myDrive := s.CreateFolder(owner, "", "mine")
	parents := append([]string{myDrive}, drives...)
	rng := rand.New(rand.NewPCG(1, 2))
	for step := range 400 {
		switch r := rng.IntN(10); {
		case r < 5 || len(folders) < 4:
			folders = append(folders, s.CreateFolder(owner, parents[rng.IntN(len(parents))], fmt.Sprint("f", step)))
		case r < 8:
			f := folders[rng.IntN(len(folders))]
			if to := parents[rng.IntN(len(parents))]; !slices.Contains(s.subtreeIDs(f), to) {
				s.Move(f, to)
			}
		case r < 9:
			s.SetFileTimes(folders[rng.IntN(len(folders))], time.UnixMilli(rng.Int64N(1e12)), time.UnixMilli(rng.Int64N(1e12)))
		default:
			f := folders[rng.IntN(len(folders))]
			gone := s.subtreeIDs(f)
			s.Delete(f)
			folders = slices.DeleteFunc(folders, func(id string) bool { return slices.Contains(gone, id) })
			parents = slices.DeleteFunc(parents, func(id string) bool { return slices.Contains(gone, id) })
		}
		if step == 200 {
			s.SpreadTimes(time.Unix(0, 0), time.Unix(1e9, 0))
			gone := s.subtreeIDs(drives[0])
			s.DeleteSharedDrive(drives[0])
			folders = slices.DeleteFunc(folders, func(id string) bool { return slices.Contains(gone, id) })
			parents = slices.DeleteFunc(parents, func(id string) bool { return slices.Contains(gone, id) })
		}
		for _, x := range []*timeIndex{&s.byCreated, &s.byModified} {
			checkDriveIndexes(t, fmt.Sprintf("step %d, time index %d", step, x.field), x)
		}
	}
}

// checkDriveIndexes checks that each shared drive's index of x holds that
// drive's files of x, in x's order, and that no index is kept for a drive
// without files.
func checkDriveIndexes(t *testing.T, when string, x *timeIndex) {
	t.Helper()
	want := map[string][]*File{}
	for _, f := range x.files {
		if f.DriveID != "" {
			want[f.DriveID] = append(want[f.DriveID], f)
		}
	}
	for id, d := range x.drives {
		if !slices.Equal(d.files, want[id]) {
			t.Fatalf("%s: drive %s's index holds %d files, want its %d in order", when, id, len(d.files), len(want[id]))
		}
	}
	if len(x.drives) != len(want) {
		t.Fatalf("%s: indexes of %d drives, want %d", when, len(x.drives), len(want))
	}
}

// subtreeIDs returns the IDs of a file and of everything under it.
func (s *Server) subtreeIDs(id string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, f := range s.subtree(s.files[id]) {
		out = append(out, f.ID)
	}
	return out
}
