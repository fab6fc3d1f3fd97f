package syncer_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/internal/googlefake"
)

// Odd Drive data is synced without failing, the same by full and by
// incremental syncs, and what is set aside is said in the log.
func TestOddDriveData(t *testing.T) {
	t.Parallel()
	fake := startFake(t)
	root := fake.CreateFolder(storage, "", "Root")
	outside := fake.CreateFolder(storage, "", "Elsewhere")
	a := fake.CreateFolder(storage, root, "A")
	b := fake.CreateFolder(storage, a, "B")
	// A cycle hanging off the library: B's child C has B and D as parents,
	// D has C.
	c := fake.CreateFolder(storage, b, "C")
	d := fake.CreateFolder(storage, outside, "D")
	fake.ForceParents(d, c)
	fake.ForceParents(c, b, d)
	// A detached cycle: never in the library.
	x := fake.CreateFolder(storage, outside, "X")
	y := fake.CreateFolder(storage, x, "Y")
	fake.ForceParents(x, y)
	// Several parents, one outside.
	multi := fake.CreateFolder(storage, outside, "Multi")
	fake.AddParent(multi, a)
	// Any Unicode, and 10,000 characters.
	long := strings.Repeat("长名字🙂", 2000)
	odd := []string{"\u202eevil.exe", "tab\tand\nnewline", "nul\x00byte", `"quoted" <html> & \back\`, long, "ǅǈ ΣΑΣ ß İ"}
	for _, name := range odd {
		fake.CreateFolder(storage, b, name)
	}
	// Thousands of grants on one folder, and permissions without an e-mail.
	crowd := fake.CreateFolder(storage, root, "Crowd")
	crowdGrants := make([]googlefake.Permission, 2500)
	for i := range crowdGrants {
		crowdGrants[i] = googlefake.Permission{Type: "user", Role: "reader", EmailAddress: fmt.Sprintf("u%04d@example.com", i)}
	}
	fake.ShareAll(crowd, crowdGrants) // one at a time, the fake's work grows as the square
	fake.ShareWithoutEmail(crowd, "reader", "Somebody")
	// Pages that repeat an item.
	for i := range 1200 {
		fake.CreateFolder(storage, a, fmt.Sprint("bulk ", i))
	}
	fake.RepeatItemsAcrossPages(true)

	var logs bytes.Buffer
	e := newEnv(t, fake, "id: lib, rootFolderId: "+root)
	e.logger = slog.New(slog.NewTextHandler(&logs, nil))
	e.restartSyncer()
	res := e.sync("lib")
	if want := 1 + 1 + 1 + 2 + 1 + len(odd) + 1 + 1200; res.Folders != want {
		t.Errorf("%d folders, want %d", res.Folders, want)
	}
	for _, id := range []string{x, y} {
		if _, err := e.db.Folder(context.Background(), "lib", id); err == nil {
			t.Errorf("folder %s of a detached cycle is in the library", id)
		}
	}
	if f := e.folder("lib", multi); f.ParentID != a {
		t.Errorf("Multi's parent %s, want A", f.ParentID)
	}
	if f := e.folder("lib", c); f.ParentID != b {
		t.Errorf("C's parent %s, want B (nearest the root)", f.ParentID)
	}
	if f := e.folder("lib", d); f.ParentID != c {
		t.Errorf("D's parent %s, want C", f.ParentID)
	}
	perms, _ := e.db.Permissions(context.Background(), "lib", crowd)
	if g := e.grants("lib", crowd); len(perms) != 2502 || len(g) != 2501 {
		t.Errorf("Crowd: %d permissions, %d grants; want 2502 and 2501 (the owner, 2,500 users and one without an e-mail grants nothing)", len(perms), len(g))
	}
	names := map[string]bool{}
	snap, _ := e.db.Snapshot(context.Background(), "lib")
	for _, f := range snap {
		names[f.Name] = true
	}
	for _, name := range odd {
		if !names[name] {
			t.Errorf("name %.40q lost", name)
		}
	}
	for _, want := range []string{"repeatedInListings=1", "parentLinksNotFollowed=1", "permissionsWithoutEmail=1"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log does not say %s:\n%s", want, logs.String())
		}
	}

	// The same data through changes equals a fresh full sync.
	fake.Rename(c, "C renamed")
	fake.Share(b, googlefake.Permission{Type: "domain", Role: "reader", Domain: "example.com", AllowFileDiscovery: true})
	if res, err := e.s.Sync(context.Background(), fm.SyncRequest{Library: "lib", Mode: fm.SyncAuto}, nil); err != nil || res.Full {
		t.Fatalf("incremental: %+v %v", res, err)
	}
	fresh := newEnv(t, fake, "id: lib, rootFolderId: "+root)
	fresh.sync("lib")
	compareIndexes(t, "after changes", e, fresh, "lib")
}
