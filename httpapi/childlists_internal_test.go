package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"unsafe"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/httpapi/auth"
	"github.com/foldermirror/foldermirror/httpapi/catalog"
	"github.com/foldermirror/foldermirror/index/bolt"
	"github.com/foldermirror/foldermirror/index/indextest"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/prometheus/client_golang/prometheus"
)

// listAuth authenticates "Bearer NAME" as NAME@example.com, and "Bearer
// admin" as example.com's admin security code.
type listAuth struct{}

func (listAuth) Authenticate(r *http.Request) (*auth.Identity, error) {
	name, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	switch {
	case !ok:
		return nil, fm.Errorf(fm.ENOCREDENTIALS, "Login Required.")
	case name == "admin":
		return &auth.Identity{Domain: "example.com", OrgDomain: "example.com", Method: auth.MethodSecurityCode,
			CodeDomain: "example.com", Admin: true}, nil
	}
	return &auth.Identity{Email: name + "@example.com", Domain: "example.com", OrgDomain: "example.com", Method: auth.MethodGoogleIDToken}, nil
}

// listCallers are the callers of the child list tests: each sees the
// children of listWorld with its own roles, some none.
var listCallers = []string{"alice", "bob", "carol", "dave", "admin"}

// listPermissions are the permission lists the children of listWorld take
// in turn: a writer, readers, a domain that may find them, a link alone
// (the folder is not listed), an organizer, an owner.
var listPermissions = [][]fm.Permission{
	{{ID: "a", Type: "user", Role: "writer", EmailAddress: "alice@example.com"}},
	{{ID: "a", Type: "user", Role: "reader", EmailAddress: "alice@example.com"}, {ID: "b", Type: "user", Role: "writer", EmailAddress: "bob@example.com"}},
	{{ID: "d", Type: "domain", Role: "reader", Domain: "example.com", AllowFileDiscovery: true}},
	{{ID: "l", Type: "anyone", Role: "writer"}},
	{{ID: "b", Type: "user", Role: "fileOrganizer", EmailAddress: "bob@example.com"}, {ID: "c", Type: "user", Role: "commenter", EmailAddress: "carol@example.com"}},
	{{ID: "c", Type: "user", Role: "owner", EmailAddress: "carol@example.com"}},
}

// listChild returns child i of parent in listWorld: IDs and names that
// need escaping or not, some with a resource key or a definition of their
// own, restricted or not, shared in turn as listPermissions are.
func listChild(parent string, i int) fm.SyncedFolder {
	f := fm.Folder{ID: fmt.Sprintf("%s-%03d", parent, i), ParentID: parent, Name: fmt.Sprintf("Child %03d", i),
		RestrictedDownload: i%3 == 0, WritersCanShare: i%4 < 2}
	switch i % 11 {
	case 1:
		f.ID += `"q`
	case 2:
		f.ID += "\u2028"
	case 3:
		f.Name += ` "quoted" \ é`
	case 4:
		f.Name += "\t\x01"
	}
	if i%7 == 0 {
		f.ResourceKey = fmt.Sprintf(`0-key"%d`, i)
	}
	if i%5 == 0 {
		f.DefinitionID = fmt.Sprintf(`def"%d`, i%2)
	}
	return fm.SyncedFolder{Folder: f, Permissions: listPermissions[i%len(listPermissions)]}
}

// listWorld is a library whose root and two folders under it, one with an
// ID that needs escaping, have 100 children each (enough to be listed by
// a childList), and one folder a few.
func listWorld(t *testing.T) *bolt.DB {
	t.Helper()
	db := fmtest.OpenBolt(t, t.TempDir())
	domain := []fm.Permission{{ID: "d", Type: "domain", Role: "reader", Domain: "example.com", AllowFileDiscovery: true}}
	folders := []fm.SyncedFolder{{Folder: fm.Folder{ID: "root", Name: "Root"}, Permissions: listPermissions[1]}}
	for _, p := range []string{"plain", `es"caped`, "few"} {
		folders = append(folders, fm.SyncedFolder{Folder: fm.Folder{ID: p, ParentID: "root", Name: p}, Permissions: domain})
	}
	for i := range 97 {
		folders = append(folders, listChild("root", i))
	}
	for i := range 100 {
		folders = append(folders, listChild("plain", i), listChild(`es"caped`, i))
	}
	for i := range 5 {
		folders = append(folders, listChild("few", i))
	}
	indextest.FullSync(t, db, "lib", fm.LibraryState{RootID: "root"}, 5000, folders...)
	return db
}

// listLibrary is listWorld's library, named name.
func listLibrary(name string) []fm.Library {
	return []fm.Library{{ID: "lib", Name: name, Domain: "example.com", RootFolderID: "root", FolderDefinitionID: "std"}}
}

// newListServer serves listWorld's library from db, keeping child lists
// of up to maxBytes in all (0: none). The library is a discovered one, so
// that a test can rename it (see listLibrary).
func newListServer(db fm.IndexReader, maxBytes int) *Server {
	set := fm.NewLibrarySet(nil)
	set.SetDiscovered("example.com", listLibrary(`The "lib"`))
	s := New(db, listAuth{}, Options{
		Libraries:               set,
		Domains:                 []Domain{{Name: "example.com"}},
		CallerRequestsPerSecond: 1e6, CallerBurst: 1e6,
		Logger: slog.New(slog.DiscardHandler), Metrics: NewMetrics(prometheus.NewRegistry()),
	})
	s.childLists = newChildLists(maxBytes)
	return s
}

// listPaths are the listings of direct children of listWorld: operation 6
// on each parent and on the root, operation 2 without a parent and with
// one; and listings that write their children without a list (nested, or
// filtered by name).
func listPaths() []string {
	var paths []string
	for _, p := range []string{"root", "plain", `es"caped`, "few"} {
		paths = append(paths, "/folder/v1/files/"+url.PathEscape(p)+"/children?onlyDirectChildren=true",
			"/folder/v1/libraries/lib/folders/children?onlyDirectChildren=true&folderServiceId="+url.QueryEscape(p))
	}
	return append(paths, "/folder/v1/libraries/lib/folders/children?onlyDirectChildren=true",
		"/folder/v1/files/plain/children",
		"/folder/v1/files/plain/children?onlyDirectChildren=true&nameFilter=child%200")
}

// answer returns the status and body of a GET of path by caller.
func answer(t *testing.T, s *Server, path, caller string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Header.Set("Authorization", "Bearer "+caller)
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, req)
	return w.Code, w.Body.String()
}

// compareListings checks that every listing of listPaths, for every
// caller, is the same byte for byte from with as from without, asked
// twice of with (a list made, then one kept).
func compareListings(t *testing.T, with, without *Server) {
	t.Helper()
	for _, path := range listPaths() {
		for _, caller := range listCallers {
			code, want := answer(t, without, path, caller)
			for try := range 2 {
				if gotCode, got := answer(t, with, path, caller); gotCode != code || got != want {
					t.Fatalf("%s by %s (try %d): %d\n%s\nwithout child lists: %d\n%s", path, caller, try, gotCode, got, code, want)
				}
			}
		}
	}
}

// A listing written from a child list is byte for byte the one written
// without, whatever the caller, the children's IDs, names, keys,
// definitions, flags and permissions, before and after changes to the
// library.
func TestChildListsAnswerAsWithout(t *testing.T) {
	db := listWorld(t)
	with, without := newListServer(db, childListsBytes), newListServer(db, 0)
	compareListings(t, with, without)
	if n := len(with.childLists.lists.cur) + len(with.childLists.lists.old); n != 3 {
		t.Fatalf("%d child lists kept, want 3 (the root's, plain's, es\"caped's)", n)
	}
	if code, body := answer(t, with, "/folder/v1/files/plain/children?onlyDirectChildren=true", "carol"); code != http.StatusOK || !strings.Contains(body, `"resourceKey":"0-key\"14"`) {
		t.Fatalf("carol's listing of plain: %d, no resource key of plain-014:\n%s", code, body)
	}

	_, before := answer(t, with, "/folder/v1/files/plain/children?onlyDirectChildren=true", "alice")
	// Changes: a child renamed (moving it among its siblings), one
	// reshared, one removed, one added, one moved from a parent to another.
	err := db.UpdateLibrary(context.Background(), "lib", fm.Fence{}, func(tx fm.LibraryTx) error {
		renamed := listChild("plain", 18)
		renamed.Name = "Zzz renamed"
		reshared := listChild("plain", 11)
		reshared.Permissions = listPermissions[0]
		moved := listChild(`es"caped`, 20)
		moved.ParentID = "plain"
		added := listChild("plain", 200)
		added.ResourceKey = "new-key"
		for _, f := range []fm.SyncedFolder{renamed, reshared, moved, added} {
			if err := tx.Put(f); err != nil {
				return err
			}
		}
		return tx.Delete(listChild("plain", 24).ID)
	})
	if err != nil {
		t.Fatal(err)
	}
	compareListings(t, with, without)
	if _, after := answer(t, with, "/folder/v1/files/plain/children?onlyDirectChildren=true", "alice"); after == before ||
		!strings.Contains(after, "Zzz renamed") || strings.Contains(after, `"plain-024`) {
		t.Fatalf("alice's listing of plain after the changes did not change so (a child renamed, one removed):\n%.2000s", after)
	}

	// The library renamed: its folders show its new name.
	for _, s := range []*Server{with, without} {
		s.libs.set.SetDiscovered("example.com", listLibrary("Renamed"))
	}
	compareListings(t, with, without)
	if _, body := answer(t, with, "/folder/v1/files/plain/children?onlyDirectChildren=true", "alice"); !strings.Contains(body, `"libraryName":"Renamed"`) {
		t.Fatalf("alice's listing of plain after the library was renamed:\n%.2000s", body)
	}
}

// The child lists kept stay within their bound however many parents are
// listed, a parent whose list would be longer than the bound allows is
// listed without one, and a request finding another list being made writes
// its listing without one.
func TestChildListsBounded(t *testing.T) {
	db := listWorld(t)
	without := newListServer(db, 0)
	// Room for about one list: listing the three parents in turn keeps
	// dropping the older ones.
	one := newListServer(db, 3*(100*160))
	for range 3 {
		compareListings(t, one, without)
		kept := 0
		for _, m := range []map[childListKey]*childList{one.childLists.lists.cur, one.childLists.lists.old} {
			for k, cl := range m {
				if cl != nil {
					kept += cl.bytes() + 64 + len(k.parent)
				}
			}
		}
		if kept > one.childLists.maxBytes {
			t.Fatalf("%d bytes of child lists kept, over the bound of %d", kept, one.childLists.maxBytes)
		}
	}
	// Too little room for any list.
	small := newListServer(db, 4<<10)
	compareListings(t, small, without)
	for k, cl := range small.childLists.lists.cur {
		if cl != nil {
			t.Fatalf("a list of %q kept (%d bytes), over the bound", k.parent, cl.bytes())
		}
	}
	// Another list being made.
	busy := newListServer(db, childListsBytes)
	busy.childLists.making.Store(true)
	compareListings(t, busy, without)
	if n := len(busy.childLists.lists.cur); n != 0 {
		t.Fatalf("%d lists made while another was", n)
	}
}

// A list holds about what bytes says it holds, and none of its catalog's
// memory: the strings a catalog.View returns are the catalog's, and a list
// kept must not keep a past revision's catalog from being collected.
func TestChildListMemory(t *testing.T) {
	s := newListServer(listWorld(t), childListsBytes)
	if code, _ := answer(t, s, "/folder/v1/files/plain/children?onlyDirectChildren=true", "alice"); code != http.StatusOK {
		t.Fatal(code)
	}
	_, st, _ := s.libs.get("lib")
	lib := st.catalog.Current()
	if len(s.childLists.lists.cur) != 1 {
		t.Fatalf("%d lists kept, want 1", len(s.childLists.lists.cur))
	}
	for k, cl := range s.childLists.lists.cur {
		var fields bytes.Buffer
		start := uint32(0)
		for _, end := range cl.ends {
			fields.Write(cl.fields[start:end])
			start = end
		}
		if n := cl.bytes(); n < fields.Len()+5*len(cl.ends) || n > 2*(fields.Len()+5*len(cl.ends))+4096 {
			t.Errorf("a list of %d children, %d bytes of fields, says it holds %d bytes", len(cl.ends), fields.Len(), n)
		}
		parent, _ := lib.Lookup("plain")
		shares := func(what, kept, catalog string) {
			if unsafe.StringData(kept) == unsafe.StringData(catalog) {
				t.Errorf("%s %q is the catalog's memory", what, kept)
			}
		}
		shares("the key's parent", k.parent, lib.View(parent).ID)
		shares("the list's parent", cl.parent, lib.View(parent).ID)
		i := 0
		lib.Children(parent, func(r catalog.Ref) bool {
			if v := lib.View(r); v.ResourceKey != "" {
				shares("a resource key", cl.keys[i], v.ResourceKey)
			}
			i++
			return true
		})
		if i != len(cl.ends) || cl.keys == nil {
			t.Fatalf("a list of %d children (resource keys %v), plain has %d", len(cl.ends), cl.keys != nil, i)
		}
	}
}

// Requests listing children at once, while the library changes, share the
// lists kept and the one being made; each answer is whole.
func TestChildListsConcurrent(t *testing.T) {
	db := listWorld(t)
	s := newListServer(db, childListsBytes)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 30 {
				path := listPaths()[(g+i)%6]
				code, body := answer(t, s, path, listCallers[(g+i)%len(listCallers)])
				if code != http.StatusOK && code != http.StatusNotFound || !json.Valid([]byte(body)) {
					t.Errorf("%s: %d\n%.500s", path, code, body)
					return
				}
			}
		})
	}
	for i := range 5 {
		err := db.UpdateLibrary(context.Background(), "lib", fm.Fence{}, func(tx fm.LibraryTx) error {
			f := listChild("plain", 300+i)
			return tx.Put(f)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
}
