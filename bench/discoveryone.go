package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/foldermirror/foldermirror/internal/googlefake"
)

// oneLibraryID is the library holding the drives' folders in one.
const oneLibraryID = "one-library"

// oneLibraryMemory builds, in a fake of its own, the folders of the
// drives world in one library: a shared drive holding, for each of drives
// drives, a folder with that drive's folders under it; syncs it (no
// latency: not a figure), serves it and returns its RSS once idle, read as
// the discovered drives' is.
func (e *env) oneLibraryMemory(ctx context.Context, drives int, t *table) (*memory, error) {
	fake := googlefake.New()
	fake.Start()
	dir := filepath.Join(e.dir, "one-library")
	defer func() {
		fake.Close()
		_ = os.RemoveAll(dir)
		runtime.GC()
		debug.FreeOSMemory()
	}()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	w, err := newWorld(fake, dir)
	if err != nil {
		return nil, err
	}
	log.Printf("building one library of the folders of %s shared drives", thousands(float64(drives)))
	start := time.Now()
	id := fake.CreateSharedDrive("One library", storageAccount)
	fake.Share(id, googlefake.Permission{Type: "group", Role: "reader", EmailAddress: staffGroup, DisplayName: "Staff"})
	for i := range drives {
		top := fake.CreateFolder(storageAccount, id, fmt.Sprintf("Drive %05d", i+1))
		if _, err := growLevels(ctx, top, discFolders, discDepth, func(parent string, level, i int) string {
			return fake.CreateFolder(storageAccount, parent, folderName(level, i))
		}); err != nil {
			return nil, err
		}
	}
	w.spreadTimes()
	log.Printf("  built in %s", since(start))
	lib := library{ID: oneLibraryID, Name: "One library", SharedDriveID: id, Folders: drives*(discFolders+1) + 1}
	cfg, err := w.writeConfig(dir, "one", []library{lib})
	if err != nil {
		return nil, err
	}
	h := &hosted{env: e, fake: fake, world: w}
	if _, err := h.runSync(ctx, 0, cfg, lib.ID, true, ""); err != nil {
		return nil, err
	}
	d, readyIn, err := e.startReady(ctx, filepath.Join(dir, "serve-one-library.log"), cfg, w.adminListen, 0)
	if err != nil {
		return nil, err
	}
	defer d.stop(15 * time.Second)
	m, err := idleMemory(ctx, d)
	if err != nil {
		return nil, err
	}
	log.Printf("  one library of %s folders: ready in %s, idle RSS %.1f MB", thousands(float64(lib.Folders)), readyIn.Round(time.Millisecond),
		float64(m.rss)/1e6)
	fig := fmt.Sprintf("the same folders in one library (%s)", thousands(float64(lib.Folders)))
	t.add(row{section: sectionDiscovery, figure: fig + ": serve, idle RSS", value: float64(m.rss), unit: unitMB, cmp: info})
	t.note("%s: a shared drive holding a folder for each drive, the drive's folders under it; serve ready in %s, RSS %s later %.1f MB "+
		"(anonymous %.1f MB, file-backed %.1f MB).", fig, readyIn.Round(time.Millisecond), discIdle, float64(m.rss)/1e6,
		float64(m.anon)/1e6, float64(m.file)/1e6)
	return &m, nil
}
