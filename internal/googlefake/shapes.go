package googlefake

import (
	"cmp"
	"maps"
	"slices"
	"strings"
)

// RequestShape is the shape of requests the fake received on the Drive or
// Directory API: the method, the names of the query parameters and the
// fields selection; and, for a request the discovery check refused, why.
type RequestShape struct {
	// Method is the discovery document's ID of the method
	// ("drive.files.list"), "" when no method answers the request.
	Method string
	// HTTPMethod and Path are the method's, Path its path template under
	// the API's root ("drive/v3/files/{fileId}/permissions"); a request
	// no method answers has its own (its path whole).
	HTTPMethod, Path string
	// Params are the names of the query parameters, sorted, each once.
	Params []string
	// Fields is the fields parameter, "" when there is none.
	Fields string
	// Refused is the message of the 400 the check answered, "" when the
	// request is valid.
	Refused string
	// Count is how many requests had this shape.
	Count int
}

// String writes the shape on a line: "GET drive/v3/files
// (drive.files.list) ?alt&fields&pageSize fields=files(id)", the reason
// of a refusal after it.
func (r RequestShape) String() string {
	var b strings.Builder
	b.WriteString(r.HTTPMethod + " " + r.Path)
	if r.Method != "" {
		b.WriteString(" (" + r.Method + ")")
	}
	if len(r.Params) > 0 {
		b.WriteString(" ?" + strings.Join(r.Params, "&"))
	}
	if r.Fields != "" {
		b.WriteString(" fields=" + r.Fields)
	}
	if r.Refused != "" {
		b.WriteString(" REFUSED: " + r.Refused)
	}
	return b.String()
}

// RequestShapes returns the distinct shapes of the Drive and Directory
// requests received since New or ResetCalls, refused ones included,
// sorted by method, path, parameters and fields.
func (s *Server) RequestShapes() []RequestShape {
	l := &s.checks
	l.mu.Lock()
	out := make([]RequestShape, 0, len(l.shapes))
	for _, sh := range l.shapes {
		c := *sh
		c.Params = slices.Clone(sh.Params)
		out = append(out, c)
	}
	l.mu.Unlock()
	slices.SortFunc(out, func(a, b RequestShape) int {
		return cmp.Or(cmp.Compare(a.Method, b.Method), cmp.Compare(a.Path, b.Path), cmp.Compare(a.HTTPMethod, b.HTTPMethod),
			slices.Compare(a.Params, b.Params), cmp.Compare(a.Fields, b.Fields), cmp.Compare(a.Refused, b.Refused))
	})
	return out
}

// DeprecatedUses counts, since New or ResetCalls, the uses of what the
// discovery documents mark deprecated in the requests the check accepted
// (it accepts them, as Google does): a parameter, keyed by method ID and
// name ("drive.files.list?corpus"); a field of a fields selection, by
// method ID and path ("drive.files.list?fields=files/teamDriveId"); a
// method, by its ID.
func (s *Server) DeprecatedUses() map[string]int {
	s.checks.mu.Lock()
	defer s.checks.mu.Unlock()
	return maps.Clone(s.checks.deprecated)
}
