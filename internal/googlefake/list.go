package googlefake

import (
	"cmp"
	"net/http"
	"slices"
	"sort"
	"strconv"

	"google.golang.org/api/drive/v3"
)

// filesList is files.list: the files the viewer can list in the corpora,
// matching q, in creation order. Page tokens hold the position of the last
// file returned, so they stay valid while the tree changes.
func (s *Server) filesList(c *call) (any, *apiError) {
	inScope, aerr := s.listScope(c)
	if aerr != nil {
		return nil, aerr
	}
	size, aerr := pageSizeParam(c.q, 100, 1000)
	if aerr != nil {
		return nil, aerr
	}
	inDrive, aerr := driveSpace(c.q)
	if aerr != nil {
		return nil, aerr
	}
	match, err := compileQuery(c.q.Get("q"), c.v.root)
	if err != nil {
		return nil, invalidParam("q")
	}
	start, aerr := s.listStart(c.q.Get("pageToken"))
	if aerr != nil {
		return nil, aerr
	}
	out := &drive.FileList{Kind: "drive#fileList", Files: []*drive.File{},
		ForceSendFields: []string{"Files", "IncompleteSearch"}}
	if !inDrive {
		return out, nil
	}
	fileMask, _ := c.fields.child("files")
	candidates := s.order[start:]
	if match.narrow {
		candidates = s.childrenFrom(match.parents, candidates)
	}
	var last int64
	for _, f := range candidates {
		if f.root || !inScope(f) {
			continue
		}
		st := s.state(f)
		if !c.v.canList(st) || !match.match(f, st) {
			continue
		}
		if len(out.Files) == size {
			out.NextPageToken = encodePageToken("files", strconv.FormatInt(last, 10))
			break
		}
		out.Files = append(out.Files, s.fileJSON(c.v, f, st, fileMask))
		last = f.seq
	}
	return out, nil
}

// childrenFrom returns the children of parents that are in rest (a tail
// of s.order), in its order.
func (s *Server) childrenFrom(parents []string, rest []*File) []*File {
	if len(rest) == 0 {
		return nil
	}
	var out []*File
	seen := map[string]bool{}
	for _, p := range parents {
		for id := range s.children[p] {
			if f := s.files[id]; f != nil && f.seq >= rest[0].seq && !seen[id] {
				seen[id] = true
				out = append(out, f)
			}
		}
	}
	slices.SortFunc(out, func(a, b *File) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

// listStart returns the index in s.order a files.list page starts at.
func (s *Server) listStart(token string) (int, *apiError) {
	if token == "" {
		return 0, nil
	}
	pos, ok := decodePageToken("files", token)
	if !ok {
		return 0, invalidParam("pageToken")
	}
	after, err := strconv.ParseInt(pos, 10, 64)
	if err != nil || after < 0 {
		return 0, invalidParam("pageToken")
	}
	start := sort.Search(len(s.order), func(i int) bool { return s.order[i].seq > after })
	if s.repeatItems && start > 0 {
		start-- // the previous page's last item again
	}
	return start, nil
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
