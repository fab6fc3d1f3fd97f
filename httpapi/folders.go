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
	"github.com/gin-gonic/gin"
)

// deprecatedSince is when operations 2, 3 and 4 were deprecated, as their
// Deprecation header (RFC 9745) says.
var deprecatedSince = time.Date(2025, time.January, 1, 0, 0, 0, 0, time.UTC)

func setDeprecated(c *gin.Context) {
	c.Header("Deprecation", "@"+strconv.FormatInt(deprecatedSince.Unix(), 10))
}

// visibleLibrary returns a configured, synced library the caller may see.
func (s *Server) visibleLibrary(ctx context.Context, cl *caller, libraryID string) (libraryView, error) {
	notFound := fm.Errorf(fm.ENOTFOUND, "Library %s not found.", libraryID)
	lib := s.cfg.Library(libraryID)
	if lib == nil {
		return libraryView{}, notFound
	}
	inDomain := cl.Domain == lib.Domain
	state, err := s.index.Library(ctx, lib.ID)
	switch {
	case fm.ErrorCode(err) == fm.ENOTFOUND && inDomain:
		return libraryView{}, unavailable("Library %s has not been synced yet.", libraryID)
	case fm.ErrorCode(err) == fm.ENOTFOUND:
		return libraryView{}, notFound
	case err != nil:
		return libraryView{}, err
	}
	if !inDomain {
		shared, err := s.index.HasAnyPrincipal(ctx, lib.ID, cl.principals)
		if err != nil {
			return libraryView{}, err
		}
		if !shared {
			return libraryView{}, notFound
		}
	}
	return libraryView{cfg: lib, state: state}, nil
}

// locateFolder finds a folder by ID in the synced libraries, among those the
// caller has a role on (link grants included).
func (s *Server) locateFolder(ctx context.Context, cl *caller, folderID string) (libraryView, *fm.Folder, access, error) {
	for i := range s.cfg.Libraries {
		lib := &s.cfg.Libraries[i]
		state, err := s.index.Library(ctx, lib.ID)
		if fm.ErrorCode(err) == fm.ENOTFOUND {
			continue
		} else if err != nil {
			return libraryView{}, nil, access{}, err
		}
		f, err := s.index.Folder(ctx, lib.ID, folderID)
		if fm.ErrorCode(err) == fm.ENOTFOUND {
			continue
		} else if err != nil {
			return libraryView{}, nil, access{}, err
		}
		if a := cl.access(lib, f); a.role != fm.RoleNone {
			return libraryView{cfg: lib, state: state}, f, a, nil
		}
	}
	return libraryView{}, nil, access{}, fm.Errorf(fm.ENOTFOUND, "Folder %s not found.", folderID)
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
	ctx, cl := c.Request.Context(), callerOf(c)
	q, err := parseChildrenQuery(c)
	if err != nil {
		s.writeError(c, err)
		return
	}
	lv, err := s.visibleLibrary(ctx, cl, c.Param("libraryId"))
	if err != nil {
		s.writeError(c, err)
		return
	}
	parent := lv.state.RootID
	if id := c.Query("folderServiceId"); id != "" {
		f, err := s.index.Folder(ctx, lv.cfg.ID, id)
		if err == nil && cl.access(lv.cfg, f).role == fm.RoleNone {
			err = fm.Errorf(fm.ENOTFOUND, "Folder %s not found.", id)
		}
		if err != nil {
			s.writeError(c, err)
			return
		}
		parent = f.ID
	}
	setDeprecated(c)
	c.Header("Link", fmt.Sprintf(`</folder/v1/files/%s/children>; rel="successor-version"`, url.PathEscape(parent)))
	if !s.validate(c, lv, cl) {
		s.streamChildren(c, lv, cl, parent, q)
	}
}

// listChildren is operation 6.
func (s *Server) listChildren(c *gin.Context) {
	ctx, cl := c.Request.Context(), callerOf(c)
	q, err := parseChildrenQuery(c)
	if err != nil {
		s.writeError(c, err)
		return
	}
	lv, f, _, err := s.locateFolder(ctx, cl, c.Param("folderId"))
	if err != nil {
		s.writeError(c, err)
		return
	}
	if !s.validate(c, lv, cl) {
		s.streamChildren(c, lv, cl, f.ID, q)
	}
}

// streamChildren writes the children of parent the caller may list, sorted,
// each with its listable descendants nested unless only direct children are
// asked for. nameFilter applies to the direct children.
func (s *Server) streamChildren(c *gin.Context, lv libraryView, cl *caller, parent string, q childrenQuery) {
	pick := func(f *fm.Folder, depth int) (bool, bool) {
		if !cl.access(lv.cfg, f).listable {
			return false, false
		}
		if depth == 0 && q.nameFilter != "" && !strings.Contains(strings.ToLower(f.Name), q.nameFilter) {
			return false, false
		}
		return true, !q.onlyDirect
	}
	s.stream(c, lv, cl, parent, nil, pick, func(depth int) int { return depth })
}

// listLibraryFolders is operation 3: every folder of the library the caller
// may list, flat, parents before children.
func (s *Server) listLibraryFolders(c *gin.Context) {
	ctx, cl := c.Request.Context(), callerOf(c)
	lv, err := s.visibleLibrary(ctx, cl, c.Param("libraryId"))
	if err != nil {
		s.writeError(c, err)
		return
	}
	root, err := s.index.Folder(ctx, lv.cfg.ID, lv.state.RootID)
	if err != nil {
		s.writeError(c, err)
		return
	}
	if !cl.access(lv.cfg, root).listable {
		root = nil
	}
	pick := func(f *fm.Folder, _ int) (bool, bool) { return cl.access(lv.cfg, f).listable, true }
	setDeprecated(c)
	if s.validate(c, lv, cl) {
		return
	}
	s.stream(c, lv, cl, lv.state.RootID, root, pick, func(int) int { return 0 })
}

// stream writes a folder list: first (if any), then the walk of parent's
// descendants, each at the nesting level that level gives for its depth.
func (s *Server) stream(c *gin.Context, lv libraryView, cl *caller, parent string, first *fm.Folder, pick fm.PickFunc, level func(depth int) int) {
	out := newFolderStream(c.Writer)
	if first != nil {
		if err := out.add(lv.folderJSON(first, cl.access(lv.cfg, first).role), 0); err != nil {
			s.abort(c, err)
		}
	}
	err := s.index.Walk(c.Request.Context(), lv.cfg.ID, parent, pick, func(f *fm.Folder, depth int) error {
		return out.add(lv.folderJSON(f, cl.access(lv.cfg, f).role), level(depth))
	})
	if err == nil {
		err = out.finish()
	}
	if err != nil {
		s.abort(c, err)
	}
}

// abort ends a response that has started and cannot be finished: the
// connection is cut so that the client sees an incomplete body.
func (s *Server) abort(c *gin.Context, err error) {
	if c.Request.Context().Err() == nil {
		s.logger.Error("response cut short", "path", c.Request.URL.Path, "err", err)
	}
	panic(http.ErrAbortHandler)
}

// folderWithSubfolders is operation 5's answer: one folder, no subfolders.
type folderWithSubfolders struct {
	folderJSON
	Subfolders []folderJSON `json:"subfolders"`
}

// getFolder is operation 5.
func (s *Server) getFolder(c *gin.Context) {
	ctx, cl := c.Request.Context(), callerOf(c)
	lv, f, a, err := s.locateFolder(ctx, cl, c.Param("folderId"))
	if err != nil {
		s.writeError(c, err)
		return
	}
	if s.validate(c, lv, cl) {
		return
	}
	c.JSON(http.StatusOK, folderWithSubfolders{folderJSON: lv.folderJSON(f, a.role), Subfolders: []folderJSON{}})
}
