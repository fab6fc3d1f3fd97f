package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/httpapi/auth"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/googlefake"
)

// The Microsoft tenant and application of the contract tests' callers.
const (
	contractTenant = "0b6f7c1e-2d3a-4c5b-8e9f-a1b2c3d4e5f6"
	contractApp    = "5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d"
)

// The operations' paths, by their number in DESIGN §2.
const (
	op1 = "/domain/v1beta1/configurationFlags"
	op2 = "/folder/v1/libraries/%s/folders/children"
	op3 = "/folder/v1/libraries/%s/folders"
	op4 = "/folder/v1/folders/%s/permissions"
	op5 = "/folder/v1/files/%s"
	op6 = "/folder/v1/files/%s/children"
)

// bigLibrary is a library of example.com whose operation 3 answer is
// streamed: far longer than an answer sent whole, in several chunks.
var bigLibrary = fm.Library{ID: "lib-big", Name: "Big", Domain: "example.com", StorageAccount: "storage@example.com", RootFolderID: "big"}

func bigTree(n int) []fm.SyncedFolder {
	folders := []fm.SyncedFolder{sf("big", "", "Big", pStorage, pDomain)}
	for i := range n {
		folders = append(folders, sf(fmt.Sprintf("big-%04d", i), "big", fmt.Sprintf("A folder of the big library, number %d", i), pStorage, pDomain))
	}
	return folders
}

// exchange is a request to the API and the status it must get.
type exchange struct {
	name          string
	authorization string
	path          string
	headers       map[string]string
	status        int
}

// contractRun sends exchanges to a fixture and validates each answer
// against the document, recording which status of which operation was
// seen.
type contractRun struct {
	t    *testing.T
	f    *fixture
	c    *contract
	seen map[string]map[int]int
}

// send sends ex, checks its status and validates the answer (and the
// request, if meant to succeed); the first 200 of each operation
// that has ETags is sent again with If-None-Match, which must answer 304.
// It returns the answer.
func (r *contractRun) send(ex exchange) answer {
	r.t.Helper()
	headers := maps.Clone(ex.headers)
	if headers == nil {
		headers = map[string]string{}
	}
	headers["Authorization"] = ex.authorization
	a := r.do(ex.name, ex.path, headers, ex.status)
	if etag := a.header.Get("ETag"); a.status == http.StatusOK && etag != "" && r.seen[a.operation][http.StatusNotModified] == 0 {
		headers["If-None-Match"] = etag
		r.do(ex.name+", again with its ETag", ex.path, headers, http.StatusNotModified)
	}
	return a
}

func (r *contractRun) do(name, path string, headers map[string]string, status int) answer {
	r.t.Helper()
	a := r.get(path, headers)
	if a.status != status {
		r.t.Errorf("%s: GET %.80s: %d %.300s; want %d", name, path, a.status, a.body, status)
	}
	// The requests meant to succeed are valid by the document too (the
	// others' are alike, and validating each costs a schema compilation
	// per parameter).
	r.validate(name, &a, status == http.StatusOK)
	return a
}

// get sends a GET with those headers (those set to "" left out).
func (r *contractRun) get(path string, headers map[string]string) answer {
	r.t.Helper()
	resp, body := r.f.getWithHeaders(path, headers)
	return answer{req: resp.Request, status: resp.StatusCode, header: resp.Header, body: body,
		streamed: resp.ContentLength == -1 && slices.Contains(resp.TransferEncoding, "chunked")}
}

// validate checks an answer against the document (and its request, with
// checkRequest), notes its operation, and counts the operation's status as
// seen.
func (r *contractRun) validate(name string, a *answer, checkRequest bool) {
	r.t.Helper()
	op, err := r.c.check(*a, checkRequest)
	if err != nil {
		r.t.Errorf("%s: GET %.80s, %d: %v", name, a.req.URL.Path, a.status, err)
	}
	if r.seen[op] == nil {
		r.seen[op] = map[int]int{}
	}
	r.seen[op][a.status]++
	a.operation = op
}

// Every answer of every operation, each status each can give, for callers
// of every kind, on both index backends, is valid by the OpenAPI document,
// as kin-openapi's openapi3filter judges it: bodies (operation 3's long
// stream whole), headers and statuses.
func TestAnswersFollowTheOpenAPIDocument(t *testing.T) {
	c := openAPI(t)
	for _, backend := range fmtest.Backends(t) {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			testAnswersFollowTheDocument(t, c, backend)
		})
	}
}

func testAnswersFollowTheDocument(t *testing.T, c *contract, backend string) {
	dir := &faultyDirectory{}
	f := newFixtureWith(t, fixtureOptions{backend: backend, libraries: []fm.Library{bigLibrary},
		configureAuth: func(o *auth.Options, fake *googlefake.Server) {
			o.Microsoft = auth.Microsoft{JWKSURLs: []string{fake.MicrosoftJWKSURL(), fake.MicrosoftJWKSURLv2()},
				Tenants: []auth.Tenant{{ID: contractTenant, ApplicationIDs: []string{contractApp}}}}
			dir.Directory, o.Directory = o.Directory, dir
		}})
	writeTree(t, f.db, bigLibrary.ID, fm.LibraryState{RootID: "big", LastFullSync: syncedAt}, bigTree(400))
	run := &contractRun{t: t, f: f, c: c, seen: map[string]map[int]int{}}

	for _, ex := range everydayExchanges(f) {
		run.send(ex)
	}
	checkStreamed(t, run.send(exchange{"carol's access token, the big library", accessToken(f, "carol"), fmt.Sprintf(op3, "lib-big"), nil, 200}))
	unavailableExchanges(run)
	throttledExchanges(run)
	internalErrorExchanges(run, dir)

	for op, statuses := range c.statuses() {
		for _, status := range statuses {
			if run.seen[op][status] == 0 {
				t.Errorf("%s: no answer %d validated; every status the document names must be", op, status)
			}
		}
	}
}

// bearer is the Authorization of a Google ID token of user (a name of
// example.com, or an address).
func bearer(f *fixture, user string) string { return "Bearer " + f.token(email(user)) }

// accessToken is the Authorization of a Google access token of user.
func accessToken(f *fixture, user string) string {
	return "Bearer " + f.fake.GoogleAccessToken(clientID, email(user), time.Hour, "email")
}

// microsoft is the Authorization of a Microsoft ID token (version 1.0 or
// 2.0) of user.
func microsoft(f *fixture, version, user string) string {
	return "Bearer " + f.fake.MicrosoftIDToken(version, contractTenant, contractApp, email(user))
}

// everyOperation returns each operation's path, on folder (or library) IDs
// the caller may see or not, as the test likes.
func everyOperation(library, folder string) []string {
	return []string{op1, fmt.Sprintf(op2, library), fmt.Sprintf(op3, library), fmt.Sprintf(op4, folder),
		fmt.Sprintf(op5, folder), fmt.Sprintf(op6, folder)}
}

// everydayExchanges are requests of callers of every kind, answered 200,
// 400, 401, 403, 404 and 503 (a library never synced).
func everydayExchanges(f *fixture) []exchange {
	alice, bob, carol, pat := bearer(f, "alice"), bearer(f, "bob"), accessToken(f, "carol"), bearer(f, "pat@partner.org")
	msCarol, msBob := microsoft(f, "2.0", "carol"), microsoft(f, "1.0", "bob")
	admin, bobCodeQuery := "securityCode "+exampleAdminCode, "?securityCode="+bobCode
	exs := []exchange{
		{"carol's flags", carol, op1, nil, 200},
		{"alice's flags, some", alice, op1 + "?flags=theme&flags=beta&flags=unset&domain=example.com", nil, 200},
		{"the admin code's flags", admin, op1, nil, 200},
		{"a Microsoft caller's flags", msCarol, op1, nil, 200},
		{"alice's nested children", alice, fmt.Sprintf(op2, "lib-eng"), nil, 200},
		{"carol's direct children", carol, fmt.Sprintf(op2, "lib-eng") + "?onlyDirectChildren=true", nil, 200},
		{"bob's children of apollo", bob, fmt.Sprintf(op2, "lib-eng") + "?folderServiceId=apollo", nil, 200},
		{"pat's children of the root", pat, fmt.Sprintf(op2, "lib-eng"), nil, 200},
		{"the admin code's children of the shared drive", admin, fmt.Sprintf(op2, "lib-drive"), nil, 200},
		{"alice's whole library", alice, fmt.Sprintf(op3, "lib-eng"), nil, 200},
		{"pat's part of the library", pat, fmt.Sprintf(op3, "lib-eng"), nil, 200},
		{"bob's code in the query, his part", bob, fmt.Sprintf(op3, "lib-eng") + bobCodeQuery, nil, 200},
		{"a Microsoft caller's part", msBob, fmt.Sprintf(op3, "lib-drive"), nil, 200},
		{"permissions of every kind", alice, fmt.Sprintf(op4, "partner"), nil, 200},
		{"permissions by link", carol, fmt.Sprintf(op4, "zeus"), nil, 200},
		{"permissions of a shared drive's folder", admin, fmt.Sprintf(op4, "plans"), nil, 200},
		{"the admin code, with Drive's resource-key header", "", fmt.Sprintf(op4, "apollo") + "?securityCode=" + exampleAdminCode,
			map[string]string{"X-Goog-Drive-Resource-Keys": "apollo/rk-apollo"}, 200},
		{"bob's locked folder", bob, fmt.Sprintf(op5, "locked"), nil, 200},
		{"bob's shared drive root", bob, fmt.Sprintf(op5, "drive1"), nil, 200},
		{"carol's folder of the shared drive", msCarol, fmt.Sprintf(op5, "plans"), nil, 200},
		{"alice's apollo, which has a resource key", alice, fmt.Sprintf(op5, "apollo"), nil, 200},
		{"carol's children of zeus", carol, fmt.Sprintf(op6, "zeus"), nil, 200},
		{"carol's children of a root she may not see", carol, fmt.Sprintf(op6, "root") + "?onlyDirectChildren=true", nil, 200},
		{"bob's nested children of apollo", bob, fmt.Sprintf(op6, "apollo") + "?onlyDirectChildren=false&nameFilter=des", nil, 200},

		{"not a boolean", alice, fmt.Sprintf(op2, "lib-eng") + "?onlyDirectChildren=maybe", nil, 400},
		{"not a boolean", alice, fmt.Sprintf(op6, "root") + "?onlyDirectChildren=2", nil, 400},

		{"alice reads another domain's flags", alice, op1 + "?domain=other.org", nil, 403},
		{"pat's domain is not configured", pat, op1, nil, 404},
		{"an unknown library", alice, fmt.Sprintf(op2, "lib-nope"), nil, 404},
		{"a parent carol may not see", carol, fmt.Sprintf(op2, "lib-eng") + "?folderServiceId=secret", nil, 404},
		{"a library never synced, for an outsider", pat, fmt.Sprintf(op3, "lib-never"), nil, 404},
		{"a folder bob may not see", bob, fmt.Sprintf(op4, "secret"), nil, 404},
		{"an unknown folder", msCarol, fmt.Sprintf(op5, "nope"), nil, 404},
		{"the other domain's admin, a folder", "securityCode " + otherAdminCode, fmt.Sprintf(op5, "secret"), nil, 404},
		{"a folder bob may not see", bob, fmt.Sprintf(op6, "projects"), nil, 404},

		{"a library never synced", alice, fmt.Sprintf(op2, "lib-never"), nil, 503},
		{"a library never synced", admin, fmt.Sprintf(op3, "lib-never"), nil, 503},
	}
	for _, path := range everyOperation("lib-eng", "handbook") {
		long := path + "?nameFilter=" + strings.Repeat("x", 9<<10)
		exs = append(exs,
			exchange{"a query too long", alice, long, nil, 400},
			exchange{"no credentials", "", path, nil, 401},
			exchange{"a bad security code", "securityCode guess", path, nil, 403},
		)
	}
	return append(exs,
		exchange{"an expired token", "Bearer " + f.token("alice@example.com", googlefake.WithTTL(-time.Hour)), fmt.Sprintf(op4, "partner"), nil, 401},
		exchange{"a Microsoft token of another tenant", "Bearer " + f.fake.MicrosoftIDToken("2.0", "another-tenant", contractApp, "bob@example.com"), fmt.Sprintf(op5, "plans"), nil, 401},
		exchange{"a code naming another domain", "", fmt.Sprintf(op3, "lib-eng") + "?domain=other.org&securityCode=" + exampleAdminCode, nil, 403},
	)
}

// checkStreamed checks that an answer was streamed (chunked, longer than a
// chunk): the whole stream was validated.
func checkStreamed(t *testing.T, a answer) {
	t.Helper()
	if !a.streamed || len(a.body) < 128<<10 {
		t.Errorf("the big library's answer: %d bytes, streamed %t; want a stream of more than 128 KiB", len(a.body), a.streamed)
	}
}

// unavailableExchanges: every operation answers 503 while tokeninfo cannot
// be reached, to a new access token.
func unavailableExchanges(r *contractRun) {
	r.f.fake.SetTokeninfoDown(true)
	defer r.f.fake.SetTokeninfoDown(false)
	for _, path := range everyOperation("lib-eng", "handbook") {
		r.send(exchange{"tokeninfo down", accessToken(r.f, "carol"), path, nil, 503})
	}
}

// throttledExchanges: once an address sent too many bad security codes,
// every operation answers 429 to its security codes, valid ones too.
func throttledExchanges(r *contractRun) {
	for i := 0; ; i++ {
		a := r.get(op1, map[string]string{"Authorization": fmt.Sprintf("securityCode guess-%d", i)})
		if a.status == http.StatusTooManyRequests {
			r.validate("the guess that is throttled", &a, false)
			break
		}
		if a.status != http.StatusForbidden || i == 25 {
			r.t.Fatalf("guess %d: %d, want 403 until the address is throttled", i, a.status)
		}
	}
	for _, path := range everyOperation("lib-eng", "handbook") {
		r.send(exchange{"a valid code once throttled", "securityCode " + exampleAdminCode, path, nil, 429})
	}
}

// faultyDirectory is a directory whose lookups fail once it is broken, as
// those of a database that fails might.
type faultyDirectory struct {
	fm.Directory
	broken atomic.Bool
}

func (d *faultyDirectory) Lookup(ctx context.Context, email string) (fm.DirectoryEntry, error) {
	if d.broken.Load() {
		return fm.DirectoryEntry{}, errors.New("the directory cannot be read")
	}
	return d.Directory.Lookup(ctx, email)
}

// internalErrorExchanges: once the directory fails, every operation answers
// 500 to a caller that must be looked up in it.
func internalErrorExchanges(r *contractRun, dir *faultyDirectory) {
	dir.broken.Store(true)
	defer dir.broken.Store(false)
	for _, path := range everyOperation("lib-eng", "handbook") {
		r.send(exchange{"the directory failing", bearer(r.f, "alice"), path, nil, 500})
	}
}
