package httpapi_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/foldermirror/foldermirror/httpapi"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// The API's OpenAPI document (openapi.json, embedded in the binary and
// served at /openapi.json) is checked by kin-openapi: the document itself
// by its loader and validator, and real answers of the API by openapi3filter,
// which validates OpenAPI 3.1 schemas as JSON Schema 2020-12.

// openAPIFile is the document, as embedded in the binary.
const openAPIFile = "openapi.json"

// contract is the OpenAPI document, loaded and validated, and a router
// finding its operations from requests.
type contract struct {
	doc    *openapi3.T
	router routers.Router
	// valid holds the keys (answerKey) of the answers found valid: an
	// answer's validity depends on nothing else, and identical answers
	// are common (both index backends answer alike, and so do operations
	// to a refused caller), while each validation compiles its schemas
	// anew.
	valid sync.Map
}

// answerKey is what an answer's validity depends on: its operation, its
// status, its headers (but Date) and its body.
func answerKey(operationID string, a answer) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\x00%d", operationID, a.status)
	for _, name := range slices.Sorted(maps.Keys(a.header)) {
		if name != "Date" {
			fmt.Fprintf(&b, "\x00%s: %q", name, a.header[name])
		}
	}
	b.WriteByte(0)
	b.Write(a.body)
	return b.String()
}

var loadContract = sync.OnceValues(func() (*contract, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(openAPIFile)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", openAPIFile, err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("%s is not a valid OpenAPI document: %w", openAPIFile, err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("route %s's operations: %w", openAPIFile, err)
	}
	return &contract{doc: doc, router: router}, nil
})

// openAPI returns the OpenAPI document, failing the test if it does not
// load or is not valid.
func openAPI(t testing.TB) *contract {
	t.Helper()
	c, err := loadContract()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// answer is an exchange with the API: the request sent, the status, headers
// and whole body received.
type answer struct {
	req    *http.Request
	status int
	header http.Header
	body   []byte
	// streamed: the body came in chunks, of a length not told at first.
	streamed bool
	// operation is the ID of the document's operation it answers, once
	// validated.
	operation string
}

// check validates an answer against the document: the operation its
// request's method and path name must answer its status, with the headers
// and the body that status's response describes (an undocumented status is
// an error). With checkRequest, the request must be valid too.
func (c *contract) check(a answer, checkRequest bool) (operationID string, err error) {
	req := a.req.Clone(context.Background())
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		return "", fmt.Errorf("no operation of the document for %s %s: %w", req.Method, req.URL.Path, err)
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, SkipSettingDefaults: true, MultiError: true}}
	if checkRequest {
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			return route.Operation.OperationID, fmt.Errorf("the request is not valid: %w", err)
		}
	}
	op := route.Operation.OperationID
	key := answerKey(op, a)
	if _, ok := c.valid.Load(key); ok {
		return op, nil
	}
	if a.status == http.StatusNotModified {
		// openapi3filter leaves 304s alone: their status and headers are
		// checked here, each header's value by its schema.
		err = checkNotModified(route.Operation, a.header)
	} else {
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: a.status, Header: a.header,
			Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}}
		out.SetBodyBytes(a.body)
		if err = openapi3filter.ValidateResponse(context.Background(), out); err != nil {
			err = fmt.Errorf("the answer is not valid: %w", err)
		}
	}
	if err == nil {
		c.valid.Store(key, true)
	}
	return op, err
}

// checkNotModified checks that op may answer 304, with these headers.
func checkNotModified(op *openapi3.Operation, header http.Header) error {
	ref := op.Responses.Status(http.StatusNotModified)
	if ref == nil {
		return fmt.Errorf("%s does not answer 304", op.OperationID)
	}
	var errs []error
	for name, h := range ref.Value.Headers {
		value, ok := header[http.CanonicalHeaderKey(name)]
		switch {
		case !ok && h.Value.Required:
			errs = append(errs, fmt.Errorf("304: response header %q missing", name))
		case ok:
			if err := h.Value.Schema.Value.VisitJSON(value[0], openapi3.EnableJSONSchema2020()); err != nil {
				errs = append(errs, fmt.Errorf("304: response header %q: %w", name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// statuses returns the statuses each operation of the document may answer.
func (c *contract) statuses() map[string][]int {
	out := map[string][]int{}
	for _, item := range c.doc.Paths.Map() {
		for _, op := range item.Operations() {
			for code := range op.Responses.Map() {
				var status int
				if _, err := fmt.Sscan(code, &status); err == nil {
					out[op.OperationID] = append(out[op.OperationID], status)
				}
			}
			slices.Sort(out[op.OperationID])
		}
	}
	return out
}

// TestOpenAPIServed: /openapi.json answers the embedded document to anyone,
// through the API's own server, with an ETag that makes a second fetch
// cheap; it is no operation of the API (405 to another method).
func TestOpenAPIServed(t *testing.T) {
	// No index, no authenticator: the document needs neither.
	api := httpapi.New(nil, nil, httpapi.Options{Logger: slog.New(slog.DiscardHandler)})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go api.Serve(ln)
	t.Cleanup(func() { api.Shutdown(context.Background()) })
	f := &fixture{t: t, url: "http://" + ln.Addr().String(), client: &http.Client{Transport: &http.Transport{}}}
	t.Cleanup(f.client.CloseIdleConnections)
	file, err := os.ReadFile(openAPIFile)
	if err != nil {
		t.Fatal(err)
	}
	resp, body := f.get("/openapi.json", "")
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, file) {
		t.Fatalf("GET /openapi.json without credentials: %d, %d bytes; want 200 and %s's %d bytes", resp.StatusCode, len(body), openAPIFile, len(file))
	}
	for name, want := range map[string]string{"Content-Type": "application/json; charset=utf-8", "Cache-Control": "public, max-age=300"} {
		if got := resp.Header.Get(name); got != want {
			t.Errorf("%s %q, want %q", name, got, want)
		}
	}
	etag := resp.Header.Get("ETag")
	if !strings.HasPrefix(etag, `"`) || len(etag) < 10 {
		t.Fatalf("ETag %q", etag)
	}
	resp, body = f.getWithHeaders("/openapi.json", map[string]string{"If-None-Match": etag})
	if resp.StatusCode != http.StatusNotModified || len(body) != 0 || resp.Header.Get("ETag") != etag {
		t.Errorf("with If-None-Match: %d, ETag %q, %d bytes; want 304, the same ETag, no body", resp.StatusCode, resp.Header.Get("ETag"), len(body))
	}
	req, err := http.NewRequest(http.MethodPost, f.url+"/openapi.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	post, err := f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, post.Body)
	post.Body.Close()
	if post.StatusCode != http.StatusMethodNotAllowed || post.Header.Get("Allow") != http.MethodGet {
		t.Errorf("POST /openapi.json: %d, Allow %q; want 405, GET", post.StatusCode, post.Header.Get("Allow"))
	}
}
