package googlefake_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/foldermirror/foldermirror/internal/googlefake"
	"google.golang.org/api/drive/v3"
)

const (
	dave  = "dave@partner.org"
	frank = "frank@other.org"
	team  = "team@example.com"
)

// listDrivesOf lists every page of drives.list as the client does, with the
// fields discovery asks for, and describes each drive as "name", or
// "name(hidden)"; it returns the sizes of the pages too.
func listDrivesOf(t *testing.T, call *drive.DrivesListCall) ([]string, []int) {
	t.Helper()
	var out []string
	var pages []int
	err := call.Fields("nextPageToken,drives(id,name,hidden)").Pages(context.Background(), func(l *drive.DriveList) error {
		pages = append(pages, len(l.Drives))
		for _, d := range l.Drives {
			if d.Hidden {
				out = append(out, d.Name+"(hidden)")
			} else {
				out = append(out, d.Name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("drives.list: %v", err)
	}
	return out, pages
}

// drivesWorldOfAlice makes shared drives alice is a member of in every way
// (her user, a group of hers, her domain), one she hid, and some she is
// not a member of: the one of another domain, one she left, one deleted.
func drivesWorldOfAlice(t *testing.T) *googlefake.Server {
	t.Helper()
	s := newFake(t)
	s.AddGroup(team, alice)
	s.CreateSharedDrive("Own", alice)
	viaGroup := s.CreateSharedDrive("ViaGroup", carol)
	s.Share(viaGroup, googlefake.Permission{Type: "group", Role: "reader", EmailAddress: team})
	viaDomain := s.CreateSharedDrive("ViaDomain", bob)
	s.Share(viaDomain, googlefake.Permission{Type: "domain", Role: "reader", Domain: "example.com"})
	s.CreateSharedDrive("NotMine", carol)
	hidden := s.CreateSharedDrive("Hidden", alice)
	s.Share(hidden, googlefake.Permission{Type: "user", Role: "writer", EmailAddress: bob})
	s.HideDrive(hidden, alice, true)
	left := s.CreateSharedDrive("Left", bob)
	s.Unshare(left, s.Share(left, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: alice}))
	s.DeleteSharedDrive(s.CreateSharedDrive("Deleted", alice))
	return s
}

func TestDrivesListsTheDrivesOfAMember(t *testing.T) {
	s := drivesWorldOfAlice(t)
	got, pages := listDrivesOf(t, driveAs(t, s, alice).Drives.List().PageSize(2))
	if want := []string{"Own", "ViaGroup", "ViaDomain", "Hidden(hidden)"}; !slices.Equal(got, want) || !slices.Equal(pages, []int{2, 2}) {
		t.Errorf("alice's drives %v in pages %v, want %v in pages of 2", got, pages, want)
	}
	if got, _ := listDrivesOf(t, driveAs(t, s, bob).Drives.List()); !slices.Equal(got, []string{"ViaDomain", "Hidden", "Left"}) {
		t.Errorf("bob's drives %v: the drive alice hid is not hidden for him", got)
	}
	if got, _ := listDrivesOf(t, driveAs(t, s, carol).Drives.List()); !slices.Equal(got, []string{"ViaGroup", "NotMine"}) {
		t.Errorf("carol's drives %v", got)
	}
	s.MakeAdmin(bob)
	got, _ = listDrivesOf(t, driveAs(t, s, bob).Drives.List().UseDomainAdminAccess(true))
	if want := []string{"Own", "ViaDomain", "Hidden", "Left"}; !slices.Equal(got, want) {
		t.Errorf("an admin's drives of its domain %v, want %v", got, want)
	}
}

func TestDrivesListAnswers(t *testing.T) {
	s := drivesWorldOfAlice(t)
	code, body := rawGet(t, s, credentials(t, s, alice), "drives", nil)
	drives, _ := body["drives"].([]any)
	if code != 200 || keys(body) != "drives,kind" || len(drives) != 4 || keys(drives[0]) != "id,kind,name" {
		t.Errorf("default fields: %d %v", code, body)
	}
	code, body = rawGet(t, s, credentials(t, s, alice), "drives", url.Values{"fields": {"drives(id,hidden)"}})
	drives, _ = body["drives"].([]any)
	if code != 200 || keys(body) != "drives" || len(drives) != 4 || keys(drives[0]) != "hidden,id" {
		t.Errorf("fields drives(id,hidden): %d %v", code, body)
	}
	s.AddUser(frank)
	code, body = rawGet(t, s, credentials(t, s, frank), "drives", url.Values{"fields": {"drives"}})
	if code != 200 || fmt.Sprint(body) != "map[drives:[]]" {
		t.Errorf("a user of no drive: %d %v", code, body)
	}

	svc := driveAs(t, s, alice)
	for _, tc := range []struct {
		name   string
		call   *drive.DrivesListCall
		code   int
		reason string
	}{
		{"page size 0", svc.Drives.List().PageSize(0), 400, "invalidParameter"},
		{"a token of nothing", svc.Drives.List().PageToken("garbage"), 400, "invalid"},
		{"a token of another list", svc.Drives.List().PageToken(permissionsToken(t, s)), 400, "invalid"},
		{"a search", svc.Drives.List().Q("name contains 'Own'"), 501, "notImplemented"},
		{"admin access of a non-admin", svc.Drives.List().UseDomainAdminAccess(true), 403, "noListTeamDrivesAdministratorPrivilege"},
		{"an unknown field", svc.Drives.List().Fields("drives(nope)"), 400, "invalidParameter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.call.Do()
			wantAPIError(t, err, tc.code, tc.reason)
		})
	}
}

// permissionsToken returns a page token of permissions.list.
func permissionsToken(t *testing.T, s *googlefake.Server) string {
	t.Helper()
	f := s.CreateFolder(alice, "", "shared")
	s.Share(f, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: bob})
	l, err := driveAs(t, s, alice).Permissions.List(f).PageSize(1).Do()
	if err != nil || l.NextPageToken == "" {
		t.Fatalf("permissions.list: %v %v", l, err)
	}
	return l.NextPageToken
}

func TestDrivesListPages(t *testing.T) {
	s := newFake(t)
	var want []string
	for i := range 105 {
		want = append(want, fmt.Sprintf("d%03d", i))
		s.CreateSharedDrive(want[i], alice)
	}
	svc := driveAs(t, s, alice)
	for _, tc := range []struct {
		name  string
		call  *drive.DrivesListCall
		pages []int
	}{
		{"10 by default", svc.Drives.List(), []int{10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 5}},
		{"100, the most", svc.Drives.List().PageSize(100), []int{100, 5}},
		{"as asked", svc.Drives.List().PageSize(50), []int{50, 50, 5}},
	} {
		got, pages := listDrivesOf(t, tc.call)
		if !slices.Equal(got, want) || !slices.Equal(pages, tc.pages) {
			t.Errorf("%s: pages %v of %d drives, want pages %v of %d", tc.name, pages, len(got), tc.pages, len(want))
		}
	}
}

// A page token stays valid while drives come and go: the listing goes on
// after the last drive it gave.
func TestDrivesListTokensOutliveChanges(t *testing.T) {
	s := newFake(t)
	ids := map[string]string{}
	for _, name := range []string{"a", "b", "c", "d"} {
		ids[name] = s.CreateSharedDrive(name, alice)
	}
	svc := driveAs(t, s, alice)
	first, err := svc.Drives.List().PageSize(2).Do()
	if err != nil || len(first.Drives) != 2 || first.NextPageToken == "" {
		t.Fatalf("first page %+v %v", first, err)
	}
	s.DeleteSharedDrive(ids["c"])
	s.CreateSharedDrive("e", alice)
	s.ModifyDrive(ids["a"], func(d *drive.Drive) { d.Name = "a2" })
	got, _ := listDrivesOf(t, svc.Drives.List().PageSize(2).PageToken(first.NextPageToken))
	if !slices.Equal(got, []string{"d", "e"}) {
		t.Errorf("the rest of the listing %v, want [d e]", got)
	}
}

// drives.list finds the drives drives.get lets a user read, whatever the
// sharing, group and account changes made.
func TestDrivesListAgreesWithDrivesGet(t *testing.T) {
	s := newFake(t)
	users := []string{alice, bob, carol, dave}
	s.AddUser(dave)
	s.AddGroup(team)
	rng := rand.New(rand.NewPCG(27, 5))
	pick := func(from []string) string { return from[rng.IntN(len(from))] }
	principals := []googlefake.Permission{
		{Type: "group", Role: "reader", EmailAddress: team},
		{Type: "domain", Role: "reader", Domain: "example.com"},
		{Type: "domain", Role: "writer", Domain: "other.org"},
	}
	for _, u := range users {
		principals = append(principals, googlefake.Permission{Type: "user", Role: "writer", EmailAddress: u})
	}
	var drives []string
	granted := map[string][]string{} // drive → permission IDs
	steps := []func(){
		func() { drives = append(drives, s.CreateSharedDrive(fmt.Sprint("d", len(drives)), pick(users))) },
		func() {
			d := pick(drives)
			if id := s.Share(d, principals[rng.IntN(len(principals))]); !slices.Contains(granted[d], id) {
				granted[d] = append(granted[d], id)
			}
		},
		func() {
			d := pick(drives)
			if n := len(granted[d]); n > 0 {
				i := rng.IntN(n)
				s.Unshare(d, granted[d][i])
				granted[d] = slices.Delete(granted[d], i, i+1)
			}
		},
		func() { s.AddGroupMember(team, pick(users)) },
		func() { s.RemoveGroupMember(team, pick(users)) },
	}
	drives = append(drives, s.CreateSharedDrive("first", alice))
	for step := range 120 {
		steps[rng.IntN(len(steps))]()
		if step == 60 {
			i := rng.IntN(len(drives))
			s.DeleteSharedDrive(drives[i])
			drives = slices.Delete(drives, i, i+1)
		}
		if step%10 != 9 {
			continue
		}
		for _, u := range users {
			svc := driveAs(t, s, u)
			var listed []string
			err := svc.Drives.List().PageSize(3).Fields("nextPageToken,drives(id)").Pages(context.Background(), func(l *drive.DriveList) error {
				for _, d := range l.Drives {
					listed = append(listed, d.Id)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			var readable []string
			for _, d := range drives {
				if _, err := svc.Drives.Get(d).Do(); err == nil {
					readable = append(readable, d)
				}
			}
			if !slices.Equal(listed, readable) {
				t.Fatalf("step %d: %s lists %v, reads %v", step, u, listed, readable)
			}
		}
	}
}

// A member's user change log carries what happens to a shared drive, as
// the client reads it: the member added (a "drive" change with the drive),
// the drive renamed or its members changed, the member removed or the
// drive deleted (a "drive" change, removed); whichever way the member is
// one (its user, a group, its domain). Hiding a drive changes nothing for
// the others and logs nothing.
func TestDriveLifecycleInMembersLogs(t *testing.T) {
	s := newFake(t)
	s.AddUser(dave)
	s.AddUser(frank)
	s.AddGroup(team, dave)
	d := s.CreateSharedDrive("Team", carol)
	item := s.CreateFolder(carol, d, "item")
	names := map[string]string{d: "Team", item: "item"}
	readers := map[string]*changeReader{}
	for _, u := range []string{alice, bob, carol, dave, frank} {
		readers[u] = newChangeReader(t, s, u, names)
	}
	var group string
	steps := []struct {
		name string
		do   func()
		want map[string]string // by reader; "" for the others
	}{
		{"alice added", func() { s.Share(d, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: alice}) },
			map[string]string{alice: "drive:Team", carol: "drive:Team"}},
		{"a group of dave's added", func() {
			group = s.Share(d, googlefake.Permission{Type: "group", Role: "reader", EmailAddress: team})
		}, map[string]string{alice: "drive:Team", carol: "drive:Team", dave: "drive:Team"}},
		{"bob's domain added", func() { s.Share(d, googlefake.Permission{Type: "domain", Role: "reader", Domain: "example.com"}) },
			map[string]string{alice: "drive:Team", bob: "drive:Team", carol: "drive:Team", dave: "drive:Team"}},
		{"alice hides it", func() { s.HideDrive(d, alice, true) }, nil},
		{"renamed", func() {
			s.ModifyDrive(d, func(x *drive.Drive) { x.Name = "Team2" })
			names[d] = "Team2"
		}, map[string]string{alice: "drive:Team2(hidden)", bob: "drive:Team2", carol: "drive:Team2", dave: "drive:Team2"}},
		{"the group removed", func() { s.Unshare(d, group) },
			map[string]string{alice: "drive:Team2(hidden)", bob: "drive:Team2", carol: "drive:Team2", dave: "-drive:Team2"}},
		{"deleted", func() { s.DeleteSharedDrive(d) },
			map[string]string{alice: "-drive:Team2", bob: "-drive:Team2", carol: "-drive:Team2"}},
	}
	for _, step := range steps {
		step.do()
		for u, r := range readers {
			if got := r.read(); got != step.want[u] {
				t.Errorf("%s: %s's log %q, want %q", step.name, u, got, step.want[u])
			}
		}
	}
	svc := driveAs(t, s, carol)
	_, err := svc.Drives.Get(d).Do()
	wantAPIError(t, err, 404, "notFound")
	_, err = svc.Files.Get(item).SupportsAllDrives(true).Do()
	wantAPIError(t, err, 404, "notFound")
}

// Deleting a shared drive tells a member reading every drive's items that
// they are gone too, and the drive's own log is gone.
func TestDeleteSharedDrive(t *testing.T) {
	s := newFake(t)
	d := s.CreateSharedDrive("Team", alice)
	names := map[string]string{d: "Team"}
	for _, name := range []string{"a", "b"} {
		names[s.CreateFolder(alice, d, name)] = name
	}
	everywhere := newChangeReader(t, s, alice, names)
	everywhere.tweak = func(c *drive.ChangesListCall) { c.IncludeItemsFromAllDrives(true).SupportsAllDrives(true) }
	inDrive := newChangeReader(t, s, alice, names)
	inDrive.driveID = d
	inDrive.restart()
	s.DeleteSharedDrive(d)
	if got := everywhere.read(); got != "-a,-b,-drive:Team" {
		t.Errorf("every drive's changes %q", got)
	}
	_, err := inDrive.svc.Changes.List(inDrive.token).DriveId(d).SupportsAllDrives(true).IncludeItemsFromAllDrives(true).Do()
	wantAPIError(t, err, 404, "notFound")
	if got, _ := listDrivesOf(t, driveAs(t, s, alice).Drives.List()); len(got) != 0 {
		t.Errorf("drives listed after the deletion: %v", got)
	}
}

func TestHideDrive(t *testing.T) {
	s := newFake(t)
	d := s.CreateSharedDrive("Team", alice)
	s.Share(d, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: bob})
	hidden := func(user string) bool {
		t.Helper()
		got, err := driveAs(t, s, user).Drives.Get(d).Fields("hidden").Do()
		if err != nil {
			t.Fatal(err)
		}
		return got.Hidden
	}
	s.HideDrive(d, alice, true)
	if !hidden(alice) || hidden(bob) {
		t.Errorf("after alice hid it: hidden for alice %v, for bob %v", hidden(alice), hidden(bob))
	}
	s.HideDrive(d, strings.ToUpper(alice), false)
	if hidden(alice) {
		t.Error("still hidden after alice showed it again")
	}
}

// With RepeatItemsAcrossPages, a page begins with the last drive of the
// page before.
func TestDrivesListRepeatingItems(t *testing.T) {
	s := newFake(t)
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		s.CreateSharedDrive(name, alice)
	}
	s.RepeatItemsAcrossPages(true)
	got, _ := listDrivesOf(t, driveAs(t, s, alice).Drives.List().PageSize(2))
	if want := []string{"a", "b", "b", "c", "c", "d", "d", "e"}; !slices.Equal(got, want) {
		t.Errorf("pages gave %v, want %v", got, want)
	}
}

// With LoopDrivePages, the last page leads back to the first.
func TestLoopDrivePages(t *testing.T) {
	s := newFake(t)
	for _, name := range []string{"a", "b", "c"} {
		s.CreateSharedDrive(name, alice)
	}
	s.LoopDrivePages(true)
	svc := driveAs(t, s, alice)
	token := ""
	var seen []string
	for range 4 {
		l, err := svc.Drives.List().PageSize(2).PageToken(token).Do()
		if err != nil || l.NextPageToken == "" {
			t.Fatalf("page %v %v", l, err)
		}
		for _, d := range l.Drives {
			seen = append(seen, d.Name)
		}
		token = l.NextPageToken
	}
	if want := []string{"a", "b", "c", "a", "b", "c"}; !slices.Equal(seen, want) {
		t.Errorf("pages gave %v, want %v", seen, want)
	}
}
