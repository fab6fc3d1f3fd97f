package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/index/bolt"
	"github.com/foldermirror/foldermirror/index/indextest"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/prometheus/client_golang/prometheus"
)

// keepingIndex is a bbolt index that counts the libraries it reads whole,
// and fails to save catalogs while failSaves.
type keepingIndex struct {
	*bolt.DB
	reads     int
	failSaves bool
}

func (k *keepingIndex) ReadLibrary(ctx context.Context, libraryID string, r fm.LibraryReader) (*fm.LibraryState, error) {
	k.reads++
	return k.DB.ReadLibrary(ctx, libraryID, r)
}

func (k *keepingIndex) SaveCatalog(ctx context.Context, libraryID string, parts [][]byte) error {
	if k.failSaves {
		return errors.New("disk full")
	}
	return k.DB.SaveCatalog(ctx, libraryID, parts)
}

// Warm has the index keep a large library's catalog, which a server
// starting next reads rather than the library; a failure to keep it is
// logged, and Warm still succeeds.
func TestWarmKeepsTheCatalog(t *testing.T) {
	ctx := context.Background()
	idx := &keepingIndex{DB: fmtest.OpenBolt(t, t.TempDir())}
	folders := []fm.SyncedFolder{{Folder: fm.Folder{ID: "root", Name: "Root"}}}
	for i := range 12_000 { // above the size from which catalogs are kept
		folders = append(folders, fm.SyncedFolder{Folder: fm.Folder{ID: fmt.Sprint("f", i), ParentID: fmt.Sprint("f", i/10-1), Name: fmt.Sprint("Folder ", i)}})
		if i < 10 {
			folders[len(folders)-1].ParentID = "root"
		}
	}
	indextest.FullSync(t, idx, "lib", fm.LibraryState{RootID: "root"}, 5000, folders...)
	var logs fmtest.LogBuffer
	newServer := func() *Server {
		return New(idx, aliceAuth{}, Options{Libraries: fm.NewLibrarySet([]fm.Library{{ID: "lib", Name: "Lib", Domain: "example.com", RootFolderID: "root"}}),
			Metrics: NewMetrics(prometheus.NewRegistry()), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	}
	idx.failSaves = true
	if err := newServer().Warm(ctx, "lib"); err != nil {
		t.Fatalf("Warm, the catalog not kept: %v", err)
	}
	if got := logs.Take(); !strings.Contains(got, "could not keep the library's catalog") || !strings.Contains(got, "disk full") {
		t.Fatalf("a catalog not kept is not logged: %q", got)
	}
	idx.failSaves = false
	for i, wantReads := range []int{2, 2, 2} {
		if err := newServer().Warm(ctx, "lib"); err != nil {
			t.Fatal(err)
		}
		if idx.reads != wantReads {
			t.Fatalf("server %d: the library read whole %d times, want %d", i+2, idx.reads, wantReads)
		}
	}
	err := idx.ReadCatalog(ctx, "lib", func(io.Reader, int64) error { return nil })
	if err != nil || logs.String() != "" {
		t.Fatalf("no catalog kept: %v; logs %q", err, logs.String())
	}
}
