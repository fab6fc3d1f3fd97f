package catalog

import (
	"context"
	"runtime/debug"
	"sync/atomic"

	fm "github.com/foldermirror/foldermirror"
)

// releaseFrom is the size of a library, in folders, from which reading it
// whole returns the memory it used to the system at once.
const releaseFrom = 50_000

// Catalog keeps one library's current Library, and makes the next ones
// from an index. It is safe for concurrent use: updates happen one at a
// time, and readers take the current Library at any time.
type Catalog struct {
	libraryID string
	index     fm.IndexReader
	observe   func(*Library)

	// updating holds a token while an update runs: one at a time. It
	// guards grants. A channel rather than a sync.Mutex, so that a request
	// waiting for another's update is durably blocked, as testing/synctest
	// calls it: a test can see it wait without sleeping.
	updating chan struct{}
	grants   *grantTable
	current  atomic.Pointer[Library]

	// saving holds a token while Save runs. saved is the base the index
	// keeps: read from it, or saved last.
	saving chan struct{}
	saved  atomic.Pointer[base]
}

// New returns the catalog of a library of idx; it holds nothing until its
// first Update. observe, if not nil, is told of each Library the catalog
// makes current, once it is: one call at a time, in order, before the
// update that made it returns.
func New(idx fm.IndexReader, libraryID string, observe func(*Library)) *Catalog {
	return &Catalog{libraryID: libraryID, index: idx, observe: observe, updating: make(chan struct{}, 1),
		saving: make(chan struct{}, 1)}
}

// Current returns the Library made last, nil before the first Update.
func (c *Catalog) Current() *Library { return c.current.Load() }

// Update brings the catalog to revision state (the index's current one, or
// later), and returns the Library of that revision or a later one: from the
// changes since the current Library when the index keeps them, else by
// reading the whole library. ENOTFOUND if the library was never synced.
func (c *Catalog) Update(ctx context.Context, state *fm.LibraryState) (*Library, error) {
	c.updating <- struct{}{}
	defer func() { <-c.updating }()
	cur := c.current.Load()
	if cur != nil && cur.State.Revision >= state.Revision && cur.State.RootID == state.RootID {
		return cur, nil
	}
	next, err := c.next(ctx, cur)
	if err != nil {
		return nil, err
	}
	if next != cur {
		c.current.Store(next)
		if c.observe != nil {
			c.observe(next)
		}
	}
	return next, nil
}

// next makes the Library that follows cur (nil: none yet).
func (c *Catalog) next(ctx context.Context, cur *Library) (*Library, error) {
	if cur != nil {
		cs, err := c.index.Changes(ctx, c.libraryID, cur.State.Revision)
		if err != nil {
			return nil, err
		}
		if !cs.Reread && cs.State.RootID == cur.State.RootID {
			if cs.State.Revision == cur.State.Revision {
				return cur, nil
			}
			return cur.apply(c.grants, cs)
		}
		// The catalog the index keeps is no newer than cur, whose
		// revision the changes do not lead from: it is of no use.
		return c.readAll(ctx)
	}
	return c.read(ctx)
}

// read makes the library's Library from the catalog the index keeps, if
// it keeps one it can bring up to date, else from the whole library.
func (c *Catalog) read(ctx context.Context) (*Library, error) {
	if l, err := c.readKept(ctx); err == nil {
		return l, nil
	}
	return c.readAll(ctx)
}

// readAll reads the whole library, with grants of its own.
func (c *Catalog) readAll(ctx context.Context) (*Library, error) {
	var size int // the library's size as last read, a hint to size the loader
	if st, err := c.index.Library(ctx, c.libraryID); err == nil {
		size = st.Folders
	}
	ld := loaderFor(newGrantTable(), size)
	state, err := c.index.ReadLibrary(ctx, c.libraryID, ld)
	if werr := ld.wait(); err == nil {
		err = werr
	}
	var b *base
	if err == nil {
		if ld.large() {
			// Reading the permission sets left garbage (tens of
			// megabytes for a million folders): the system's again
			// before the base takes about as much as the loader.
			debug.FreeOSMemory()
		}
		b, err = ld.base(state.RootID)
	}
	if err == nil {
		b.revision = state.Revision
	}
	grants, large := ld.grants, ld.large()
	ld.done() // before the memory is given back: a large loader is garbage then
	if err != nil {
		return nil, err
	}
	c.grants = grants
	if large {
		// The loader was as large as the base: give its memory back to the
		// system now rather than over minutes, so that a daemon that read a
		// large library holds about what it keeps.
		debug.FreeOSMemory()
	}
	return &Library{State: *state, base: b, grants: c.grants.view()}, nil
}
