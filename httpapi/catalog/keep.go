package catalog

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"

	fm "github.com/foldermirror/foldermirror"
)

// keepFrom is the size of a library, in folders, from which its catalog is
// kept in an index that keeps catalogs (fm.CatalogStore): reading a
// smaller one whole takes a few milliseconds. (A variable, so that tests
// can keep small ones.)
var keepFrom = 10_000

// keepAfterSyncFrom is the size of a library, in folders, from which a
// process that syncs without serving (Keep) makes and keeps its catalog:
// below it, a daemon reads the library whole at start in about a tenth of a
// second, less than Keep would add to the sync. (A variable, so that tests
// can keep small ones.)
var keepAfterSyncFrom = 200_000

// readKept reads the catalog the index keeps, and brings it to the index's
// revision with the changes since; an error if the index keeps none, or
// none that can be used (see decodeSaved), or none the changes it logged
// lead from (a full sync replaced the tree since, or the log no longer
// reaches back).
func (c *Catalog) readKept(ctx context.Context) (*Library, error) {
	store, ok := c.index.(fm.CatalogStore)
	if !ok {
		return nil, unusable("the index keeps no catalog")
	}
	var kept *savedLibrary
	err := store.ReadCatalog(ctx, c.libraryID, func(r io.Reader, size int64) error {
		var err error
		kept, err = decodeSaved(r, size)
		return err
	})
	if err != nil {
		return nil, err
	}
	b := kept.base
	cs, err := c.index.Changes(ctx, c.libraryID, b.revision)
	switch {
	case err != nil:
		return nil, err
	case cs.Reread || cs.State.Revision < b.revision || cs.State.RootID != unsafeString(b.ids.Bytes(0)):
		return nil, unusable("made at revision %d, which the index cannot lead from to its %d", b.revision, cs.State.Revision)
	}
	l := &Library{State: cs.State, base: b, grants: kept.grants.view()}
	if cs.State.Revision > b.revision {
		if l, err = l.apply(kept.grants, cs); err != nil {
			return nil, err
		}
	}
	c.grants = kept.grants
	c.saved.Store(b)
	return l, nil
}

// Save has the index keep the current Library's base, unless the index
// keeps no catalogs (fm.CatalogStore), keeps that base already, or the
// library is smaller than keepFrom. It runs beside updates, one Save at a
// time; a daemon saves after the updates that follow a sync, so that the
// index keeps a base its changes lead from to the library's revision.
func (c *Catalog) Save(ctx context.Context) error {
	store, ok := c.index.(fm.CatalogStore)
	if !ok {
		return nil
	}
	c.saving <- struct{}{}
	defer func() { <-c.saving }()
	l := c.Current()
	if l == nil || l.base == c.saved.Load() || l.base.len() < keepFrom {
		return nil
	}
	if err := store.SaveCatalog(ctx, c.libraryID, encodeSaved(l.base, l.grants)); err != nil {
		return fmt.Errorf("keep the catalog of library %s in the index: %w", c.libraryID, err)
	}
	// The buffers the index wrote the catalog with are garbage now; they
	// are not given back to the system here (debug.FreeOSMemory): a daemon
	// saves after each sync of a large library, and giving back all the
	// memory it is not using made its next sync fault in every page it
	// allocated, some 1,200 a sync of 1,000 changes at 100,000 folders, at
	// 15 µs each on a virtual machine. The runtime's scavenger gives back
	// what stays unused, in the background.
	c.saved.Store(l.base)
	return nil
}

// Keep brings the catalog an index keeps of a library (fm.CatalogStore)
// to the library's revision, for a process that syncs without serving
// (foldermirror sync), so that the next start of a daemon reads it: it
// reads the catalog kept and the changes since, or, when the index can
// lead from none, the library whole, and saves the catalog made if it is
// new (see Save). An index that keeps no catalogs does nothing, nor does a
// library smaller than keepAfterSyncFrom.
func Keep(ctx context.Context, idx fm.IndexReader, libraryID string) error {
	if _, ok := idx.(fm.CatalogStore); !ok {
		return nil
	}
	st, err := idx.Library(ctx, libraryID)
	if err != nil || st.Folders < max(keepFrom, keepAfterSyncFrom) {
		return err
	}
	if st.Folders >= releaseFrom {
		// What the sync used is garbage now: the system's again before
		// the catalog takes about as much, so that the process does not
		// hold both.
		debug.FreeOSMemory()
	}
	c := New(idx, libraryID, nil)
	if _, err := c.Update(ctx, st); err != nil {
		return err
	}
	return c.Save(ctx)
}
