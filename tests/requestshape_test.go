package tests

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/googlefake"
)

// rangedFolders is how many folders the My Drive library holds beyond the
// e2e world's: more than a files.list page (1,000), so that its full sync
// lists it in createdTime ranges.
const rangedFolders = 1100

// Every request the daemon sends Google is valid by Google's discovery
// documents (DESIGN §11): a daemon with a My Drive library of more than a
// page of folders, a domain with a directory and shared drives to
// discover, and push on, runs a full sync of each library, a directory
// sync, a discovery, incremental syncs of both kinds of feed that Drive's
// notifications start (one of them reading the library's root again after
// a change outside it), and a channels.stop when the storage account
// leaves the drive. The fake refuses any request its documents refuse; the
// test lists each distinct request shape, and fails on a refusal, on any
// use of a deprecated parameter, field or method, and if a kind of sync
// did not send the methods it stands for.
func TestRequestShapes(t *testing.T) {
	t.Parallel()
	fake := fmtest.StartGoogle(t) // closed after the daemon
	m := buildE2EWorld(fake)
	many := m.add(m.root, "Archive")
	for i := range rangedFolders {
		fake.CreateFolder(e2eStorage, many, fmt.Sprintf("box %04d", i))
	}
	outside := fake.CreateFolder(e2eStorage, "", "Elsewhere in My Drive")
	fake.SpreadTimes(time.Now().Add(-365*24*time.Hour), time.Now().Add(-time.Hour))
	fake.MakeAdmin("alice@example.com")
	fake.AddGroup("eng@example.com", "bob@example.com", "carol@example.com")
	team := createDrive(fake, "Team", 3).join(fake)
	fake.Share(team.folders[0], googlefake.Permission{Type: "user", Role: "writer", EmailAddress: "bob@example.com"})

	c := withPush(t, fake, e2eConfig(t, fake, m, fmtest.Bolt))
	c.Domains[0].AdminEmail = "alice@example.com"
	c.Domains[0].SharedDrives = &config.SharedDrives{StorageAccount: e2eStorage}
	p := startServe(t, fmtest.WriteConfig(t, c))
	waitReady(t, p.admin+"/readyz")
	waitForDirectories(t, p.admin, 1)
	waitServed(t, fake, p.api, team)
	waitUntil(t, 10*time.Second, "the storage account's feed and the drive's pushed", func() bool {
		feeds, _ := pushStatus(t, p.admin)
		return len(feeds) == 2 && !slices.ContainsFunc(feeds, func(f feedStatus) bool { return f.Polling })
	})

	// Incremental syncs of the user feed and the drive's, from Drive's
	// notifications.
	fake.Rename(m.root, "Engineering, renamed")
	servesName(t, fake, p.api, m.root, "Engineering, renamed")
	fake.Rename(team.folders[1], "renamed in the drive")
	servesName(t, fake, p.api, team.folders[1], "renamed in the drive") // as alice, the drive's organizer
	// A folder outside the My Drive library changed: it may be an ancestor
	// of the library's root, which the incremental sync reads again
	// (files.get).
	fake.Rename(outside, "Elsewhere, renamed")
	waitUntil(t, 10*time.Second, "the library's root read again", func() bool {
		return fake.CallCount("drive.files.get") > 0
	})

	// The storage account leaves the drive: a discovery drops it, and its
	// channel is stopped.
	team.leave(fake)
	waitGone(t, fake, p.api, team)
	waitUntil(t, 10*time.Second, "the drive's channel stopped", func() bool {
		return fake.CallCount("drive.channels.stop") > 0
	})

	shapes := fake.RequestShapes()
	sent := map[string]bool{}
	for _, sh := range shapes {
		t.Log(sh)
		sent[sh.Method] = true
		if sh.Refused != "" {
			t.Errorf("Google would refuse %s", sh)
		}
	}
	if uses := fake.DeprecatedUses(); len(uses) != 0 {
		t.Errorf("deprecated parameters, fields or methods used: %v", uses)
	}
	for kind, methods := range map[string][]string{
		"full sync":        {"drive.changes.getStartPageToken", "drive.files.list", "drive.drives.get", "drive.permissions.list"},
		"incremental sync": {"drive.changes.list", "drive.files.get"},
		"directory sync":   {"directory.users.list", "directory.groups.list", "directory.members.list"},
		"discovery":        {"drive.drives.list"},
		"push":             {"drive.changes.watch", "drive.channels.stop"},
	} {
		for _, method := range methods {
			if !sent[method] {
				t.Errorf("the %s sent no %s (methods sent: %s)", kind, method, strings.Join(slices.Sorted(maps.Keys(sent)), ", "))
			}
		}
	}
	ranged := slices.ContainsFunc(shapes, func(sh googlefake.RequestShape) bool {
		return sh.Method == "drive.files.list" && slices.Contains(sh.Params, "orderBy")
	})
	if !ranged {
		t.Errorf("no files.list in createdTime order: the full sync of %d folders did not list in ranges", rangedFolders)
	}
}
