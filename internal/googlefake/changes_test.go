package googlefake_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/foldermirror/foldermirror/internal/googlefake"
	"google.golang.org/api/drive/v3"
)

// changeReader reads changes.list as one user, remembering its token.
type changeReader struct {
	t       *testing.T
	svc     *drive.Service
	token   string
	names   map[string]string // file ID → name, for removed changes
	tweak   func(*drive.ChangesListCall)
	driveID string
	pages   []int // sizes of the pages the last read got
}

func newChangeReader(t *testing.T, s *googlefake.Server, as string, names map[string]string) *changeReader {
	r := &changeReader{t: t, svc: driveAs(t, s, as), names: names, tweak: func(*drive.ChangesListCall) {}}
	r.restart()
	return r
}

// restart takes a fresh start page token.
func (r *changeReader) restart() {
	r.t.Helper()
	call := r.svc.Changes.GetStartPageToken()
	if r.driveID != "" {
		call.DriveId(r.driveID).SupportsAllDrives(true)
	}
	tok, err := call.Do()
	if err != nil || tok.StartPageToken == "" {
		r.t.Fatalf("getStartPageToken: %v %v", tok, err)
	}
	r.token = tok.StartPageToken
}

// read lists every page since the token, describes each change ("name",
// "name(trashed)", "-name" when removed, "drive:name" for drives,
// "drive:name(hidden)" for those the reader hid), sorted, and moves the
// token on.
func (r *changeReader) read() string {
	r.t.Helper()
	var out []string
	token := r.token
	r.pages = nil
	for {
		call := r.svc.Changes.List(token).Fields("nextPageToken,newStartPageToken,changes(changeType,fileId,driveId,removed,file(name,trashed),drive(name,hidden))")
		if r.driveID != "" {
			call.DriveId(r.driveID).SupportsAllDrives(true).IncludeItemsFromAllDrives(true)
		}
		r.tweak(call)
		l, err := call.Do()
		if err != nil {
			r.t.Fatalf("changes.list: %v", err)
		}
		r.pages = append(r.pages, len(l.Changes))
		for _, c := range l.Changes {
			out = append(out, r.describe(c))
		}
		if l.NextPageToken == "" {
			r.token = l.NewStartPageToken
			break
		}
		if l.NewStartPageToken != "" {
			r.t.Fatal("newStartPageToken before the last page")
		}
		token = l.NextPageToken
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

func (r *changeReader) describe(c *drive.Change) string {
	switch {
	case c.ChangeType == "drive" && c.Removed:
		return "-drive:" + r.names[c.DriveId]
	case c.ChangeType == "drive" && c.Drive.Hidden:
		return "drive:" + c.Drive.Name + "(hidden)"
	case c.ChangeType == "drive":
		return "drive:" + c.Drive.Name
	case c.Removed:
		return "-" + r.names[c.FileId]
	case c.File.Trashed:
		return c.File.Name + "(trashed)"
	}
	return c.File.Name
}

func TestChangesFollowMutations(t *testing.T) {
	s := newFake(t)
	names := map[string]string{}
	mk := func(parent, name string) string {
		id := s.CreateFolder(alice, parent, name)
		names[id] = name
		return id
	}
	a := mk("", "A")
	b := mk(a, "B")
	c := mk(b, "C")
	d := mk("", "D")
	readers := map[string]*changeReader{alice: newChangeReader(t, s, alice, names), bob: newChangeReader(t, s, bob, names)}
	var bobsGrant string
	steps := []struct {
		name       string
		mutate     func()
		alice, bob string
	}{
		{"rename", func() { s.Rename(b, "B2"); names[b] = "B2" }, "B2", ""},
		{"share with bob", func() {
			bobsGrant = s.Share(a, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: bob})
		}, "A,B2,C", "A,B2,C"},
		{"move out of the shared tree", func() { s.Move(c, d) }, "C", "-C"},
		{"trash", func() { s.Trash(b) }, "B2(trashed)", "B2(trashed)"},
		{"unshare", func() { s.Unshare(a, bobsGrant) }, "A,B2(trashed)", "-A,-B2"},
		{"delete", func() { s.Delete(a) }, "-A,-B2", ""},
		{"modify", func() { s.Modify(c, func(f *googlefake.File) { f.AppProperties = map[string]string{"k": "v"} }) }, "C", ""},
		{"link sharing", func() { s.Share(d, googlefake.Permission{Type: "anyone", Role: "reader"}) }, "C,D", ""},
		{"rename thrice", func() { s.Rename(d, "D1"); s.Rename(d, "D2"); s.Rename(d, "D3") }, "D3", ""},
		{"new file", func() { names[s.CreateFile(bob, "", "bob.pdf", "application/pdf")] = "bob.pdf" }, "", "bob.pdf"},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			step.mutate()
			for who, want := range map[string]string{alice: step.alice, bob: step.bob} {
				if got := readers[who].read(); got != want {
					t.Errorf("%s sees %q, want %q", who, got, want)
				}
			}
		})
	}
}

func TestChangesPagingAndOptions(t *testing.T) {
	s := newFake(t)
	names := map[string]string{}
	r := newChangeReader(t, s, alice, names)
	shared := s.CreateFolder(alice, "", "shared")
	names[shared] = "shared"
	grant := s.Share(shared, googlefake.Permission{Type: "user", Role: "writer", EmailAddress: bob})
	for i := range 5 {
		id := s.CreateFolder(alice, shared, fmt.Sprint("n", i))
		names[id] = fmt.Sprint("n", i)
	}
	r.tweak = func(c *drive.ChangesListCall) { c.PageSize(2) }
	if got := r.read(); got != "n0,n1,n2,n3,n4,shared" || fmt.Sprint(r.pages) != "[2 2 2]" {
		t.Errorf("paged changes %q, page sizes %v", got, r.pages)
	}

	// Default fields: the file has kind, id, name and mimeType only.
	bobs := newChangeReader(t, s, bob, names)
	s.Rename(shared, "shared!")
	l, err := bobs.svc.Changes.List(bobs.token).Do()
	if err != nil || len(l.Changes) != 1 {
		t.Fatalf("default fields: %+v %v", l, err)
	}
	ch := l.Changes[0]
	if ch.Kind != "drive#change" || ch.ChangeType != "file" || ch.Time == "" || ch.FileId != shared ||
		ch.File.Name != "shared!" || ch.File.MimeType != folder || ch.File.Parents != nil || l.NewStartPageToken == "" {
		t.Errorf("change %+v file %+v", ch, ch.File)
	}

	s.Unshare(shared, grant)
	bobs.tweak = func(c *drive.ChangesListCall) { c.IncludeRemoved(false) }
	if got := bobs.read(); got != "" {
		t.Errorf("includeRemoved=false still reports %q", got)
	}
}

func TestChangesInSharedDrives(t *testing.T) {
	s := newFake(t)
	d := s.CreateSharedDrive("Team", alice)
	s.Share(d, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: bob})
	names := map[string]string{d: "Team"}
	inDrive := newChangeReader(t, s, bob, names)
	inDrive.driveID = d
	inDrive.restart()
	myDrive := newChangeReader(t, s, bob, names)
	everywhere := newChangeReader(t, s, bob, names)
	everywhere.tweak = func(c *drive.ChangesListCall) { c.IncludeItemsFromAllDrives(true).SupportsAllDrives(true) }

	names[s.CreateFolder(alice, d, "T1")] = "T1"
	s.ModifyDrive(d, func(x *drive.Drive) { x.Name = "Team2" })
	if got := inDrive.read(); got != "T1,drive:Team2" {
		t.Errorf("drive changes %q", got)
	}
	if got := myDrive.read(); got != "drive:Team2" {
		t.Errorf("My Drive changes %q: a user's feed has the drive's own changes, not its items'", got)
	}
	if got := everywhere.read(); got != "T1,drive:Team2" {
		t.Errorf("all drives changes %q", got)
	}

	s.Unshare(d, s.Share(d, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: bob}))
	if got := everywhere.read(); got != "-T1,-drive:Team" {
		t.Errorf("after leaving the drive: %q", got)
	}
	_, err := inDrive.svc.Changes.List(inDrive.token).DriveId(d).SupportsAllDrives(true).IncludeItemsFromAllDrives(true).Do()
	wantAPIError(t, err, 404, "notFound")
	_, err = inDrive.svc.Changes.List(inDrive.token).DriveId(d).SupportsAllDrives(true).Do()
	wantAPIError(t, err, 403, "teamDriveIncludeItemsRequired")
	_, err = driveAs(t, s, carol).Changes.GetStartPageToken().DriveId(d).SupportsAllDrives(true).Do()
	wantAPIError(t, err, 404, "notFound")
}

// A user's change feed (without driveId, with or without
// includeItemsFromAllDrives) carries a "drive" change when the user becomes
// a member of a shared drive, when a drive it is a member of changes (its
// name, its members), and a removed one when it stops being a member, as
// Drive documents ("What is included in a user's change log"); never the
// changes of a drive it is not a member of, nor the drive's items.
func TestUserFeedCarriesDriveChanges(t *testing.T) {
	s := newFake(t)
	other := s.CreateSharedDrive("Other", carol)
	mine := s.CreateSharedDrive("Mine", bob)
	names := map[string]string{other: "Other", mine: "Mine"}
	feed := newChangeReader(t, s, alice, names)
	everywhere := newChangeReader(t, s, alice, names)
	everywhere.tweak = func(c *drive.ChangesListCall) { c.IncludeItemsFromAllDrives(true).SupportsAllDrives(true) }
	member := googlefake.Permission{Type: "user", Role: "reader", EmailAddress: alice}

	rename := func(id, name string) func() {
		return func() {
			s.Rename(id, name)
			names[id] = name
		}
	}
	steps := []struct {
		name, want, wantAll string
		do                  func()
	}{
		{"a drive it is not a member of changes", "", "", rename(other, "Other2")},
		{"added to another domain's drive", "drive:Other2", "drive:Other2", func() { s.Share(other, member) }},
		{"the drive renamed", "drive:Other3", "drive:Other3", rename(other, "Other3")},
		{"another member added", "drive:Other3", "drive:Other3", func() {
			s.Share(other, googlefake.Permission{Type: "user", Role: "writer", EmailAddress: bob})
		}},
		{"an item of the drive made", "", "item", func() { names[s.CreateFolder(carol, other, "item")] = "item" }},
		{"removed from the drive", "-drive:Other3", "-drive:Other3,-item", func() { s.Unshare(other, s.Share(other, member)) }},
		{"a drive it never was a member of changes", "", "", rename(mine, "Mine2")},
	}
	for _, step := range steps {
		step.do()
		if got := feed.read(); got != step.want {
			t.Errorf("%s: user feed %q, want %q", step.name, got, step.want)
		}
		if got := everywhere.read(); got != step.wantAll {
			t.Errorf("%s: feed with every drive's items %q, want %q", step.name, got, step.wantAll)
		}
	}
}

func TestExpireChangeTokens(t *testing.T) {
	s := newFake(t)
	names := map[string]string{}
	r := newChangeReader(t, s, alice, names)
	names[s.CreateFolder(alice, "", "before")] = "before"
	old := r.token
	s.ExpireChangeTokens()
	for _, token := range []string{old, "abc", "999999"} {
		_, err := r.svc.Changes.List(token).Do()
		gerr := wantAPIError(t, err, 400, "invalid")
		if !strings.Contains(gerr.Body, `"location":"pageToken"`) {
			t.Errorf("body %s", gerr.Body)
		}
	}
	r.restart()
	if r.token == old {
		t.Error("start page token did not move on")
	}
	names[s.CreateFolder(alice, "", "after")] = "after"
	if got := r.read(); got != "after" {
		t.Errorf("changes after expiry %q", got)
	}
}
