package httpapi_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/httpapi"
	"github.com/foldermirror/foldermirror/httpapi/auth"
	"github.com/foldermirror/foldermirror/index/indextest"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/gin-gonic/gin"
)

// benchServer is an API over a library of n folders: a root, a folder
// "wide" with 1,000 children, one "drive" with as many (see below), and
// the rest in a tree of ten children each;
// every folder carries five permissions, every other child of wide a sixth.
func benchServer(b testing.TB, n int) (http.Handler, string) {
	b.Helper()
	fake := fmtest.StartGoogle(b)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	db := fmtest.OpenBolt(b, b.TempDir())
	perms := []fm.Permission{
		{ID: "1", Type: "user", Role: "owner", EmailAddress: "s@example.com", DisplayName: "Storage"},
		{ID: "2", Type: "domain", Role: "reader", Domain: "example.com", AllowFileDiscovery: true},
		{ID: "3", Type: "user", Role: "writer", EmailAddress: "w@example.com"},
		{ID: "4", Type: "group", Role: "reader", EmailAddress: "g@example.com"},
		{ID: "5", Type: "anyone", Role: "reader"},
	}
	batch := []fm.SyncedFolder{
		{Folder: fm.Folder{ID: "root", Name: "Big"}, Permissions: perms},
		{Folder: fm.Folder{ID: "wide", ParentID: "root", Name: "Wide"}, Permissions: perms},
	}
	// Every other child of wide shares it with the caller as a writer, as
	// the bench's world does: the children alternate between two lists.
	shared := append(slices.Clone(perms), fm.Permission{ID: "6", Type: "user", Role: "writer", EmailAddress: "reader@example.com"})
	for i := range 1000 {
		childPerms := perms
		if i%2 == 0 {
			childPerms = shared
		}
		batch = append(batch, fm.SyncedFolder{Folder: fm.Folder{ID: fmt.Sprintf("w%04d", i), ParentID: "wide", Name: fmt.Sprintf("Child %d", i), WritersCanShare: true}, Permissions: childPerms})
	}
	// "drive", a child of the root, has 1,000 children with IDs shaped as
	// Drive's (33 bytes), alternating as wide's do: the bench's op 6
	// answer, about 620 bytes a folder.
	batch = append(batch, fm.SyncedFolder{Folder: fm.Folder{ID: driveID("drive"), ParentID: "root", Name: "Drive"}, Permissions: perms})
	for i := range 1000 {
		childPerms := perms
		if i%2 == 0 {
			childPerms = shared
		}
		batch = append(batch, fm.SyncedFolder{Folder: fm.Folder{ID: driveID(fmt.Sprintf("d%04d", i)), ParentID: driveID("drive"), Name: fmt.Sprintf("Child %04d", i), WritersCanShare: true}, Permissions: childPerms})
	}
	for i := range n - len(batch) {
		parent := "root"
		if i >= 10 {
			parent = fmt.Sprintf("f%d", i/10-1)
		}
		batch = append(batch, fm.SyncedFolder{Folder: fm.Folder{ID: fmt.Sprintf("f%d", i), ParentID: parent, Name: fmt.Sprintf("Folder %d", i)}, Permissions: perms})
	}
	indextest.FullSync(b, db, "big", fm.LibraryState{RootID: "root"}, 5000, batch...)
	authOpts := fmtest.AuthOptions(fake)
	authOpts.Domains = []auth.Domain{{Name: "example.com", Users: []string{"reader@example.com"}}}
	authn := auth.New(authOpts)
	b.Cleanup(authn.Close)
	api := httpapi.New(db, authn, httpapi.Options{
		Libraries:               fm.NewLibrarySet([]fm.Library{{ID: "big", Name: "Big", Domain: "example.com", StorageAccount: "s@example.com", RootFolderID: "root"}}),
		Domains:                 []httpapi.Domain{{Name: "example.com"}},
		CallerRequestsPerSecond: 1e9, // the requests measured, not the budget
		CallerBurst:             1e9,
		Logger:                  logger,
	})
	return api.Handler(), fake.GoogleIDToken(clientID, "reader@example.com")
}

// driveID returns an ID shaped as Drive's: 33 bytes, name padded.
func driveID(name string) string {
	return "1" + name + strings.Repeat("x", 32-len(name))
}

// BenchmarkAPI measures the handlers' own cost (no network) beside a bare
// Gin handler writing the same bytes, each answer written to a
// discardingWriter.
func BenchmarkAPI(b *testing.B) {
	h, token := benchServer(b, 100_000)
	for _, tc := range []struct{ name, path string }{
		{"children1000", "/folder/v1/files/wide/children?onlyDirectChildren=true"},
		{"children1000drive", "/folder/v1/files/" + driveID("drive") + "/children?onlyDirectChildren=true"},
		{"permissions", "/folder/v1/folders/w0500/permissions"},
		{"folder", "/folder/v1/files/w0500"},
	} {
		path := tc.path
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
		}
		body := rec.Body.Bytes()
		bare := gin.New()
		bare.GET("/*any", func(c *gin.Context) { c.Data(200, "application/json; charset=utf-8", body) })
		for name, handler := range map[string]http.Handler{"foldermirror": h, "bare": bare} {
			b.Run(tc.name+"/"+name, func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				w := &discardingWriter{}
				for b.Loop() {
					w.reset()
					handler.ServeHTTP(w, req)
					if w.status != http.StatusOK || w.written != len(body) {
						b.Fatalf("%s: status %d, %d bytes; want 200, %d bytes", path, w.status, w.written, len(body))
					}
				}
			})
		}
	}
}

// discardingWriter is a ResponseWriter that keeps the status and counts
// the bytes of an answer, and drops them, so that a benchmark measures the
// handler rather than a recorder's buffer.
type discardingWriter struct {
	header  http.Header
	status  int
	written int
}

// reset readies the writer for the next answer.
func (w *discardingWriter) reset() {
	if w.header == nil {
		w.header = http.Header{}
	}
	clear(w.header)
	w.status, w.written = 0, 0
}

func (w *discardingWriter) Header() http.Header { return w.header }

func (w *discardingWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *discardingWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.written += len(p)
	return len(p), nil
}

// manyLibrariesServer is an API over n small libraries of example.com,
// each a root ("r00042") and four folders under it ("f00042-0"...), shared
// with reader@example.com; every catalog is made before it returns.
func manyLibrariesServer(b testing.TB, n int) (http.Handler, string) {
	b.Helper()
	fake := fmtest.StartGoogle(b)
	db := fmtest.OpenBolt(b, b.TempDir())
	perms := []fm.Permission{
		{ID: "1", Type: "user", Role: "owner", EmailAddress: "s@example.com"},
		{ID: "2", Type: "user", Role: "reader", EmailAddress: "reader@example.com"},
	}
	libs := make([]fm.Library, n)
	for i := range n {
		id, root := fmt.Sprintf("lib%05d", i), fmt.Sprintf("r%05d", i)
		libs[i] = fm.Library{ID: id, Name: id, Domain: "example.com", StorageAccount: "s@example.com", RootFolderID: root}
		batch := []fm.SyncedFolder{{Folder: fm.Folder{ID: root, Name: "Root"}, Permissions: perms}}
		for j := range 4 {
			batch = append(batch, fm.SyncedFolder{Folder: fm.Folder{ID: fmt.Sprintf("f%05d-%d", i, j), ParentID: root, Name: fmt.Sprintf("Folder %d", j)}, Permissions: perms})
		}
		indextest.FullSync(b, db, id, fm.LibraryState{RootID: root}, 5000, batch...)
	}
	authOpts := fmtest.AuthOptions(fake)
	authOpts.Domains = []auth.Domain{{Name: "example.com", Users: []string{"reader@example.com"}}}
	authn := auth.New(authOpts)
	b.Cleanup(authn.Close)
	api := httpapi.New(db, authn, httpapi.Options{
		Libraries:               fm.NewLibrarySet(libs),
		Domains:                 []httpapi.Domain{{Name: "example.com"}},
		CallerRequestsPerSecond: 1e9, // the requests measured, not the budget
		CallerBurst:             1e9,
		Logger:                  slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	for _, l := range libs {
		if err := api.Warm(context.Background(), l.ID); err != nil {
			b.Fatal(err)
		}
	}
	return api.Handler(), fake.GoogleIDToken(clientID, "reader@example.com")
}

// BenchmarkManyLibraries measures requests naming a folder by its ID among
// 10,000 libraries: finding its library must not cost a look at each.
func BenchmarkManyLibraries(b *testing.B) {
	h, token := manyLibrariesServer(b, 10_000)
	for _, tc := range []struct{ name, path string }{
		{"folder", "/folder/v1/files/f05000-2"},
		{"children", "/folder/v1/files/f05000-2/children"},
		{"rootChildren", "/folder/v1/files/r05000/children"},
	} {
		req := httptest.NewRequest(http.MethodGet, tc.path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: %d %s", tc.path, rec.Code, rec.Body)
				}
			}
		})
	}
}
