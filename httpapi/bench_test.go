package httpapi_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/httpapi"
	"github.com/foldermirror/foldermirror/httpapi/auth"
	"github.com/foldermirror/foldermirror/index/indextest"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/gin-gonic/gin"
)

// benchServer is an API over a library of n folders: a root, a folder
// "wide" with 1,000 children, and the rest in a tree of ten children each;
// every folder carries five permissions.
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
	for i := range 1000 {
		batch = append(batch, fm.SyncedFolder{Folder: fm.Folder{ID: fmt.Sprintf("w%04d", i), ParentID: "wide", Name: fmt.Sprintf("Child %d", i), WritersCanShare: true}, Permissions: perms})
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
		CallerRequestsPerSecond: defaultRate,
		CallerBurst:             defaultBurst,
		Logger:                  logger,
	})
	return api.Handler(), fake.GoogleIDToken(clientID, "reader@example.com")
}

// BenchmarkAPI measures the handlers' own cost (no network) beside a bare
// Gin handler writing the same bytes.
func BenchmarkAPI(b *testing.B) {
	h, token := benchServer(b, 100_000)
	for _, tc := range []struct{ name, path string }{
		{"children1000", "/folder/v1/files/wide/children?onlyDirectChildren=true"},
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
				for b.Loop() {
					rec := httptest.NewRecorder()
					handler.ServeHTTP(rec, req)
				}
			})
		}
	}
}
