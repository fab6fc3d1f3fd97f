package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	fm "github.com/foldermirror/foldermirror"
)

// opsDrive is a shared drive of example.com found by discovery (DESIGN
// §10), not configured.
var opsDrive = fm.Library{ID: "0Aops", Name: "Ops", Domain: "example.com", StorageAccount: "storage@example.com", SharedDriveID: "0Aops"}

// syncOps writes opsDrive's tree, alice a writer of the drive:
//
//	0Aops Ops
//	└── runbooks Runbooks
//	    └── oncall On call
func (f *fixture) syncOps() {
	f.t.Helper()
	alice := fm.Permission{ID: "m-alice", Type: "user", Role: "writer", EmailAddress: "alice@example.com"}
	writeTree(f.t, f.db, opsDrive.ID, fm.LibraryState{RootID: "0Aops", DriveID: "0Aops", LastFullSync: syncedAt},
		[]fm.SyncedFolder{sf("0Aops", "", "Ops", alice), sf("runbooks", "0Aops", "Runbooks", alice), sf("oncall", "runbooks", "On call", alice)})
}

// opsPaths are operations 2 to 6 on opsDrive, each with the ID its path
// names.
var opsPaths = []struct{ path, id string }{
	{"/folder/v1/libraries/0Aops/folders/children", "0Aops"},
	{"/folder/v1/libraries/0Aops/folders", "0Aops"},
	{"/folder/v1/folders/runbooks/permissions", "runbooks"},
	{"/folder/v1/files/runbooks", "runbooks"},
	{"/folder/v1/files/runbooks/children", "runbooks"},
	{"/folder/v1/files/0Aops/children", "0Aops"}, // the library's root
}

// libraryOf is what a folder answer says of its library.
type libraryOf struct {
	ID   string `json:"libraryId"`
	Name string `json:"libraryName"`
}

// folderLibrary returns the library operation 5 shows a folder in.
func (f *fixture) folderLibrary(id, token string) libraryOf {
	f.t.Helper()
	resp, body := f.get("/folder/v1/files/"+id, token)
	var lib libraryOf
	if err := json.Unmarshal(body, &lib); resp.StatusCode != http.StatusOK || err != nil {
		f.t.Fatalf("folder %s: %d %s", id, resp.StatusCode, body)
	}
	return lib
}

// childrenLibraries returns the libraries operation 6 shows a folder's
// direct children in.
func (f *fixture) childrenLibraries(id, token string) []libraryOf {
	f.t.Helper()
	resp, body := f.get("/folder/v1/files/"+id+"/children?onlyDirectChildren=true", token)
	var list struct{ Items []libraryOf }
	if err := json.Unmarshal(body, &list); resp.StatusCode != http.StatusOK || err != nil {
		f.t.Fatalf("children of %s: %d %s", id, resp.StatusCode, body)
	}
	return list.Items
}

// A library the set gains while the API serves is served once synced: when
// synced before any request looked at it, at once; when a request found it
// not synced yet, once warmed, as the daemon does after each sync.
func TestAddedLibraryServed(t *testing.T) {
	for _, askedEarly := range []bool{false, true} {
		name := map[bool]string{false: "synced, then asked", true: "asked, then synced and warmed"}[askedEarly]
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			alice := f.token("alice@example.com")
			if resp, _ := f.get("/folder/v1/libraries/0Aops/folders", alice); resp.StatusCode != http.StatusNotFound {
				t.Fatalf("before discovery: %d, want 404", resp.StatusCode)
			}
			f.set.SetDiscovered("example.com", []fm.Library{opsDrive})
			if askedEarly {
				if resp, body := f.get("/folder/v1/libraries/0Aops/folders", alice); resp.StatusCode != http.StatusServiceUnavailable {
					t.Fatalf("found, not synced: %d %s, want 503", resp.StatusCode, body)
				}
				if resp, _ := f.get("/folder/v1/files/runbooks", alice); resp.StatusCode != http.StatusNotFound {
					t.Fatalf("a folder of it, not synced: %d, want 404", resp.StatusCode)
				}
			}
			f.syncOps()
			if askedEarly {
				if err := f.api.Warm(context.Background(), opsDrive.ID); err != nil {
					t.Fatal(err)
				}
			}
			for _, p := range opsPaths {
				if resp, body := f.get(p.path, alice); resp.StatusCode != http.StatusOK {
					t.Errorf("%s: %d %s", p.path, resp.StatusCode, body)
				}
			}
			if got, want := f.folderLibrary("oncall", alice), (libraryOf{"0Aops", "Ops"}); got != want {
				t.Errorf("oncall shown in %+v, want %+v", got, want)
			}
		})
	}
}

// A library the set drops answers 404 in every operation at once, as an
// unknown ID does, though its rows are still in the index and its catalog
// in memory; and the other libraries are served as before.
func TestRemovedLibraryNotFound(t *testing.T) {
	f := newFixture(t)
	f.set.SetDiscovered("example.com", []fm.Library{opsDrive})
	f.syncOps()
	callers := map[string]string{"alice": "Bearer " + f.token("alice@example.com"), "admin code": "securityCode " + exampleAdminCode}
	for who, authz := range callers {
		for _, p := range opsPaths {
			if resp, body := f.getWith(p.path, authz); resp.StatusCode != http.StatusOK {
				t.Fatalf("%s, %s, before: %d %s", who, p.path, resp.StatusCode, body)
			}
		}
	}
	f.set.SetDiscovered("example.com", nil)
	if _, err := f.db.Library(context.Background(), opsDrive.ID); err != nil {
		t.Fatalf("the test means the rows to stay in the index: %v", err)
	}
	for who, authz := range callers {
		for _, p := range opsPaths {
			resp, body := f.getWith(p.path, authz)
			_, unknown := f.getWith(strings.Replace(p.path, p.id, "unknown-id", 1), authz)
			if want := strings.ReplaceAll(string(unknown), "unknown-id", p.id); resp.StatusCode != http.StatusNotFound || string(body) != want {
				t.Errorf("%s, %s, removed: %d %s\nwant 404 %s", who, p.path, resp.StatusCode, body, want)
			}
		}
		if resp, body := f.getWith("/folder/v1/files/apollo", authz); resp.StatusCode != http.StatusOK {
			t.Errorf("%s: a configured library's folder: %d %s", who, resp.StatusCode, body)
		}
	}
}

// A renamed library's folders show its new name, and a request holding an
// ETag of an answer made before the rename gets the whole answer again;
// another library's ETags hold.
func TestRenamedLibraryFollowed(t *testing.T) {
	f := newFixture(t)
	f.set.SetDiscovered("example.com", []fm.Library{opsDrive})
	f.syncOps()
	alice := f.token("alice@example.com")
	tags := map[string]string{}
	for _, p := range opsPaths {
		resp, body := f.get(p.path, alice)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("ETag") == "" {
			t.Fatalf("%s: %d, ETag %q: %s", p.path, resp.StatusCode, resp.Header.Get("ETag"), body)
		}
		tags[p.path] = resp.Header.Get("ETag")
	}
	engTag := f.conditional("/folder/v1/files/apollo", alice, "").Header.Get("ETag")

	renamed := opsDrive
	renamed.Name = "Operations"
	f.set.SetDiscovered("example.com", []fm.Library{renamed})
	if got, want := f.folderLibrary("runbooks", alice), (libraryOf{"0Aops", "Operations"}); got != want {
		t.Errorf("after the rename, runbooks shown in %+v, want %+v", got, want)
	}
	for _, lib := range f.childrenLibraries("0Aops", alice) {
		if lib.Name != "Operations" {
			t.Errorf("after the rename, the root's children show %+v", lib)
		}
	}
	for _, p := range opsPaths {
		if resp := f.conditional(p.path, alice, tags[p.path]); resp.StatusCode != http.StatusOK {
			t.Errorf("%s with an ETag from before the rename: %d, want 200", p.path, resp.StatusCode)
		}
	}
	if resp := f.conditional("/folder/v1/files/apollo", alice, engTag); resp.StatusCode != http.StatusNotModified {
		t.Errorf("another library's folder with its ETag: %d, want 304", resp.StatusCode)
	}
}

// Libraries may hold the same folders: one rooted at a folder of another.
// A folder is shown in the first library by ID that holds it, and
// operation 6 of a library's root answers that library's children; once
// the inner library is dropped, the outer one answers for its folders.
func TestNestedLibraries(t *testing.T) {
	f := newFixture(t)
	inner := fm.Library{ID: "lib-projects", Name: "Projects", Domain: "example.com", StorageAccount: "storage@example.com", RootFolderID: "projects"}
	var tree []fm.SyncedFolder
	for _, sub := range engineeringTree() {
		if sub.ID == "projects" {
			sub.ParentID = ""
		}
		if sub.ID == "projects" || sub.ParentID == "projects" || sub.ParentID == "apollo" || sub.ParentID == "zeus" {
			tree = append(tree, sub)
		}
	}
	writeTree(t, f.db, inner.ID, fm.LibraryState{RootID: "projects", LastFullSync: syncedAt}, tree)
	f.set.SetDiscovered("example.com", []fm.Library{inner})
	alice := f.token("alice@example.com")

	if got := f.folderLibrary("apollo", alice).ID; got != "lib-eng" {
		t.Errorf("apollo, in both libraries, shown in %s, want lib-eng (the first by ID)", got)
	}
	if got := f.folderLibrary("projects", alice); got.ID != "lib-eng" {
		t.Errorf("projects, the inner library's root, shown in %+v, want lib-eng", got)
	}
	kids := f.childrenLibraries("projects", alice)
	if len(kids) == 0 || kids[0].ID != "lib-projects" {
		t.Errorf("operation 6 of the inner library's root answers %+v, want lib-projects' children", kids)
	}

	f.set.SetDiscovered("example.com", nil)
	kids = f.childrenLibraries("projects", alice)
	if len(kids) == 0 || kids[0].ID != "lib-eng" {
		t.Errorf("once lib-projects is dropped, operation 6 of projects answers %+v, want lib-eng's children", kids)
	}
	if got := f.folderLibrary("designs", alice).ID; got != "lib-eng" {
		t.Errorf("designs shown in %s, want lib-eng", got)
	}
}

// A library that moves to another domain (dropped by one domain's
// discovery, found by the other's) shows its permissions as that domain
// sees them: an answer of operation 4 kept for the first is not served for
// the second.
func TestLibraryMovedToAnotherDomain(t *testing.T) {
	f := newFixture(t)
	f.set.SetDiscovered("example.com", []fm.Library{opsDrive})
	f.syncOps()
	const perms = "/folder/v1/folders/runbooks/permissions"
	belongs := func(authz string) bool {
		t.Helper()
		resp, body := f.getWith(perms, authz)
		var answer struct {
			StoragePermissions []struct {
				BelongsToDomain bool `json:"belongsToDomain"`
			} `json:"storagePermissions"`
		}
		if err := json.Unmarshal(body, &answer); resp.StatusCode != http.StatusOK || err != nil || len(answer.StoragePermissions) != 1 {
			t.Fatalf("%s: %d %s", perms, resp.StatusCode, body)
		}
		return answer.StoragePermissions[0].BelongsToDomain
	}
	if !belongs("securityCode " + exampleAdminCode) {
		t.Error("in example.com, alice's permission does not belong to the domain")
	}
	moved := opsDrive
	moved.Domain = "other.org"
	f.set.SetDiscovered("example.com", nil)
	f.set.SetDiscovered("other.org", []fm.Library{moved})
	if belongs("securityCode " + otherAdminCode) {
		t.Error("in other.org, alice@example.com's permission belongs to the domain")
	}
}
