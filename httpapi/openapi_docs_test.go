package httpapi_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// apiDoc is docs/api.md, the API's documentation for people.
const apiDoc = "../docs/api.md"

var (
	backticked = regexp.MustCompile("`([^`]+)`")
	number     = regexp.MustCompile(`\b[1-5][0-9][0-9]\b`)
	// documentedParameter is a query parameter in the table of
	// docs/api.md, with what it says of its type.
	documentedParameter = regexp.MustCompile("`([A-Za-z]+)`(?: \\(([^)]*)\\))?")
)

// docOperation is a row of the table of operations of docs/api.md.
type docOperation struct {
	number, operationID, path string
	deprecated                bool
	// query holds each query parameter's type: "string", "array of
	// string" (repeated) or "boolean, default false".
	query    map[string]string
	headers  []string
	statuses []int
}

// docOperations reads the table of operations of docs/api.md's section on
// /openapi.json.
func docOperations(t *testing.T, doc string) []docOperation {
	t.Helper()
	_, section, ok := strings.Cut(doc, "\n## The machine-readable contract: `/openapi.json`\n")
	if !ok {
		t.Fatalf("%s has no section on /openapi.json", apiDoc)
	}
	var ops []docOperation
	for _, line := range strings.Split(section, "\n") {
		cells := tableCells(line)
		if len(cells) != 6 || strings.Trim(cells[0], "0123456789") != "" || cells[0] == "" {
			continue
		}
		op := docOperation{number: cells[0], deprecated: strings.Contains(cells[1], "(deprecated"), query: map[string]string{}}
		op.operationID = backticked.FindStringSubmatch(cells[1])[1]
		op.path = backticked.FindStringSubmatch(cells[2])[1]
		for _, m := range documentedParameter.FindAllStringSubmatch(cells[3], -1) {
			kind := m[2]
			switch kind {
			case "":
				kind = "string"
			case "repeated":
				kind = "array of string"
			}
			op.query[m[1]] = kind
		}
		for _, m := range backticked.FindAllStringSubmatch(cells[4], -1) {
			op.headers = append(op.headers, m[1])
		}
		for _, n := range number.FindAllString(cells[5], -1) {
			status, _ := strconv.Atoi(n)
			op.statuses = append(op.statuses, status)
		}
		ops = append(ops, op)
	}
	if len(ops) != 6 {
		t.Fatalf("%s's table of operations has %d rows, want 6", apiDoc, len(ops))
	}
	return ops
}

// tableCells returns the cells of a row of a Markdown table, trimmed; none
// for another line.
func tableCells(line string) []string {
	if !strings.HasPrefix(line, "|") {
		return nil
	}
	cells := strings.Split(strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|"), "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}

// parameterType says a parameter's type as docs/api.md's table does.
func parameterType(s *openapi3.Schema) string {
	switch {
	case s.Type.Is(openapi3.TypeArray):
		return "array of " + parameterType(s.Items.Value)
	case s.Default != nil:
		return fmt.Sprintf("%s, default %v", strings.Join(s.Type.Slice(), " or "), s.Default)
	}
	return strings.Join(s.Type.Slice(), " or ")
}

// docs/api.md names the document's operations, paths, parameters (with
// their types and defaults), request headers and statuses, and no other.
func TestAPIDocNamesTheOpenAPIOperations(t *testing.T) {
	c := openAPI(t)
	text, err := os.ReadFile(apiDoc)
	if err != nil {
		t.Fatal(err)
	}
	statuses := c.statuses()
	described := map[string]bool{}
	for _, row := range docOperations(t, string(text)) {
		item := c.doc.Paths.Value(row.path)
		if item == nil || item.Get == nil {
			t.Errorf("operation %s: the document has no GET %s", row.number, row.path)
			continue
		}
		op := item.Get
		described[row.path] = true
		if op.OperationID != row.operationID || op.Deprecated != row.deprecated {
			t.Errorf("operation %s: %s, deprecated %t; the document has %s, deprecated %t", row.number, row.operationID, row.deprecated, op.OperationID, op.Deprecated)
		}
		query, headers := map[string]string{}, []string{}
		for _, p := range op.Parameters {
			switch p.Value.In {
			case openapi3.ParameterInQuery:
				query[p.Value.Name] = parameterType(p.Value.Schema.Value)
			case openapi3.ParameterInHeader:
				headers = append(headers, p.Value.Name)
			}
		}
		if !maps.Equal(query, row.query) {
			t.Errorf("operation %s: %s names the query parameters %v; the document %v", row.number, apiDoc, row.query, query)
		}
		if slices.Sort(headers); !slices.Equal(headers, slices.Sorted(slices.Values(row.headers))) {
			t.Errorf("operation %s: %s names the request headers %v; the document %v", row.number, apiDoc, row.headers, headers)
		}
		if !slices.Equal(statuses[op.OperationID], row.statuses) {
			t.Errorf("operation %s: %s names the statuses %v; the document %v", row.number, apiDoc, row.statuses, statuses[op.OperationID])
		}
	}
	if len(described) != c.doc.Paths.Len() {
		t.Errorf("%s names %d of the document's %d paths", apiDoc, len(described), c.doc.Paths.Len())
	}
}

// The errors table of docs/api.md gives each error status of the document
// its reasons, as the document does (405, no operation's answer, aside).
func TestAPIDocErrorsAreTheOpenAPIErrors(t *testing.T) {
	c := openAPI(t)
	text, err := os.ReadFile(apiDoc)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(text), "\n## Errors\n")
	if !ok {
		t.Fatalf("%s has no section Errors", apiDoc)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	documented := map[int][]string{}
	for _, line := range strings.Split(section, "\n") {
		cells := tableCells(line)
		if len(cells) == 0 {
			continue
		}
		status, err := strconv.Atoi(cells[0])
		if err != nil || len(cells) != 3 || status == 405 {
			continue
		}
		documented[status] = strings.Split(cells[1], " / ")
	}
	described := map[int][]string{}
	for _, item := range c.doc.Paths.Map() {
		for _, op := range item.Operations() {
			for code, resp := range op.Responses.Map() {
				if status, _ := strconv.Atoi(code); status >= 400 {
					described[status] = errorReasons(t, resp.Value)
				}
			}
		}
	}
	if !maps.EqualFunc(documented, described, slices.Equal) {
		t.Errorf("%s's errors: %v; the document's: %v", apiDoc, documented, described)
	}
}

// errorReasons returns the reasons an error response of the document
// allows: those every part of its schema (the error shape, and what it
// narrows for the status) allows.
func errorReasons(t *testing.T, resp *openapi3.Response) []string {
	t.Helper()
	var reasons []string
	for i, part := range resp.Content.Get("application/json").Schema.Value.AllOf {
		errorProps := part.Value.Properties["error"]
		if errorProps == nil || errorProps.Value.Properties["errors"] == nil {
			t.Fatalf("the error response %q: part %d of its schema says nothing of the error's reason", *resp.Description, i)
		}
		reason := errorProps.Value.Properties["errors"].Value.Items.Value.Properties["reason"].Value
		allowed := slices.Clone(reason.Enum)
		if reason.Const != nil {
			allowed = []any{reason.Const}
		}
		var kept []string
		for _, r := range allowed {
			if i == 0 || slices.Contains(reasons, fmt.Sprint(r)) {
				kept = append(kept, fmt.Sprint(r))
			}
		}
		reasons = kept
	}
	return reasons
}

// Every JSON example of docs/api.md is valid by the schema of its answer:
// whole where it is complete, field by field where it elides ("...").
func TestAPIDocExamplesFollowTheOpenAPIDocument(t *testing.T) {
	c := openAPI(t)
	text, err := os.ReadFile(apiDoc)
	if err != nil {
		t.Fatal(err)
	}
	opPaths := map[string]string{}
	for _, row := range docOperations(t, string(text)) {
		opPaths[row.number] = row.path
	}
	heading, checked := "", 0
	lines := strings.Split(string(text), "\n")
	for i := 0; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "#") {
			heading = lines[i]
			continue
		}
		if lines[i] != "```json" {
			continue
		}
		var block []string
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			block = append(block, lines[i])
		}
		schema := exampleSchema(t, c, heading, opPaths)
		var example any
		if err := json.Unmarshal([]byte(strings.Join(block, "\n")), &example); err != nil {
			t.Errorf("%s: an example that is not JSON: %v", heading, err)
			continue
		}
		for _, err := range checkExample(heading, schema, example) {
			t.Error(err)
		}
		checked++
	}
	if checked < 6 {
		t.Errorf("%d examples checked; docs/api.md has more", checked)
	}
}

// exampleSchema returns the schema of the examples under a heading of
// docs/api.md: "### N. ..." operation N's 200 answer, "## Errors" the
// error shape.
func exampleSchema(t *testing.T, c *contract, heading string, opPaths map[string]string) *openapi3.Schema {
	t.Helper()
	if heading == "## Errors" {
		return c.doc.Components.Schemas["Error"].Value
	}
	number, _, _ := strings.Cut(strings.TrimPrefix(heading, "### "), ".")
	path, ok := opPaths[number]
	if !strings.HasPrefix(heading, "### ") || !ok {
		t.Fatalf("a JSON example under %q, no operation's heading", heading)
	}
	return c.doc.Paths.Value(path).Get.Responses.Status(200).Value.Content.Get("application/json").Schema.Value
}

// checkExample validates an example against s with kin-openapi where it is
// complete; where it elides ("..." as a key or an array's element), each
// field it shows against its property's schema, and the fields it must
// have where it elides none.
func checkExample(where string, s *openapi3.Schema, v any) []error {
	if !elides(v) {
		if err := s.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
			return []error{fmt.Errorf("%s: an example not valid by the document: %w", where, err)}
		}
		return nil
	}
	var errs []error
	switch v := v.(type) {
	case map[string]any:
		for name, field := range v {
			if name == "..." {
				continue
			}
			p := s.Properties[name]
			if p == nil {
				errs = append(errs, fmt.Errorf("%s: the example's field %q is not in the document", where, name))
				continue
			}
			errs = append(errs, checkExample(where+"."+name, p.Value, field)...)
		}
		if _, elided := v["..."]; !elided {
			for _, name := range s.Required {
				if _, ok := v[name]; !ok {
					errs = append(errs, fmt.Errorf("%s: the example lacks the field %q", where, name))
				}
			}
		}
	case []any:
		for i, item := range v {
			if item != "..." {
				errs = append(errs, checkExample(fmt.Sprintf("%s[%d]", where, i), s.Items.Value, item)...)
			}
		}
	}
	return errs
}

// elides tells whether a JSON value leaves something out ("...") at any
// depth.
func elides(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		_, ok := v["..."]
		return ok || slices.ContainsFunc(slices.Collect(maps.Values(v)), elides)
	case []any:
		return slices.ContainsFunc(v, func(item any) bool { return item == "..." || elides(item) })
	}
	return false
}
