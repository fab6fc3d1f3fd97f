package googlefake

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"math/bits"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// maxCheckedBody bounds the request bodies the check reads.
const maxCheckedBody = 1 << 20

// checkRequest checks a request to a checked API against the API's
// discovery document: a known method (HTTP method and path), known query
// parameters, each given once unless repeated, with a value of its type,
// in its enum and bounds, the required ones present, a fields selection
// of fields of the response's schema, a body of keys of the request's
// schema. It records the request's shape and the deprecated parameters,
// fields and methods it uses, and returns Google's 400 for what the
// document does not allow.
func (s *Server) checkRequest(a *api, r *http.Request) *apiError {
	path := r.URL.EscapedPath()
	m, known := a.paths.find(strings.TrimPrefix(path, a.root), true, r.Method)
	if m == nil {
		return s.checks.refuse(r, nil, path, unknownMethod(a, r.Method, path, known))
	}
	present, fields, aerr := m.checkQuery(r.URL.RawQuery)
	var deprecatedFields []string
	if aerr == nil {
		deprecatedFields, aerr = m.checkFields(fields)
	}
	if aerr == nil {
		aerr = m.checkBody(r)
	}
	if aerr != nil {
		return s.checks.refuse(r, m, path, aerr)
	}
	s.checks.accept(m, present, fields, deprecatedFields)
	return nil
}

// refuseRequest is the check's 400 for a request that is not a parameter's
// fault: an unknown method or path, a body of unknown keys.
func refuseRequest(message string) *apiError {
	return newAPIError(http.StatusBadRequest, "badRequest", message, "")
}

// refuseParameter is the check's 400 for a bad query parameter, name.
func refuseParameter(name, message string) *apiError {
	return newAPIError(http.StatusBadRequest, "invalidParameter", message, name)
}

// unknownMethod is the answer to a request no method of the API answers;
// known: some method has its path, with another HTTP method.
func unknownMethod(a *api, verb, path string, known bool) *apiError {
	if known {
		return refuseRequest(fmt.Sprintf("The discovery document %s has no method %s %s (the path takes other HTTP methods)", a.name, verb, path))
	}
	return refuseRequest(fmt.Sprintf("The discovery document %s has no method %s %s (no method has this path)", a.name, verb, path))
}

// checkQuery checks a raw query against the method's parameters, in the
// order given, and returns the bits of the parameters present and the
// fields parameter.
func (m *method) checkQuery(raw string) (present uint64, fields string, aerr *apiError) {
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if pair == "" {
			continue
		}
		name, value, err := unescapePair(pair)
		if err != nil {
			return 0, "", refuseRequest("Malformed query: " + err.Error())
		}
		p := m.params[name]
		switch {
		case p == nil:
			return 0, "", refuseParameter(name, fmt.Sprintf("Unknown parameter %q: %s has no such parameter", name, m.id))
		case present&p.bit != 0 && !p.repeated:
			return 0, "", refuseParameter(name, fmt.Sprintf("Parameter %q given more than once: it is not repeated", name))
		}
		if aerr := p.check(value); aerr != nil {
			return 0, "", aerr
		}
		present |= p.bit
		if name == "fields" {
			fields = value
		}
	}
	for _, p := range m.required {
		if present&p.bit == 0 {
			return 0, "", refuseParameter(p.name, "Required parameter: "+p.name)
		}
	}
	return present, fields, nil
}

// unescapePair returns the name and value of a query's name=value.
func unescapePair(pair string) (string, string, error) {
	k, v, _ := strings.Cut(pair, "=")
	name, err := url.QueryUnescape(k)
	if err != nil {
		return "", "", fmt.Errorf("parameter name %q: %w", k, err)
	}
	value, err := url.QueryUnescape(v)
	if err != nil {
		return "", "", fmt.Errorf("value of %s: %w", name, err)
	}
	return name, value, nil
}

// check checks a value of the parameter: its enum, its type and format,
// its bounds.
func (p *param) check(v string) *apiError {
	if len(p.enum) > 0 && !slices.Contains(p.enum, v) {
		return refuseParameter(p.name, fmt.Sprintf("Invalid value '%s' for %s: allowed values are %s",
			v, p.name, strings.Join(p.enum, ", ")))
	}
	switch {
	case p.kind == "boolean":
		if !strings.EqualFold(v, "true") && !strings.EqualFold(v, "false") {
			return refuseParameter(p.name, fmt.Sprintf("Invalid value '%s' for %s: expected a boolean (true or false)", v, p.name))
		}
	case p.kind == "integer" || p.format == "int64" || p.format == "uint64":
		n, err := parseInteger(v, p.format)
		if err != nil {
			return refuseParameter(p.name, fmt.Sprintf("Invalid value '%s' for %s: expected an integer (%s)", v, p.name, cmp.Or(p.format, "int64")))
		}
		return p.inBounds(v, n)
	case p.kind == "number":
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(x) {
			return refuseParameter(p.name, fmt.Sprintf("Invalid value '%s' for %s: expected a number", v, p.name))
		}
		return p.inBounds(v, x)
	}
	return nil
}

// parseInteger reads an integer of a format: unsigned for uint32 and
// uint64, else signed 64 bits (int32's bounds are the parameter's).
func parseInteger(v, format string) (float64, error) {
	if strings.HasPrefix(format, "uint") {
		n, err := strconv.ParseUint(v, 10, 64)
		return float64(n), err
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return float64(n), err
}

// inBounds checks a number against the parameter's minimum and maximum,
// saying what Drive says of a page size out of its range.
func (p *param) inBounds(v string, x float64) *apiError {
	if x >= p.min && x <= p.max {
		return nil
	}
	var rule string
	switch {
	case math.IsInf(p.min, -1):
		rule = "at most " + formatBound(p.max)
	case math.IsInf(p.max, 1):
		rule = "at least " + formatBound(p.min)
	default:
		rule = "within the range: [" + formatBound(p.min) + ", " + formatBound(p.max) + "]"
	}
	return refuseParameter(p.name, fmt.Sprintf("Invalid value '%s'. Values must be %s", v, rule))
}

func formatBound(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// checkedSelections holds the fields selections found valid, by method,
// with the deprecated fields each names (their DeprecatedUses keys): a
// selection is parsed and checked once.
var checkedSelections sync.Map // checkedSelectionKey → []string

type checkedSelectionKey struct {
	m   *method
	sel string
}

// checkFields checks a fields selection ("" for none) against the
// method's response, and returns the deprecated fields it names.
func (m *method) checkFields(sel string) ([]string, *apiError) {
	if sel == "" {
		return nil, nil
	}
	key := checkedSelectionKey{m, sel}
	if deprecated, ok := checkedSelections.Load(key); ok {
		return deprecated.([]string), nil
	}
	deprecated, err := m.selection(sel)
	if err != nil {
		return nil, refuseParameter("fields", err.Error())
	}
	checkedSelections.Store(key, deprecated)
	return deprecated, nil
}

// selection parses a fields selection and checks that each field it
// names is one of the method's response, and returns the deprecated
// fields it names (their DeprecatedUses keys).
func (m *method) selection(sel string) ([]string, error) {
	selected, err := parseFields(sel)
	if err != nil {
		return nil, err
	}
	var deprecated []string
	err = checkSelection(selected, m.response, "", func(path string) {
		deprecated = append(deprecated, m.id+"?fields="+path)
	})
	return deprecated, err
}

// checkSelection checks that every field a selection names below path is
// one of the values s describes (none when s is nil), telling deprecated
// of each deprecated one. A wildcard selects every field, and what it
// selects below is not checked.
func checkSelection(sel mask, s *schema, path string, deprecated func(path string)) error {
	for _, name := range slices.Sorted(maps.Keys(sel)) {
		if name == "*" {
			continue
		}
		at := path + name
		if s == nil {
			return fieldError(at)
		}
		f, ok := s.field(name)
		if !ok {
			return fieldError(at)
		}
		if f.Deprecated {
			deprecated(at)
		}
		if err := checkSelection(sel[name], f, at+"/", deprecated); err != nil {
			return err
		}
	}
	return nil
}

// checkBody checks that a JSON body of a method that takes one has only
// keys of the method's request schema. The body is read (up to
// maxCheckedBody) and put back for the method; one that is not JSON is
// left to the method, which refuses it.
func (m *method) checkBody(r *http.Request) *apiError {
	if m.request == nil || r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxCheckedBody+1))
	switch {
	case err != nil:
		return refuseRequest("The request body could not be read: " + err.Error())
	case len(raw) > maxCheckedBody:
		return refuseRequest(fmt.Sprintf("The request body is larger than googlefake reads (%d bytes)", maxCheckedBody))
	}
	r.Body = io.NopCloser(bytes.NewReader(raw))
	var body any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&body) != nil {
		return nil
	}
	if key := unknownKey(body, m.request, ""); key != "" {
		return refuseRequest(fmt.Sprintf("Invalid JSON payload received. Unknown name %q: Cannot find field.", key))
	}
	return nil
}

// unknownKey returns the first key of a decoded JSON value (below path)
// that the schema s lacks, "" if it has them all.
func unknownKey(v any, s *schema, path string) string {
	switch v := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			f, ok := s.field(k)
			if !ok {
				return path + k
			}
			if bad := unknownKey(v[k], f, path+k+"."); bad != "" {
				return bad
			}
		}
	case []any:
		for _, e := range v {
			if bad := unknownKey(e, s, path); bad != "" {
				return bad
			}
		}
	}
	return ""
}

// checkLog is what the check saw: the distinct request shapes and the
// deprecated uses. Its own lock, not Server.mu: every request passes here.
type checkLog struct {
	mu         sync.Mutex
	shapes     map[shapeKey]*RequestShape
	deprecated map[string]int
}

// shapeKey tells request shapes apart: a valid request's by its method,
// the bits of its parameters and its fields; a refused one's also by what
// it sent and why it was refused.
type shapeKey struct {
	m       *method
	present uint64
	fields  string
	// Refused requests only.
	verb, path, params, refused string
}

func newCheckLog() checkLog {
	return checkLog{shapes: map[shapeKey]*RequestShape{}, deprecated: map[string]int{}}
}

// accept records a valid request of m: its shape, and its uses of
// deprecated parameters, fields (deprecatedFields, their keys) and
// methods.
func (l *checkLog) accept(m *method, present uint64, fields string, deprecatedFields []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	key := shapeKey{m: m, present: present, fields: fields}
	sh := l.shapes[key]
	if sh == nil {
		sh = &RequestShape{Method: m.id, HTTPMethod: m.httpMethod, Path: m.path, Fields: fields}
		for b := present; b != 0; b &= b - 1 {
			sh.Params = append(sh.Params, m.byBit[bits.TrailingZeros64(b)].name)
		}
		slices.Sort(sh.Params)
		l.shapes[key] = sh
	}
	sh.Count++
	for b := present & m.deprecatedParams; b != 0; b &= b - 1 {
		l.deprecated[m.byBit[bits.TrailingZeros64(b)].deprecatedKey]++
	}
	for _, k := range deprecatedFields {
		l.deprecated[k]++
	}
	if m.deprecated {
		l.deprecated[m.id]++
	}
}

// refuse records a request the check refused with aerr, of method m (nil
// when none answers it) at path, and returns aerr.
func (l *checkLog) refuse(r *http.Request, m *method, path string, aerr *apiError) *apiError {
	sh := RequestShape{HTTPMethod: r.Method, Path: path, Refused: aerr.Message}
	if m != nil {
		sh.Method, sh.HTTPMethod, sh.Path = m.id, m.httpMethod, m.path
	}
	for pair := range strings.SplitSeq(r.URL.RawQuery, "&") {
		name, value, err := unescapePair(pair)
		if err != nil || pair == "" {
			continue
		}
		if !slices.Contains(sh.Params, name) {
			sh.Params = append(sh.Params, name)
		}
		if name == "fields" {
			sh.Fields = value
		}
	}
	slices.Sort(sh.Params)
	key := shapeKey{m: m, fields: sh.Fields, verb: r.Method, path: path, params: strings.Join(sh.Params, "&"), refused: sh.Refused}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shapes[key] == nil {
		l.shapes[key] = &sh
	}
	l.shapes[key].Count++
	return aerr
}

func (l *checkLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.shapes)
	clear(l.deprecated)
}
