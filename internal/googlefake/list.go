package googlefake

import (
	"iter"
	"net/http"
	"slices"

	"google.golang.org/api/drive/v3"
)

// filesList is files.list: the files the viewer can list in the corpora,
// matching q, in the order orderBy asks (see listOrder; createdTime without
// it). Page tokens hold the order and the position of the last file
// returned, so they stay valid while the tree changes.
func (s *Server) filesList(c *call) (any, *apiError) {
	inScope, aerr := s.listScope(c)
	if aerr != nil {
		return nil, aerr
	}
	size, aerr := intParam(c.q, "pageSize", 100)
	if aerr != nil {
		return nil, aerr
	}
	inDrive, aerr := driveSpace(c.q)
	if aerr != nil {
		return nil, aerr
	}
	match, err := compileQuery(c.q.Get("q"), c.v.root, s.ignoreBounds)
	if err != nil {
		return nil, invalidParam("q")
	}
	order, aerr := orderParam(c.q.Get("orderBy"))
	if aerr != nil {
		return nil, aerr
	}
	from, aerr := order.cursorParam(c.q.Get("pageToken"))
	if aerr != nil {
		return nil, aerr
	}
	from.inclusive = s.repeatItems
	out := &drive.FileList{Kind: "drive#fileList", Files: []*drive.File{},
		ForceSendFields: []string{"Files", "IncompleteSearch"}}
	if !inDrive {
		return out, nil
	}
	fileMask, _ := c.fields.child("files")
	var last position
	var driveID string // a listing of one shared drive reads its files alone
	if c.q.Get("corpora") == "drive" {
		driveID = c.q.Get("driveId")
	}
	for f := range s.candidates(match, order, from, driveID) {
		if f.root || !inScope(f) {
			continue
		}
		st := s.state(f)
		if !c.v.canList(st) || !match.match(f, st) {
			continue
		}
		if len(out.Files) == size {
			out.NextPageToken = order.token(last)
			break
		}
		out.Files = append(out.Files, s.fileJSON(c.v, f, st, fileMask))
		last = positionOf(f)
	}
	return out, nil
}

// candidates yields, in order from a cursor, the files a listing may
// return: the children of the query's parents when it names some, else
// the files of the index of the order's first key, within the range of
// that time the query allows (of the files of the shared drive driveID
// alone, when it is set). A listing reads no file of the index before its
// cursor or outside that range.
func (s *Server) candidates(q query, o listOrder, from cursor, driveID string) iter.Seq[*File] {
	if q.narrow {
		return s.childrenFrom(q.parents, o, from)
	}
	first := o.keys[0]
	x, sp := s.built(first.field).of(driveID), q.spans[first.field]
	switch {
	case len(o.keys) > 1:
		return x.grouped(sp, o, from)
	case first.desc:
		return x.descending(sp, from)
	}
	return x.ascending(sp, from)
}

// childrenFrom returns the children of parents from a cursor, in order.
func (s *Server) childrenFrom(parents []string, o listOrder, from cursor) iter.Seq[*File] {
	var out []*File
	seen := map[string]bool{}
	for _, p := range parents {
		for id := range s.children[p] {
			if f := s.files[id]; f != nil && !seen[id] && from.admits(o, positionOf(f)) {
				seen[id] = true
				out = append(out, f)
			}
		}
	}
	slices.SortFunc(out, func(a, b *File) int { return o.compare(positionOf(a), positionOf(b)) })
	return slices.Values(out)
}

// listScope reads corpora and driveId and returns which files the request
// covers: corpora user (the default; "domain" is treated alike) covers My
// Drive items, drive one shared drive (the viewer must be a member), and
// allDrives everything.
func (s *Server) listScope(c *call) (func(*File) bool, *apiError) {
	corpora, driveID := c.q.Get("corpora"), c.q.Get("driveId")
	if corpora == "" {
		corpora = "user"
	}
	switch corpora {
	case "user", "domain", "drive", "allDrives":
	default:
		return nil, invalidParam("corpora")
	}
	if (corpora == "drive") != (driveID != "") {
		return nil, newAPIError(http.StatusBadRequest, "teamDriveIdRequiresTeamDriveCorpora",
			"The driveId parameter must be specified if and only if corpora is set to drive.", "driveId")
	}
	if _, aerr := allDrivesParam(c.q, corpora == "drive" || corpora == "allDrives"); aerr != nil {
		return nil, aerr
	}
	switch corpora {
	case "allDrives":
		return func(*File) bool { return true }, nil
	case "drive":
		if _, aerr := s.memberDrive(c.v, driveID); aerr != nil {
			return nil, aerr
		}
		return func(f *File) bool { return f.DriveID == driveID }, nil
	}
	return func(f *File) bool { return f.DriveID == "" }, nil
}
