package googlefake

import (
	"cmp"
	"embed"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// discoveryModuleVersion is the version of google.golang.org/api whose
// discovery documents discovery/ holds (see discovery/README.md).
const discoveryModuleVersion = "v0.310.0"

// discoveryFiles are Google's discovery documents of Drive v3 and the Admin
// SDK Directory API, as google.golang.org/api ships them.
//
//go:embed discovery/drive-api.json discovery/admin-api.json
var discoveryFiles embed.FS

// checkedAPIs are the APIs the fake checks requests of, each read from its
// discovery document on its first request (a process that never calls the
// Directory does not read its document).
var checkedAPIs = []checkedAPI{
	lazyAPI("discovery/drive-api.json", "/drive/v3/"),
	lazyAPI("discovery/admin-api.json", "/admin/"),
}

// checkedAPI is an API whose requests' paths begin with prefix.
type checkedAPI struct {
	prefix string
	load   func() *api
}

func lazyAPI(file, prefix string) checkedAPI {
	return checkedAPI{prefix, sync.OnceValue(func() *api { return loadAPI(file, prefix) })}
}

// apiOf returns the checked API whose requests' paths begin as path does,
// nil if none does (the token, tokeninfo and key endpoints).
func apiOf(path string) *api {
	for _, c := range checkedAPIs {
		if strings.HasPrefix(path, c.prefix) {
			return c.load()
		}
	}
	return nil
}

// discoveryDoc is the part of a discovery document the check reads.
type discoveryDoc struct {
	ID          string                        `json:"id"`
	ServicePath string                        `json:"servicePath"`
	Parameters  map[string]*discoveryParam    `json:"parameters"`
	Resources   map[string]*discoveryResource `json:"resources"`
	Schemas     map[string]*schema            `json:"schemas"`
}

type discoveryResource struct {
	Methods   map[string]*discoveryMethod   `json:"methods"`
	Resources map[string]*discoveryResource `json:"resources"`
}

type discoveryMethod struct {
	ID         string                     `json:"id"`
	HTTPMethod string                     `json:"httpMethod"`
	Path       string                     `json:"path"`
	FlatPath   string                     `json:"flatPath"`
	Deprecated bool                       `json:"deprecated"`
	Parameters map[string]*discoveryParam `json:"parameters"`
	Request    *schema                    `json:"request"`
	Response   *schema                    `json:"response"`
}

type discoveryParam struct {
	Type        string   `json:"type"`
	Format      string   `json:"format"`
	Location    string   `json:"location"`
	Minimum     string   `json:"minimum"`
	Maximum     string   `json:"maximum"`
	Description string   `json:"description"`
	Enum        []string `json:"enum"`
	Required    bool     `json:"required"`
	Deprecated  bool     `json:"deprecated"`
	Repeated    bool     `json:"repeated"`
}

// schema is a JSON schema of a discovery document: a named one, a
// property, an array's items or a map's values.
type schema struct {
	Ref                  string             `json:"$ref"`
	Type                 string             `json:"type"`
	Deprecated           bool               `json:"deprecated"`
	Properties           map[string]*schema `json:"properties"`
	Items                *schema            `json:"items"`
	AdditionalProperties *schema            `json:"additionalProperties"`
	// named is the schema Ref names, linked once the document is read.
	named *schema
}

// anySchema stands for a free-form value: any field below it exists.
var anySchema = &schema{Type: "any"}

// resolved returns the schema s stands for: the one its $ref names.
func (s *schema) resolved() *schema {
	for s.named != nil {
		s = s.named
	}
	return s
}

// field returns the schema of a field of the values s describes, through
// arrays' items, and whether they have it: a property, any key of a map
// (additionalProperties), or anything below a free-form value.
func (s *schema) field(name string) (*schema, bool) {
	s = s.resolved()
	for s.Type == "array" && s.Items != nil {
		s = s.Items.resolved()
	}
	switch {
	case s.Type == "any" || s.Type == "object" && s.Properties == nil && s.AdditionalProperties == nil:
		return anySchema, true
	case s.Properties[name] != nil:
		return s.Properties[name], true
	case s.AdditionalProperties != nil:
		return s.AdditionalProperties, true
	}
	return nil, false
}

// api is a discovery document made ready to check requests.
type api struct {
	name   string // the document's ID: "drive:v3"
	prefix string // the paths of its requests begin so
	root   string // what comes before a method's path: "/" + servicePath
	paths  *pathNode
}

// method is a method of a discovery document, ready to check requests.
type method struct {
	id, httpMethod string
	// path is its flatPath (else path) under the document's root:
	// "drive/v3/files/{fileId}".
	path       string
	deprecated bool
	// params are its query parameters and the document's global ones, by
	// name; byBit by their bit, in requestBits.
	params            map[string]*param
	byBit             []*param
	required          []*param
	deprecatedParams  uint64 // the bits of the deprecated ones
	request, response *schema
}

// param is a query parameter of a method, ready to check values.
type param struct {
	name     string
	bit      uint64
	kind     string // the document's type: string, integer, number, boolean
	format   string // int32, uint32, int64, uint64, ...
	enum     []string
	min, max float64 // bounds, ±Inf when it has none
	required bool
	repeated bool
	// deprecatedKey names it in DeprecatedUses ("drive.files.list?corpus");
	// "" when it is not deprecated.
	deprecatedKey string
}

// proseMaximum finds a maximum a parameter's description states where its
// maximum field is absent: the Directory's members.list and groups.list
// say "Max allowed value is 200." only in prose.
var proseMaximum = regexp.MustCompile(`(?:Max allowed value is|Value should not exceed) (\d+)\.`)

// loadAPI reads a discovery document of discoveryFiles and makes its
// tables. It panics if the document does not read: the files are part of
// the package.
func loadAPI(file, prefix string) *api {
	data, err := discoveryFiles.ReadFile(file)
	if err != nil {
		panic(fmt.Sprintf("googlefake: %s: %v", file, err))
	}
	var doc discoveryDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		panic(fmt.Sprintf("googlefake: %s: %v", file, err))
	}
	a := &api{name: doc.ID, prefix: prefix, root: "/" + doc.ServicePath, paths: &pathNode{}}
	doc.link()
	// A method is filed under its flatPath, and under its path where that
	// differs ({+name} expansions, which match several segments) and no
	// other method of the same HTTP method has that path (the Directory's
	// printers.get and printServers.get are both GET {+name}).
	others := map[[2]string][]*method{}
	for _, dm := range doc.methods() {
		m := a.add(&doc, dm)
		if dm.Path != dm.FlatPath && dm.FlatPath != "" {
			key := [2]string{dm.HTTPMethod, dm.Path}
			others[key] = append(others[key], m)
		}
	}
	for key, ms := range others {
		if len(ms) == 1 {
			a.paths.insert(key[1], ms[0])
		}
	}
	return a
}

// link points every $ref of the document's schemas at the schema it names.
func (doc *discoveryDoc) link() {
	for _, s := range doc.Schemas {
		doc.linkSchema(s)
	}
	for _, m := range doc.methods() {
		doc.linkSchema(m.Request)
		doc.linkSchema(m.Response)
	}
}

func (doc *discoveryDoc) linkSchema(s *schema) {
	if s == nil {
		return
	}
	if s.Ref != "" {
		if s.named = doc.Schemas[s.Ref]; s.named == nil {
			panic("googlefake: the discovery document " + doc.ID + " names no schema " + s.Ref)
		}
	}
	for _, p := range s.Properties {
		doc.linkSchema(p)
	}
	doc.linkSchema(s.Items)
	doc.linkSchema(s.AdditionalProperties)
}

// methods returns every method of the document, its resources' and theirs.
func (doc *discoveryDoc) methods() []*discoveryMethod {
	var out []*discoveryMethod
	var walk func(map[string]*discoveryResource)
	walk = func(rs map[string]*discoveryResource) {
		for _, r := range rs {
			out = slices.AppendSeq(out, maps.Values(r.Methods))
			walk(r.Resources)
		}
	}
	walk(doc.Resources)
	return out
}

// add makes a method's table and files it under its flatPath.
func (a *api) add(doc *discoveryDoc, dm *discoveryMethod) *method {
	flat := cmp.Or(dm.FlatPath, dm.Path)
	m := &method{id: dm.ID, httpMethod: dm.HTTPMethod, path: strings.TrimPrefix(a.root, "/") + flat,
		deprecated: dm.Deprecated, params: map[string]*param{}, request: dm.Request, response: dm.Response}
	if !strings.HasPrefix(a.root+flat, a.prefix) {
		panic("googlefake: " + dm.ID + "'s path " + a.root + flat + " is not under " + a.prefix)
	}
	params := maps.Clone(doc.Parameters)
	maps.Copy(params, dm.Parameters)
	for _, name := range slices.Sorted(maps.Keys(params)) {
		if dp := params[name]; dp.Location == "query" {
			m.addParam(name, dp)
		}
	}
	a.paths.insert(flat, m)
	return m
}

// addParam adds a query parameter to the method's table.
func (m *method) addParam(name string, dp *discoveryParam) {
	if len(m.byBit) == 64 {
		panic("googlefake: " + m.id + " has more than 64 parameters")
	}
	p := &param{name: name, bit: 1 << len(m.byBit), kind: dp.Type, format: dp.Format, enum: dp.Enum,
		min: bound(dp.Minimum, math.Inf(-1)), max: bound(dp.Maximum, math.Inf(1)),
		required: dp.Required, repeated: dp.Repeated}
	if dp.Type == "integer" && dp.Maximum == "" {
		if found := proseMaximum.FindStringSubmatch(dp.Description); found != nil {
			p.max = bound(found[1], p.max)
		}
	}
	switch dp.Format {
	case "int32":
		p.min, p.max = max(p.min, math.MinInt32), min(p.max, math.MaxInt32)
	case "uint32":
		p.min, p.max = max(p.min, 0), min(p.max, math.MaxUint32)
	}
	if dp.Deprecated {
		p.deprecatedKey = m.id + "?" + name
		m.deprecatedParams |= p.bit
	}
	m.params[name] = p
	m.byBit = append(m.byBit, p)
	if p.required {
		m.required = append(m.required, p)
	}
}

// bound reads a minimum or maximum of a document, def when there is none.
func bound(s string, def float64) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return def
	}
	return v
}

// pathNode is a node of an API's tree of path templates: one segment
// after another, literal ("files"), a variable ("{fileId}", or with a
// literal suffix, "{approvalId}:approve") or a reserved expansion
// ("{+name}": one or more segments).
type pathNode struct {
	literals map[string]*pathNode
	vars     []varEdge // the ones with the longest suffix first
	plus     *pathNode
	methods  map[string]*method // the templates that end here, by HTTP method
}

type varEdge struct {
	suffix string
	next   *pathNode
}

// insert files m under a path template.
func (n *pathNode) insert(template string, m *method) {
	for seg := range strings.SplitSeq(template, "/") {
		n = n.child(seg)
	}
	if n.methods == nil {
		n.methods = map[string]*method{}
	}
	if old := n.methods[m.httpMethod]; old != nil && old != m {
		panic("googlefake: " + old.id + " and " + m.id + " share " + m.httpMethod + " " + template)
	}
	n.methods[m.httpMethod] = m
}

// child returns the node below n for a segment of a template, made if new.
func (n *pathNode) child(seg string) *pathNode {
	switch {
	case strings.HasPrefix(seg, "{+"):
		if n.plus == nil {
			n.plus = &pathNode{}
		}
		return n.plus
	case strings.HasPrefix(seg, "{"):
		_, suffix, _ := strings.Cut(seg, "}")
		for _, v := range n.vars {
			if v.suffix == suffix {
				return v.next
			}
		}
		next := &pathNode{}
		n.vars = append(n.vars, varEdge{suffix, next})
		slices.SortStableFunc(n.vars, func(a, b varEdge) int { return len(b.suffix) - len(a.suffix) })
		return next
	}
	if n.literals == nil {
		n.literals = map[string]*pathNode{}
	}
	next := n.literals[seg]
	if next == nil {
		next = &pathNode{}
		n.literals[seg] = next
	}
	return next
}

// find returns the method of verb whose template matches the segments of
// rest (none left when more is false), preferring literal segments, and
// whether any template matched the path whatever its method.
func (n *pathNode) find(rest string, more bool, verb string) (*method, bool) {
	if !more {
		return n.methods[verb], n.methods != nil
	}
	seg, after, hasMore := strings.Cut(rest, "/")
	matched := false
	try := func(next *pathNode, rest string, more bool) *method {
		m, ok := next.find(rest, more, verb)
		matched = matched || ok
		return m
	}
	if next := n.literals[seg]; next != nil {
		if m := try(next, after, hasMore); m != nil {
			return m, true
		}
	}
	for _, v := range n.vars {
		if len(seg) > len(v.suffix) && strings.HasSuffix(seg, v.suffix) {
			if m := try(v.next, after, hasMore); m != nil {
				return m, true
			}
		}
	}
	if n.plus != nil && seg != "" {
		for rest, more := after, hasMore; ; _, rest, more = strings.Cut(rest, "/") {
			if m := try(n.plus, rest, more); m != nil {
				return m, true
			}
			if !more {
				break
			}
		}
	}
	return nil, matched
}
