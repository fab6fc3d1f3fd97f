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
	"github.com/foldermirror/foldermirror/config"
	"github.com/gin-gonic/gin"
)

// deprecatedSince is when operations 2, 3 and 4 were deprecated, as their
// Deprecation header (RFC 9745) says.
var deprecatedSince = time.Date(2025, time.January, 1, 0, 0, 0, 0, time.UTC)

func setDeprecated(c *gin.Context) {
	c.Header("Deprecation", "@"+strconv.FormatInt(deprecatedSince.Unix(), 10))
}

// synced returns a library's state and catalog, seen by cl (nil: nobody);
// ENOTFOUND if never synced.
func (s *Server) synced(ctx context.Context, lib *config.Library, cl *caller) (libraryView, error) {
	state, err := s.index.Library(ctx, lib.ID)
	if err != nil {
		return libraryView{}, err
	}
	cat, err := s.catalogs.get(ctx, lib, state)
	if err != nil {
		return libraryView{}, err
	}
	lv := libraryView{cfg: lib, state: state, cat: cat}
	if cl != nil {
		lv.viewer = cat.viewerOf(cl)
	}
	return lv, nil
}

// Warm builds the catalog of a library's current revision, so that the next
// request finds it ready.
func (s *Server) Warm(ctx context.Context, libraryID string) error {
	lib := s.cfg.Library(libraryID)
	if lib == nil {
		return fm.Errorf(fm.ENOTFOUND, "Library %s is not configured.", libraryID)
	}
	_, err := s.synced(ctx, lib, nil)
	return err
}

// Warmed tells whether a catalog of a library was built: requests find it
// (a sync since then makes the next request wait for a new one only if the
// rebuild that follows each sync has not finished yet).
func (s *Server) Warmed(_ context.Context, libraryID string) bool {
	return s.catalogs.built(libraryID)
}

// visibleLibrary returns a configured, synced library the caller may see.
func (s *Server) visibleLibrary(ctx context.Context, cl *caller, libraryID string) (libraryView, error) {
	notFound := fm.Errorf(fm.ENOTFOUND, "Library %s not found.", libraryID)
	lib := s.cfg.Library(libraryID)
	if lib == nil {
		return libraryView{}, notFound
	}
	inDomain := cl.Domain == lib.Domain
	lv, err := s.synced(ctx, lib, cl)
	switch {
	case fm.ErrorCode(err) == fm.ENOTFOUND && inDomain:
		return libraryView{}, unavailable("Library %s has not been synced yet.", libraryID)
	case fm.ErrorCode(err) == fm.ENOTFOUND:
		return libraryView{}, notFound
	case err != nil:
		return libraryView{}, err
	}
	if !inDomain && !lv.viewer.sharedWith() {
		return libraryView{}, notFound
	}
	return lv, nil
}

// locateFolder finds a folder by ID in the synced libraries, among those the
// caller has a role on (link grants included).
func (s *Server) locateFolder(ctx context.Context, cl *caller, folderID string) (libraryView, *entry, access, error) {
	for i := range s.cfg.Libraries {
		lv, err := s.synced(ctx, &s.cfg.Libraries[i], nil)
		if fm.ErrorCode(err) == fm.ENOTFOUND {
			continue
		} else if err != nil {
			return libraryView{}, nil, access{}, err
		}
		e := lv.cat.byID[folderID]
		if e == nil {
			continue
		}
		lv.viewer = lv.cat.viewerOf(cl) // only for the library that holds the folder
		if a := lv.viewer.access(e); a.role != fm.RoleNone {
			return lv, e, a, nil
		}
	}
	return libraryView{}, nil, access{}, fm.Errorf(fm.ENOTFOUND, "Folder %s not found.", folderID)
}

// folderParam finds the folder the path's folderId names, among those the
// caller may see; marks the answer deprecated if it is; and sets the
// freshness headers. False: it answered the request itself (an error, or
// 304 Not Modified).
func (s *Server) folderParam(c *gin.Context, deprecated bool) (libraryView, *entry, fm.Role, bool) {
	lv, e, a, err := s.locateFolder(c.Request.Context(), callerOf(c), c.Param("folderId"))
	if err != nil {
		s.writeError(c, err)
		return libraryView{}, nil, fm.RoleNone, false
	}
	if deprecated {
		setDeprecated(c)
	}
	return lv, e, a.role, !s.validate(c, lv)
}

// libraryParam returns the library the path's libraryId names, if the
// caller may see it. False: it answered the request with an error.
func (s *Server) libraryParam(c *gin.Context) (libraryView, bool) {
	lv, err := s.visibleLibrary(c.Request.Context(), callerOf(c), c.Param("libraryId"))
	if err != nil {
		s.writeError(c, err)
		return libraryView{}, false
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
	parent := lv.cat.root
	if id := c.Query("folderServiceId"); id != "" {
		parent = lv.cat.byID[id]
		if parent == nil || lv.viewer.access(parent).role == fm.RoleNone {
			s.writeError(c, fm.Errorf(fm.ENOTFOUND, "Folder %s not found.", id))
			return
		}
	}
	setDeprecated(c)
	c.Header("Link", fmt.Sprintf(`</folder/v1/files/%s/children>; rel="successor-version"`, url.PathEscape(parent.ID)))
	if !s.validate(c, lv) {
		s.streamChildren(c, lv, parent, q)
	}
}

// listChildren is operation 6.
func (s *Server) listChildren(c *gin.Context) {
	q, err := parseChildrenQuery(c)
	if err != nil {
		s.writeError(c, err)
		return
	}
	if lv, e, _, ok := s.folderParam(c, false); ok {
		s.streamChildren(c, lv, e, q)
	}
}

// streamChildren writes the children of parent the caller may list, sorted,
// each with its listable descendants nested unless only direct children are
// asked for. nameFilter applies to the direct children.
func (s *Server) streamChildren(c *gin.Context, lv libraryView, parent *entry, q childrenQuery) {
	out := newFolderStream(c.Writer)
	var write func(e *entry, depth int)
	write = func(e *entry, depth int) {
		for _, child := range e.children {
			if out.failed() {
				return
			}
			a := lv.viewer.access(child)
			if !a.listable || (depth == 0 && q.nameFilter != "" && !strings.Contains(strings.ToLower(child.Name), q.nameFilter)) {
				continue
			}
			out.open(&lv.cat.ops, child, a.role, depth)
			if !q.onlyDirect {
				write(child, depth+1)
			}
			out.close()
		}
	}
	write(parent, 0)
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
	out := newFolderStream(c.Writer)
	var write func(e *entry)
	write = func(e *entry) {
		if out.failed() {
			return
		}
		if a := lv.viewer.access(e); a.listable {
			out.open(&lv.cat.ops, e, a.role, 0)
			out.close()
		}
		for _, child := range e.children {
			write(child)
		}
	}
	write(lv.cat.root)
	s.finish(c, out)
}

// finish ends a stream; one that cannot be finished cuts the connection, so
// that the client sees an incomplete body rather than a short one.
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
	if lv, e, role, ok := s.folderParam(c, false); ok {
		c.Data(http.StatusOK, "application/json; charset=utf-8", folderBody(&lv.cat.ops, e, role))
	}
}
