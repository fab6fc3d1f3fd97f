package syncer

import (
	"bytes"
	"context"
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
	slices.SortFunc(byID, func(a, b uint32) int { return bytes.Compare(st.ids.Bytes(a), st.ids.Bytes(b)) })
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
	var buf []byte
	batch := make([]fm.Folder, 0, folderBatch)
	for i, n := range byID {
		f, err := st.folder(buf, n)
		if err != nil {
			return err
		}
		if batch = append(batch, f); len(batch) == cap(batch) || i == len(byID)-1 {
			if err := putBatch(ctx, w.PutFolders, batch); err != nil {
				return err
			}
			batch = batch[:0]
			done(i + 1)
		}
	}
	return nil
}

// putLinks writes the links from parents to children, in order of parent
// ID, then child ID. It reorders byID, the placed folders in order of ID.
func putLinks(ctx context.Context, w fm.FullSyncWriter, st *stage, byID []uint32) error {
	rank := make([]uint32, st.folders.len())
	for i, n := range byID {
		rank[n] = uint32(i)
	}
	children := slices.DeleteFunc(byID, func(n uint32) bool { return st.folders.at(n).parent == none })
	slices.SortFunc(children, func(a, b uint32) int {
		if pa, pb := rank[st.folders.at(a).parent], rank[st.folders.at(b).parent]; pa != pb {
			return int(pa) - int(pb)
		}
		return int(rank[a]) - int(rank[b])
	})
	batch := make([]fm.ChildLink, 0, linkBatch)
	for _, n := range children {
		batch = append(batch, fm.ChildLink{ParentID: st.ids.String(st.folders.at(n).parent), ChildID: st.ids.String(n)})
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
