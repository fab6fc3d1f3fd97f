package googlefake

import (
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/api/drive/v3"
)

// endpoint is one Drive or Directory API method.
type endpoint struct {
	name string
	run  func(s *Server, c *call) (any, *apiError)
	// result is the type of the response, against which fields are checked.
	result reflect.Type
	// defaults is the field selection when the request has no fields
	// parameter: Google's default set for the method ("" for everything).
	defaults string
	// scopeOK reports whether an OAuth scope grants the method.
	scopeOK func(scope string) bool
}

// call is one API request being answered, with s.mu held.
type call struct {
	q      url.Values
	id     string // the path parameter (file, drive or group ID)
	v      *viewer
	fields mask
}

var (
	filesListEndpoint = &endpoint{callFilesList, (*Server).filesList, reflect.TypeFor[drive.FileList](),
		"kind,nextPageToken,incompleteSearch,files(kind,id,name,mimeType)", isDriveScope}
	filesGetEndpoint = &endpoint{callFilesGet, (*Server).filesGet, reflect.TypeFor[drive.File](),
		"kind,id,name,mimeType", isDriveScope}
	permissionsListEndpoint = &endpoint{callPermissionList, (*Server).permissionsList, reflect.TypeFor[drive.PermissionList](), "", isDriveScope}
	drivesGetEndpoint       = &endpoint{callDrivesGet, (*Server).drivesGet, reflect.TypeFor[drive.Drive](), "", isDrivesScope}
	drivesListEndpoint      = &endpoint{callDrivesList, (*Server).drivesList, reflect.TypeFor[drive.DriveList](),
		"kind,nextPageToken,drives(kind,id,name)", isDrivesScope}
	startPageTokenEndpoint = &endpoint{callStartPageToken, (*Server).startPageToken, reflect.TypeFor[drive.StartPageToken](), "", isDriveScope}
	changesListEndpoint    = &endpoint{callChangesList, (*Server).changesList, reflect.TypeFor[drive.ChangeList](),
		"kind,nextPageToken,newStartPageToken,changes(kind,changeType,time,removed,fileId,driveId,drive(kind,id,name),file(kind,id,name,mimeType))",
		isDriveScope}
)

// isDriveScope reports whether a scope is one of Drive's.
func isDriveScope(scope string) bool { return strings.HasPrefix(scope, driveScopePrefix) }

// isDrivesScope reports whether a scope grants drives.get and drives.list:
// Drive's discovery document names drive and drive.readonly alone (not
// the metadata scopes).
func isDrivesScope(scope string) bool {
	return scope == drive.DriveScope || scope == drive.DriveReadonlyScope
}

// route maps a request path to its Drive method and path parameter.
func route(path string) (*endpoint, string) {
	rest, ok := strings.CutPrefix(path, "/drive/v3/")
	if !ok {
		return nil, ""
	}
	seg := strings.Split(rest, "/")
	switch {
	case rest == "files":
		return filesListEndpoint, ""
	case rest == "drives":
		return drivesListEndpoint, ""
	case rest == "changes":
		return changesListEndpoint, ""
	case rest == "changes/startPageToken":
		return startPageTokenEndpoint, ""
	case len(seg) == 2 && seg[0] == "files" && seg[1] != "":
		return filesGetEndpoint, seg[1]
	case len(seg) == 3 && seg[0] == "files" && seg[1] != "" && seg[2] == "permissions":
		return permissionsListEndpoint, seg[1]
	case len(seg) == 2 && seg[0] == "drives" && seg[1] != "":
		return drivesGetEndpoint, seg[1]
	}
	return nil, ""
}

// serveAPI answers a Drive or Directory API request, routed by router.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request, router func(string) (*endpoint, string)) {
	ep, id := router(r.URL.Path)
	switch {
	case ep == nil && strings.HasPrefix(r.URL.Path, directoryPrefix):
		writeAPIError(w, errDirectoryUnimplemented)
		return
	case ep == nil:
		writeAPIError(w, newAPIError(http.StatusNotFound, "notFound", "Not Found", ""))
		return
	}
	s.count(ep.name)
	beforeWriting := s.pace(r.Context())
	if f, ok := s.faults.draw(); ok {
		beforeWriting()
		inject(w, r, f, func() []byte {
			body, err := s.answer(nil, ep, r, id)
			if err != nil {
				return []byte(`{"error":{}}`)
			}
			return body
		})
		return
	}
	if r.Method != http.MethodGet {
		beforeWriting()
		writeAPIError(w, newAPIError(http.StatusNotImplemented, "notImplemented",
			"googlefake implements only GET for "+ep.name, ""))
		return
	}
	buf := bodies.Get().(*[]byte)
	defer bodies.Put(buf)
	body, err := s.answer((*buf)[:0], ep, r, id)
	beforeWriting()
	if err != nil {
		writeAPIError(w, err)
		return
	}
	*buf = body
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	_, _ = w.Write(body)
}

// bodies recycles the buffers answers are encoded in: a page of 1,000 files
// is over half a megabyte.
var bodies = sync.Pool{New: func() any { return new([]byte) }}

// answer authenticates the request, parses its field selection, runs the
// method and appends the selected fields of its response, encoded, to buf,
// all under the lock (responses may share records with the store).
func (s *Server) answer(buf []byte, ep *endpoint, r *http.Request, id string) ([]byte, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.arena.reset()
	tok, aerr := s.authenticate(r, ep.scopeOK)
	if aerr != nil {
		return nil, aerr
	}
	q := r.URL.Query()
	m, aerr := fieldsParam(q.Get("fields"), ep)
	if aerr != nil {
		return nil, aerr
	}
	res, aerr := ep.run(s, &call{q: q, id: id, v: s.viewer(tok.user), fields: m})
	if aerr != nil {
		return nil, aerr
	}
	return appendJSON(buf, reflect.ValueOf(res), m), nil
}

// fieldsParam parses and checks a fields parameter; "" means the method's
// default selection. Each selection is parsed once per method: the encoder
// keeps what it works out of a selection by its identity.
func fieldsParam(sel string, ep *endpoint) (mask, *apiError) {
	if sel == "" {
		sel = ep.defaults
	}
	if sel == "" {
		return nil, nil
	}
	key := parsedKey{ep, sel}
	if m, ok := parsed.Load(key); ok {
		return m.(mask), nil
	}
	m, err := parseFields(sel)
	if err == nil {
		err = m.validate(ep.result)
	}
	if err != nil {
		return nil, newAPIError(http.StatusBadRequest, "invalidParameter", err.Error(), "fields")
	}
	parsed.Store(key, m)
	return m, nil
}

// parsed holds the valid selections by method and fields parameter.
var parsed sync.Map // parsedKey → mask

type parsedKey struct {
	ep  *endpoint
	sel string
}

// lookup finds the file a files.get or permissions.list request names, as
// the viewer may see it: "root" is the viewer's My Drive root, and shared
// drive items need supportsAllDrives=true. Anything else is "not found".
func (s *Server) lookup(c *call) (*File, *computed, *apiError) {
	allDrives, aerr := boolParam(c.q, "supportsAllDrives")
	if aerr != nil {
		return nil, nil, aerr
	}
	id := c.id
	if id == "root" {
		id = c.v.root
	}
	f := s.files[id]
	if f == nil || f.DriveID != "" && !allDrives {
		return nil, nil, fileNotFound(c.id)
	}
	st := s.state(f)
	if !c.v.canAccess(st) {
		return nil, nil, fileNotFound(c.id)
	}
	return f, st, nil
}

// filesGet is files.get. A shared drive ID returns the drive's root folder.
func (s *Server) filesGet(c *call) (any, *apiError) {
	f, st, aerr := s.lookup(c)
	if aerr != nil {
		return nil, aerr
	}
	return s.fileJSON(c.v, f, st, c.fields), nil
}

// permissionsList is permissions.list: the effective permissions of a file
// (for a shared drive ID, its members) in Drive's order (see merger).
// Without pageSize, shared drive items get pages of 100, My Drive items all
// at once; pageSize is capped at 100. A page token is the place of the
// page's first permission in the list.
func (s *Server) permissionsList(c *call) (any, *apiError) {
	f, st, aerr := s.lookup(c)
	if aerr != nil {
		return nil, aerr
	}
	grants := s.listed(st.grants)
	def := len(grants)
	if f.DriveID != "" {
		def = maxInlinePermissions
	}
	size, aerr := intParam(c.q, "pageSize", max(def, 1))
	if aerr != nil {
		return nil, aerr
	}
	start := 0
	if tok := c.q.Get("pageToken"); tok != "" {
		at, ok := decodePageToken("permissions", tok)
		n, err := strconv.Atoi(at)
		if !ok || err != nil || n < 0 {
			return nil, invalidParam("pageToken")
		}
		start = min(n, len(grants))
	}
	end := min(start+size, len(grants))
	out := &drive.PermissionList{Kind: "drive#permissionList", Permissions: s.permissionsJSON(f, grants[start:end])}
	if end < len(grants) {
		out.NextPageToken = encodePageToken("permissions", strconv.Itoa(end))
	}
	return out, nil
}
