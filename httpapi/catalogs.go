package httpapi

import (
	"context"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/httpapi/catalog"
)

// catalogs holds the catalog of each configured library: the library in
// memory, at the index's latest revision, which requests read without
// touching the index.
type catalogs struct {
	index fm.IndexReader
	byLib map[string]*catalog.Catalog
}

func newCatalogs(idx fm.IndexReader, libs []fm.Library) *catalogs {
	cs := &catalogs{index: idx, byLib: map[string]*catalog.Catalog{}}
	for _, l := range libs {
		cs.byLib[l.ID] = catalog.New(idx, l.ID, nil)
	}
	return cs
}

// get returns the library at the revision of state (or a later one),
// bringing its catalog there first if it is behind. The update is shared
// by every request waiting for it, so it does not end when the request
// that started it does.
func (cs *catalogs) get(ctx context.Context, libraryID string, state *fm.LibraryState) (*catalog.Library, error) {
	c := cs.byLib[libraryID]
	if l := c.Current(); l != nil && l.State.Revision >= state.Revision && l.State.RootID == state.RootID {
		return l, nil
	}
	return c.Update(context.WithoutCancel(ctx), state)
}

// built tells whether a catalog of the library was ever made.
func (cs *catalogs) built(libraryID string) bool {
	c := cs.byLib[libraryID]
	return c != nil && c.Current() != nil
}
