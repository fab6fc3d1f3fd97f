package syncer

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"slices"

	fm "github.com/foldermirror/foldermirror"
)

// Batches a full sync hands the index.
const (
	setBatch    = 1000
	folderBatch = 2000
	linkBatch   = 10000
)

// writeTree replaces the library's tree in the index with the placed
// folders of st: their permission sets, then the folders in order of ID
// (progress counts them), then the links from parents to children in order
// of parent and child ID, every write under fence. Readers switch to the new
// tree at Commit. It sorts placed, and reuses it, rather than hold copies
// of a million folders' numbers.
func (s *Syncer) writeTree(ctx context.Context, libraryID string, fence fm.Fence, st *stage, placed []uint32, state fm.LibraryState, progress fm.ProgressFunc) (fm.Drift, error) {
	w, err := s.index.BeginFullSync(ctx, libraryID, fence)
	if err != nil {
		return fm.Drift{}, err
	}
	defer w.Abort() //nolint:errcheck // after Commit, a no-op; else the sync fails with the first error
	progress(fm.Progress{Library: libraryID, Phase: "writing", Total: len(placed)})
	if err := st.flush(); err != nil {
		return fm.Drift{}, err
	}
	if err := st.mapFile(); err != nil { // unmapped when the stage is closed
		return fm.Drift{}, err
	}
	if err := putSets(ctx, w, st, placed); err != nil {
		return fm.Drift{}, err
	}
	byID := placed
	sortByID(st, byID)
	if err := putFolders(ctx, w, st, byID, func(done int) {
		progress(fm.Progress{Library: libraryID, Phase: "writing", Done: done, Total: len(byID)})
	}); err != nil {
		return fm.Drift{}, err
	}
	if err := putLinks(ctx, w, st, byID); err != nil {
		return fm.Drift{}, err
	}
	return w.Commit(state)
}

// putSets writes every permission set a placed folder refers to, in order
// of key, which an index can append.
func putSets(ctx context.Context, w fm.FullSyncWriter, st *stage, placed []uint32) error {
	seen := make([]bool, len(st.sets))
	var used []uint32
	for _, n := range placed {
		for _, set := range [2]uint32{st.folders.at(n).set, st.folders.at(n).own} {
			if !seen[set] {
				seen[set] = true
				used = append(used, set)
			}
		}
	}
	slices.SortFunc(used, func(a, b uint32) int { return bytes.Compare(st.sets[a].key[:], st.sets[b].key[:]) })
	var buf []byte
	batch := make([]fm.PermissionSet, 0, setBatch)
	for _, n := range used {
		set, err := st.set(buf, n)
		if err != nil {
			return err
		}
		if batch = append(batch, set); len(batch) == cap(batch) {
			if err := putBatch(ctx, w.PutPermissionSets, batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	return putBatch(ctx, w.PutPermissionSets, batch)
}

// putFolders writes the folders, byID being the placed ones in order of ID.
func putFolders(ctx context.Context, w fm.FullSyncWriter, st *stage, byID []uint32, done func(int)) error {
	var arena []byte // the batch's records, which its strings are of: a new one each batch
	batch := make([]fm.Folder, 0, folderBatch)
	for i, n := range byID {
		var f fm.Folder
		var err error
		if f, arena, err = st.folder(arena, n); err != nil {
			return err
		}
		if batch = append(batch, f); len(batch) == cap(batch) || i == len(byID)-1 {
			if err := putBatch(ctx, w.PutFolders, batch); err != nil {
				return err
			}
			batch, arena = batch[:0], make([]byte, 0, 2*len(arena))
			done(i + 1)
			if err := st.releaseFile(); err != nil {
				return err
			}
		}
	}
	return nil
}

// sortByID sorts folders by ID. Each is sorted by its ID's first five
// bytes, held beside its number in one uint64, and only equal ones by the
// IDs themselves: a comparison is then most often of two numbers at hand,
// not of two IDs in the stage's table, far apart in memory.
func sortByID(st *stage, folders []uint32) {
	if len(folders) > 1<<keyNumberBits {
		slices.SortFunc(folders, func(a, b uint32) int { return bytes.Compare(st.ids.Bytes(a), st.ids.Bytes(b)) })
		return
	}
	const prefixBytes = (64 - keyNumberBits) / 8
	keys := make([]uint64, len(folders))
	for i, n := range folders {
		var b [8]byte
		copy(b[:prefixBytes], st.ids.Bytes(n))
		keys[i] = binary.BigEndian.Uint64(b[:]) | uint64(n)
	}
	slices.SortFunc(keys, func(a, b uint64) int {
		if c := cmp.Compare(a>>keyNumberBits, b>>keyNumberBits); c != 0 {
			return c
		}
		return bytes.Compare(st.ids.Bytes(uint32(a&keyNumberMask)), st.ids.Bytes(uint32(b&keyNumberMask)))
	})
	for i, k := range keys {
		folders[i] = uint32(k & keyNumberMask)
	}
}

// The bits of sortByID's keys that hold a folder's number: up to 16,777,216
// folders are sorted by key, more by ID alone.
const (
	keyNumberBits = 24
	keyNumberMask = 1<<keyNumberBits - 1
)

// putLinks writes the links from parents to children, in order of parent
// ID, then child ID; byID are the placed folders in order of ID.
func putLinks(ctx context.Context, w fm.FullSyncWriter, st *stage, byID []uint32) error {
	rank := make([]uint32, st.folders.len())
	for i, n := range byID {
		rank[n] = uint32(i)
	}
	// The links as numbers, each its parent's rank then its child's, sorted.
	links := make([]uint64, 0, len(byID))
	for _, n := range byID {
		if p := st.folders.at(n).parent; p != none {
			links = append(links, uint64(rank[p])<<32|uint64(rank[n]))
		}
	}
	slices.Sort(links)
	batch := make([]fm.ChildLink, 0, linkBatch)
	for _, l := range links {
		n := byID[uint32(l)]
		batch = append(batch, fm.ChildLink{ParentID: unsafeString(st.ids.Bytes(st.folders.at(n).parent)), ChildID: unsafeString(st.ids.Bytes(n))})
		if len(batch) == cap(batch) {
			if err := putBatch(ctx, w.PutChildren, batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	return putBatch(ctx, w.PutChildren, batch)
}

// putBatch hands a batch to the index, unless it is empty or ctx ended.
func putBatch[T any](ctx context.Context, put func([]T) error, batch []T) error {
	if len(batch) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return put(batch)
}
