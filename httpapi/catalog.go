package httpapi

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/config"
	"golang.org/x/sync/singleflight"
)

// catalog is one library at one revision, held in memory for the API: each
// folder with its children in order and its caller-independent JSON encoded
// once. Requests read it without touching the index. A sync that changes
// the library gives it a new revision, and the next request builds a new
// catalog (once, whatever the number of requests waiting for it).
type catalog struct {
	lib      *config.Library
	revision uint64
	rootID   string
	root     *entry
	byID     map[string]*entry
	// principals numbers the principals some folder grants a role to.
	principals map[string]int32
	ops        opsTable
}

// entry is a folder of a catalog.
type entry struct {
	*fm.Folder
	// grants are the folder's, by principal number.
	grants   []grant
	isRoot   bool
	children []*entry
	// head is the JSON of the folder's fields from fileId to
	// parentFolderIsRoot, tail from resourceKey to restrictedDownload, each
	// with its trailing comma.
	head, tail []byte
	// permissions is operation 4's answer, encoded on first use.
	permissions atomic.Pointer[[]byte]
}

// catalogs holds the current catalog of each library.
type catalogs struct {
	index  fm.IndexReader
	mu     sync.Mutex
	byLib  map[string]*catalog
	flight singleflight.Group
}

func newCatalogs(idx fm.IndexReader) *catalogs {
	return &catalogs{index: idx, byLib: map[string]*catalog{}}
}

// get returns the catalog of lib at the revision of state, building it if
// the one held is older. The build is shared by every request waiting for
// it, so it does not end when the request that started it does.
func (cs *catalogs) get(ctx context.Context, lib *config.Library, state *fm.LibraryState) (*catalog, error) {
	if c := cs.current(lib.ID, state); c != nil {
		return c, nil
	}
	v, err, _ := cs.flight.Do(lib.ID, func() (any, error) {
		if c := cs.current(lib.ID, state); c != nil {
			return c, nil
		}
		c, err := buildCatalog(context.WithoutCancel(ctx), cs.index, lib, state)
		if err != nil {
			return nil, err
		}
		cs.mu.Lock()
		cs.byLib[lib.ID] = c
		cs.mu.Unlock()
		return c, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*catalog), nil
}

// built tells whether a catalog of the library was ever built.
func (cs *catalogs) built(libraryID string) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.byLib[libraryID] != nil
}

func (cs *catalogs) current(libraryID string, state *fm.LibraryState) *catalog {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	c := cs.byLib[libraryID]
	if c == nil || c.revision < state.Revision || c.rootID != state.RootID {
		return nil
	}
	return c
}

// buildRetries bounds the rebuilds of a catalog that a sync changed while
// it was being read.
const buildRetries = 3

// buildCatalog reads a library from the index. The index is read in short
// transactions: if a sync commits meanwhile, the reading starts again.
func buildCatalog(ctx context.Context, idx fm.IndexReader, lib *config.Library, state *fm.LibraryState) (*catalog, error) {
	for range buildRetries {
		c, err := readCatalog(ctx, idx, lib, state)
		if err != nil {
			return nil, err
		}
		now, err := idx.Library(ctx, lib.ID)
		if err != nil {
			return nil, err
		}
		if now.Revision == state.Revision && now.RootID == state.RootID {
			return c, nil
		}
		state = now
	}
	return nil, fmt.Errorf("library %s kept changing while it was read", lib.ID)
}

func readCatalog(ctx context.Context, idx fm.IndexReader, lib *config.Library, state *fm.LibraryState) (*catalog, error) {
	root, err := idx.Folder(ctx, lib.ID, state.RootID)
	if err != nil {
		return nil, err
	}
	c := &catalog{lib: lib, revision: state.Revision, rootID: state.RootID, byID: map[string]*entry{},
		principals: map[string]int32{}, ops: newOpsTable(state.SharingRequiresOrganizer)}
	var enc encoder
	c.root = c.add(&enc, root)
	all := func(*fm.Folder, int) (bool, bool) { return true, true }
	err = idx.Walk(ctx, lib.ID, state.RootID, all, func(f *fm.Folder, _ int) error {
		parent := c.byID[f.ParentID]
		if parent == nil {
			return fmt.Errorf("folder %s: parent %s not read before it", f.ID, f.ParentID)
		}
		parent.children = append(parent.children, c.add(&enc, f))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (c *catalog) add(enc *encoder, f *fm.Folder) *entry {
	e := &entry{Folder: f, isRoot: f.ID == c.rootID, grants: make([]grant, len(f.Grants))}
	e.head, e.tail = enc.folder(c, f)
	c.byID[f.ID] = e
	for i, g := range f.Grants {
		e.grants[i] = grant{principal: c.number(g.Principal), role: g.Role, withLink: g.WithLink}
	}
	f.Grants = nil // the numbered grants say it all
	return e
}

// number returns the number of a principal, giving it one if it has none.
func (c *catalog) number(p string) int32 {
	n, ok := c.principals[p]
	if !ok {
		n = int32(len(c.principals))
		c.principals[p] = n
	}
	return n
}

// grant is a grant of a catalog's folder, its principal numbered.
type grant struct {
	principal int32
	role      fm.Role
	withLink  bool
}
