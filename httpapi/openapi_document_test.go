package httpapi_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/foldermirror/foldermirror/httpapi"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/gin-gonic/gin"
)

// The document is a valid OpenAPI 3.1 document (kin-openapi's loader and
// validator), with what DESIGN §11 asks of it: operations 1–6, 2, 3 and 4
// deprecated and 2 naming its successor, both Bearer schemes and the
// security code in the header and the query.
func TestOpenAPIDocument(t *testing.T) {
	c := openAPI(t)
	if !c.doc.IsOpenAPI31OrLater() || !strings.HasPrefix(c.doc.OpenAPI, "3.1.") {
		t.Errorf("openapi %q, want 3.1.x", c.doc.OpenAPI)
	}
	deprecated := map[string]bool{}
	ops := map[string]*openapi3.Operation{}
	for _, item := range c.doc.Paths.Map() {
		for _, op := range item.Operations() {
			ops[op.OperationID] = op
			deprecated[op.OperationID] = op.Deprecated
		}
	}
	want := map[string]bool{"domain:v1beta1.Configuration.getWithDefaultValue": false, "listChildrenDeprecated": true,
		"listLibraryFolders": true, "getFolderPermissions": true, "getFolder": false, "listChildren": false}
	if !maps.Equal(deprecated, want) {
		t.Errorf("operations and whether each is deprecated: %v, want %v", deprecated, want)
	}
	if op := ops["listChildrenDeprecated"]; op == nil || !strings.Contains(op.Description, "successor is `GET /folder/v1/files/{folderId}/children`") {
		t.Error("operation 2 does not name its successor, operation 6")
	}
	schemes := map[string]string{}
	for name, s := range c.doc.Components.SecuritySchemes {
		schemes[name] = strings.Join([]string{s.Value.Type, s.Value.Scheme, s.Value.In, s.Value.Name}, " ")
	}
	wantSchemes := map[string]string{"googleBearer": "http bearer  ", "microsoftBearer": "http bearer  ",
		"securityCodeHeader": "http securityCode  ", "securityCodeQuery": "apiKey  query securityCode"}
	if !maps.Equal(schemes, wantSchemes) {
		t.Errorf("security schemes %q, want %q", schemes, wantSchemes)
	}
	var required []string
	for _, req := range c.doc.Security {
		required = append(required, slices.Collect(maps.Keys(req))...)
	}
	if slices.Sort(required); !slices.Equal(required, slices.Sorted(maps.Keys(wantSchemes))) {
		t.Errorf("the document asks for %v, want one of every scheme", required)
	}
}

// Every object schema of an answer is closed (additionalProperties false,
// or a schema the values of a map follow): a field the server adds but the
// document lacks fails validation.
func TestOpenAPISchemasAreClosed(t *testing.T) {
	c := openAPI(t)
	seen := map[*openapi3.Schema]bool{}
	var visit func(where string, s *openapi3.Schema)
	visit = func(where string, s *openapi3.Schema) {
		if s == nil || seen[s] {
			return
		}
		seen[s] = true
		if s.Type.Is(openapi3.TypeObject) {
			ap := s.AdditionalProperties
			if (ap.Has == nil || *ap.Has) && ap.Schema == nil {
				t.Errorf("%s: an object schema open to other properties", where)
			}
			if ap.Schema != nil {
				visit(where+".additionalProperties", ap.Schema.Value)
			}
		}
		for name, p := range s.Properties {
			visit(where+"."+name, p.Value)
		}
		if s.Items != nil {
			visit(where+"[]", s.Items.Value)
		}
		for i, sub := range s.AllOf {
			visit(where+".allOf"+strings.Repeat("'", i), sub.Value)
		}
	}
	for name, s := range c.doc.Components.Schemas {
		visit(name, s.Value)
	}
	if len(seen) < 20 {
		t.Errorf("only %d schemas visited", len(seen))
	}
}

// The document describes exactly the API's routes, but /openapi.json
// itself (no operation of the API).
func TestOpenAPIPathsAreTheRoutes(t *testing.T) {
	engine, ok := httpapi.New(nil, nil, httpapi.Options{}).Handler().(*gin.Engine)
	if !ok {
		t.Fatal("the API's handler is not its gin.Engine: its routes cannot be read")
	}
	var routes []string
	for _, r := range engine.Routes() {
		if r.Path == "/openapi.json" {
			continue
		}
		segments := strings.Split(r.Path, "/")
		for i, s := range segments {
			if name, ok := strings.CutPrefix(s, ":"); ok {
				segments[i] = "{" + name + "}"
			}
		}
		routes = append(routes, r.Method+" "+strings.Join(segments, "/"))
	}
	var described []string
	for path, item := range openAPI(t).doc.Paths.Map() {
		for method := range item.Operations() {
			described = append(described, method+" "+path)
		}
	}
	slices.Sort(routes)
	slices.Sort(described)
	if !slices.Equal(routes, described) {
		t.Errorf("the API's routes:\n%s\nthe document's operations:\n%s", strings.Join(routes, "\n"), strings.Join(described, "\n"))
	}
}
