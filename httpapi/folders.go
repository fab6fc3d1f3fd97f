package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/httpapi/catalog"
	"github.com/gin-gonic/gin"
)

// deprecatedSince is when operations 2, 3 and 4 were deprecated, as their
// Deprecation header (RFC 9745) says.
var deprecatedSince = time.Date(2025, time.January, 1, 0, 0, 0, 0, time.UTC)

// deprecation is the values of the Deprecation header, shared by every
// answer (see encodedAnswer).
var deprecation = []string{"@" + strconv.FormatInt(deprecatedSince.Unix(), 10)}

func setDeprecated(c *gin.Context) { c.Writer.Header()["Deprecation"] = deprecation }

// current returns a library of the set at the index's latest revision;
// ENOTFOUND if never synced.
func (s *Server) current(ctx context.Context, libraryID string, st *libState) (*catalog.Library, error) {
	state, err := s.index.Library(ctx, libraryID)
	var l *catalog.Library
	if err == nil {
		l, err = st.library(ctx, state)
	}
	if err == nil || fm.ErrorCode(err) == fm.ENOTFOUND {
		s.libs.read(libraryID)
	}
	return l, err
}

// synced returns lib, a library of the set, at the index's latest
// revision, seen by cl (nil: nobody); ENOTFOUND if never synced.
func (s *Server) synced(ctx context.Context, lib fm.Library, st *libState, cl *caller) (*libraryView, error) {
	l, err := s.current(ctx, lib.ID, st)
	if err != nil {
		return nil, err
	}
	shown := st.show(lib, s.domain)
	lv := &libraryView{st: st, def: &shown.def, json: shown.json, configTag: shown.configTag, lib: l,
		ops: &opsTables[b2i(l.State.SharingRequiresOrganizer)]}
	if cl != nil {
		lv.viewer = viewerOf(l, lib.Domain, cl)
	}
	return lv, nil
}

// Warm brings a library's catalog to the index's latest revision, so that
// the next request finds it ready. The daemon calls it after each change of
// a library in the index, for a lookup of a folder by its ID does not read
// every library: it reads those never read, and looks in the catalogs made
// (bringing up to date only those that hold the folder). A library read
// before its first sync, or a folder new in a catalog not brought up to
// date, is found once Warm (or a request naming the library) reads it.
// Warm then has an index that keeps catalogs keep the one made, if it is
// new and large (catalog.Save), so that the next start reads it rather
// than the whole library; a failure to keep it is logged.
func (s *Server) Warm(ctx context.Context, libraryID string) error {
	if _, st, ok := s.libs.get(libraryID); ok {
		if _, err := s.current(ctx, libraryID, st); err != nil {
			return err
		}
		if err := st.catalog.Save(ctx); err != nil && ctx.Err() == nil {
			s.logger.Warn("could not keep the library's catalog in the index; the next start reads the library whole",
				"library", libraryID, "err", err)
		}
		return nil
	}
	return fm.Errorf(fm.ENOTFOUND, "Library %s is not served.", libraryID)
}

// Warmed tells whether a catalog of a library was made: requests find it
// (a sync since then makes the next request wait for it to catch up, which
// takes the time of reading the sync's changes).
func (s *Server) Warmed(_ context.Context, libraryID string) bool {
	return s.libs.built(libraryID)
}

// visibleLibrary returns a synced library of the set the caller may see.
func (s *Server) visibleLibrary(ctx context.Context, cl *caller, libraryID string) (*libraryView, error) {
	notFound := fm.Errorf(fm.ENOTFOUND, "Library %s not found.", libraryID)
	lib, st, ok := s.libs.get(libraryID)
	if !ok {
		return nil, notFound
	}
	inDomain := cl.Domain == lib.Domain
	lv, err := s.synced(ctx, lib, st, cl)
	switch {
	case fm.ErrorCode(err) == fm.ENOTFOUND && inDomain:
		return nil, unavailable("Library %s has not been synced yet.", libraryID)
	case fm.ErrorCode(err) == fm.ENOTFOUND:
		return nil, notFound
	case err != nil:
		return nil, err
	}
	if !inDomain && !lv.viewer.sharedWith() {
		return nil, notFound
	}
	return lv, nil
}

// locateFolder finds a folder by ID in the synced libraries, among those the
// caller may read directly (see readsDirectly), with the resource keys the
// request carries. It looks in the libraries whose catalogs may hold the
// folder (see libraries.mayHold), each brought to the index's latest
// revision, in the order of their IDs.
func (s *Server) locateFolder(ctx context.Context, cl *caller, folderID string, keys resourceKeys) (*libraryView, catalog.Ref, access, error) {
	if err := s.readUnread(ctx); err != nil {
		return nil, catalog.Ref{}, access{}, err
	}
	for _, id := range s.libs.mayHold(folderID) {
		lib, st, ok := s.libs.get(id)
		if !ok {
			continue // the set dropped it since
		}
		lv, err := s.synced(ctx, lib, st, nil)
		if fm.ErrorCode(err) == fm.ENOTFOUND {
			continue
		} else if err != nil {
			return nil, catalog.Ref{}, access{}, err
		}
		r, ok := lv.lib.Lookup(folderID)
		if !ok {
			continue
		}
		lv.viewer = viewerOf(lv.lib, lib.Domain, cl) // only for the library that holds the folder
		if a := lv.viewer.access(r); readsDirectly(a, lv.lib, r, keys) {
			return lv, r, a, nil
		}
	}
	return nil, catalog.Ref{}, access{}, folderNotFound(folderID)
}

// readUnread reads the libraries of the set whose state in the index was
// never read, making the catalogs of those synced, so that a folder lookup
// finds their folders.
func (s *Server) readUnread(ctx context.Context) error {
	for _, id := range s.libs.unreadIDs() {
		if _, st, ok := s.libs.get(id); ok {
			if _, err := s.current(ctx, id, st); err != nil && fm.ErrorCode(err) != fm.ENOTFOUND {
				return err
			}
		}
	}
	return nil
}

// folderNotFound is the one answer to a folder ID the caller may not read,
// whatever the reason: unknown, not shared with it, reached by a link
// without its resource key, the root of a library it may not see. A 404
// never says which.
func folderNotFound(folderID string) error {
	return fm.Errorf(fm.ENOTFOUND, "Folder %s not found.", folderID)
}

// folderParam finds the folder the path's folderId names, among those the
// caller may see; marks the answer deprecated if it is; and sets the
// freshness headers. False: it answered the request itself (an error, or
// 304 Not Modified).
func (s *Server) folderParam(c *gin.Context, deprecated bool) (*libraryView, catalog.Ref, fm.Role, bool) {
	lv, r, a, err := s.locateFolder(c.Request.Context(), callerOf(c), c.Param("folderId"), requestResourceKeys(c.Request))
	if err != nil {
		s.writeError(c, err)
		return nil, catalog.Ref{}, fm.RoleNone, false
	}
	if deprecated {
		setDeprecated(c)
	}
	return lv, r, a.role, !s.validate(c, lv)
}

// libraryParam returns the library the path's libraryId names, if the
// caller may see it. False: it answered the request with an error.
func (s *Server) libraryParam(c *gin.Context) (*libraryView, bool) {
	lv, err := s.visibleLibrary(c.Request.Context(), callerOf(c), c.Param("libraryId"))
	if err != nil {
		s.writeError(c, err)
		return nil, false
	}
	return lv, true
}

// childrenQuery is the query of operations 2 and 6.
type childrenQuery struct {
	onlyDirect bool
	nameFilter string
}

func parseChildrenQuery(c *gin.Context) (childrenQuery, error) {
	q := childrenQuery{nameFilter: strings.ToLower(c.Query("nameFilter"))}
	if v, ok := c.GetQuery("onlyDirectChildren"); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return q, fm.Errorf(fm.EINVALID, "Invalid value for onlyDirectChildren: %q is not true or false.", v)
		}
		q.onlyDirect = b
	}
	return q, nil
}

// listChildrenDeprecated is operation 2.
func (s *Server) listChildrenDeprecated(c *gin.Context) {
	q, err := parseChildrenQuery(c)
	if err != nil {
		s.writeError(c, err)
		return
	}
	lv, ok := s.libraryParam(c)
	if !ok {
		return
	}
	parent := lv.lib.Root()
	if id := c.Query("folderServiceId"); id != "" {
		r, ok := lv.lib.Lookup(id)
		if !ok || !readsDirectly(lv.viewer.access(r), lv.lib, r, requestResourceKeys(c.Request)) {
			s.writeError(c, folderNotFound(id))
			return
		}
		parent = r
	}
	setDeprecated(c)
	c.Header("Link", fmt.Sprintf(`</folder/v1/files/%s/children>; rel="successor-version"`, url.PathEscape(lv.lib.View(parent).ID)))
	if !s.validate(c, lv) {
		s.streamChildren(c, lv, parent, q)
	}
}

// listChildren is operation 6. On a library's root it answers what
// operation 2 answers without a parent: the root's children the caller may
// list, whether or not it may see the root itself.
func (s *Server) listChildren(c *gin.Context) {
	q, err := parseChildrenQuery(c)
	if err != nil {
		s.writeError(c, err)
		return
	}
	lv, isRoot, err := s.libraryRootedAt(c.Request.Context(), callerOf(c), c.Param("folderId"))
	switch {
	case err != nil:
		s.writeError(c, err)
	case isRoot:
		if !s.validate(c, lv) {
			s.streamChildren(c, lv, lv.lib.Root(), q)
		}
	default:
		if lv, r, _, ok := s.folderParam(c, false); ok {
			s.streamChildren(c, lv, r, q)
		}
	}
}

// libraryRootedAt returns the synced library whose root folder is
// folderID, if the caller may see it; false if none is rooted there. Among
// the libraries whose catalogs are rooted there, it is the first whose
// root in the index still is. One the caller may not see is a 404 that
// does not name it.
func (s *Server) libraryRootedAt(ctx context.Context, cl *caller, folderID string) (*libraryView, bool, error) {
	if err := s.readUnread(ctx); err != nil {
		return nil, false, err
	}
	for _, id := range s.libs.rootedAt(folderID) {
		if st, err := s.index.Library(ctx, id); err != nil || st.RootID != folderID {
			continue
		}
		lv, err := s.visibleLibrary(ctx, cl, id)
		if fm.ErrorCode(err) == fm.ENOTFOUND {
			err = folderNotFound(folderID) // not "Library L not found": that would name it
		}
		return lv, true, err
	}
	return nil, false, nil
}

// streamChildren writes the children of parent the caller may list, sorted,
// each with its listable descendants nested unless only direct children are
// asked for. nameFilter applies to the direct children.
func (s *Server) streamChildren(c *gin.Context, lv *libraryView, parent catalog.Ref, q childrenQuery) {
	out := s.newFolderStream(c)
	memo := accessMemo{viewer: &lv.viewer}
	var v catalog.View
	lv.lib.Walk(parent, func(r catalog.Ref, depth int) bool {
		if out.failed() {
			return false
		}
		a := memo.of(r)
		if !a.listable {
			return false
		}
		lv.lib.Load(r, &v)
		if depth == 0 && q.nameFilter != "" && !strings.Contains(strings.ToLower(v.Name), q.nameFilter) {
			return false
		}
		out.open(lv, &v, a.role, depth)
		if q.onlyDirect {
			out.close()
			return false
		}
		return true
	}, func(catalog.Ref, int) { out.close() })
	s.finish(c, out)
}

// listLibraryFolders is operation 3: every folder of the library the caller
// may list, flat, parents before children.
func (s *Server) listLibraryFolders(c *gin.Context) {
	lv, ok := s.libraryParam(c)
	if !ok {
		return
	}
	setDeprecated(c)
	if s.validate(c, lv) {
		return
	}
	out := s.newFolderStream(c)
	memo := accessMemo{viewer: &lv.viewer}
	var v catalog.View
	lv.lib.All(func(r catalog.Ref) bool {
		if a := memo.of(r); a.listable {
			lv.lib.Load(r, &v)
			out.open(lv, &v, a.role, 0)
			out.close()
		}
		return !out.failed()
	})
	s.finish(c, out)
}

// finish ends a folder list; one that cannot be finished cuts the
// connection, so that the client sees an incomplete body rather than a
// short one.
func (s *Server) finish(c *gin.Context, out *folderStream) {
	if err := out.finish(); err != nil {
		if c.Request.Context().Err() == nil {
			s.logger.Error("response cut short", "path", c.Request.URL.Path, "err", err)
		}
		panic(http.ErrAbortHandler)
	}
}

// getFolder is operation 5.
func (s *Server) getFolder(c *gin.Context) {
	if lv, r, role, ok := s.folderParam(c, false); ok {
		v := lv.lib.View(r)
		c.Data(http.StatusOK, "application/json; charset=utf-8", folderBody(lv, &v, role))
	}
}
