package googlefake_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/foldermirror/foldermirror/internal/googlefake"
	"google.golang.org/api/drive/v3"
)

// listPermissions lists every page and returns the page sizes and the IDs.
func listPermissions(t *testing.T, call *drive.PermissionsListCall) ([]int, []string) {
	t.Helper()
	var sizes []int
	var ids []string
	err := call.Pages(t.Context(), func(l *drive.PermissionList) error {
		sizes = append(sizes, len(l.Permissions))
		for _, p := range l.Permissions {
			ids = append(ids, p.Id)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sizes, ids
}

func TestPermissionsListPaging(t *testing.T) {
	s := newFake(t)
	d := s.CreateSharedDrive("Team", alice)
	inDrive := s.CreateFolder(alice, d, "busy")
	mine := s.CreateFolder(alice, "", "busy too")
	for i := range 249 {
		p := googlefake.Permission{Type: "user", Role: "reader", EmailAddress: fmt.Sprintf("u%03d@example.com", i)}
		s.Share(inDrive, p)
		s.Share(mine, p)
	}
	svc := driveAs(t, s, alice)
	whole := func(id string) []string {
		_, ids := listPermissions(t, svc.Permissions.List(id).SupportsAllDrives(true).PageSize(100).Fields("nextPageToken,permissions(id)"))
		return ids
	}
	order := map[string][]string{inDrive: whole(inDrive), mine: whole(mine)}
	tests := []struct {
		name      string
		id        string
		call      *drive.PermissionsListCall
		wantSizes string
	}{
		{"shared drive item, default", inDrive, svc.Permissions.List(inDrive).SupportsAllDrives(true), "[100 100 50]"},
		{"shared drive item, 100", inDrive, svc.Permissions.List(inDrive).SupportsAllDrives(true).PageSize(100), "[100 100 50]"},
		{"shared drive item, 30", inDrive, svc.Permissions.List(inDrive).SupportsAllDrives(true).PageSize(30), "[30 30 30 30 30 30 30 30 10]"},
		{"My Drive item, default", mine, svc.Permissions.List(mine), "[250]"},
		{"My Drive item, 100", mine, svc.Permissions.List(mine).PageSize(100), "[100 100 50]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sizes, ids := listPermissions(t, tt.call.Fields("nextPageToken,permissions(id,role)"))
			if fmt.Sprint(sizes) != tt.wantSizes {
				t.Errorf("page sizes %v, want %s", sizes, tt.wantSizes)
			}
			if !slices.Equal(ids, order[tt.id]) || len(slices.Compact(slices.Sorted(slices.Values(ids)))) != 250 {
				t.Errorf("pages in another order than the whole list's, or not all of it once: %d", len(ids))
			}
		})
	}

	_, err := svc.Permissions.List(inDrive).Do()
	wantAPIError(t, err, 404, "notFound")
	_, err = driveAs(t, s, bob).Permissions.List(mine).Do()
	wantAPIError(t, err, 404, "notFound")
	_, err = svc.Permissions.List(mine).PageToken("nonsense").Do()
	wantAPIError(t, err, 400, "invalid")
}

func TestPermissionsOfSharedDriveAndItems(t *testing.T) {
	s := newFake(t)
	d := s.CreateSharedDrive("Team", alice)
	s.Share(d, googlefake.Permission{Type: "group", Role: "writer", EmailAddress: "team@example.com"})
	item := s.CreateFolder(alice, d, "item")
	direct := s.Share(item, googlefake.Permission{Type: "user", Role: "commenter", EmailAddress: carol})
	svc := driveAs(t, s, alice)

	describe := func(l *drive.PermissionList) string {
		var out []string
		for _, p := range l.Permissions {
			var details []string
			for _, pd := range p.PermissionDetails {
				details = append(details, fmt.Sprintf("%s/%s/%v", pd.PermissionType, pd.Role, pd.Inherited))
			}
			out = append(out, fmt.Sprintf("%s %s %s %s", p.Type, p.EmailAddress, p.Role, strings.Join(details, "+")))
		}
		slices.Sort(out)
		return strings.Join(out, "; ")
	}
	members, err := svc.Permissions.List(d).SupportsAllDrives(true).Fields("permissions(type,emailAddress,role,permissionDetails)").Do()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := describe(members), "group team@example.com writer member/writer/false; user alice@example.com organizer member/organizer/false"; got != want {
		t.Errorf("members:\n got %s\nwant %s", got, want)
	}
	perms, err := svc.Permissions.List(item).SupportsAllDrives(true).Do()
	if err != nil {
		t.Fatal(err)
	}
	want := "group team@example.com writer member/writer/true; user alice@example.com organizer member/organizer/true; user carol@other.org commenter file/commenter/false"
	if got := describe(perms); got != want {
		t.Errorf("item:\n got %s\nwant %s", got, want)
	}
	s.Unshare(item, direct)
	perms, _ = svc.Permissions.List(item).SupportsAllDrives(true).Do()
	if len(perms.Permissions) != 2 {
		t.Errorf("after unshare: %s", describe(perms))
	}
}

func TestDrivesGet(t *testing.T) {
	s := newFake(t)
	d := s.CreateSharedDrive("Team", alice)
	svc := driveAs(t, s, alice)
	got, err := svc.Drives.Get(d).Do()
	if err != nil || got.Kind != "drive#drive" || got.Id != d || got.Name != "Team" || got.Restrictions == nil || got.Restrictions.DriveMembersOnly {
		t.Fatalf("drives.get: %+v %v", got, err)
	}
	s.ModifyDrive(d, func(x *drive.Drive) {
		x.Name = "Renamed"
		x.Restrictions.DriveMembersOnly = true
		x.Restrictions.DownloadRestriction = &drive.DownloadRestriction{RestrictedForReaders: true}
	})
	got, err = svc.Drives.Get(d).Fields("id,name,restrictions").Do()
	if err != nil || got.Name != "Renamed" || !got.Restrictions.DriveMembersOnly || !got.Restrictions.DownloadRestriction.RestrictedForReaders {
		t.Errorf("after ModifyDrive: %+v %v", got, err)
	}
	_, err = driveAs(t, s, bob).Drives.Get(d).Do()
	gerr := wantAPIError(t, err, 404, "notFound")
	if gerr.Message != "Shared drive not found: "+d+"." {
		t.Errorf("message %q", gerr.Message)
	}
	_, err = svc.Drives.Get("0Anope").Do()
	wantAPIError(t, err, 404, "notFound")
}

// ShareAll leaves a file shared as Share of each permission in turn does:
// a principal shared again gets its last role, and other grants stay.
func TestShareAllIsShareInTurn(t *testing.T) {
	s := newFake(t)
	one := s.CreateFolder(alice, "", "one by one")
	all := s.CreateFolder(alice, "", "all at once")
	ps := []googlefake.Permission{
		{Type: "user", Role: "reader", EmailAddress: "u1@example.com"},
		{Type: "user", Role: "writer", EmailAddress: bob},
		{Type: "domain", Role: "reader", Domain: "example.com", AllowFileDiscovery: true},
		{Type: "user", Role: "commenter", EmailAddress: "U1@example.com"},
	}
	for _, id := range []string{one, all} {
		s.Share(id, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: bob})
		s.Share(id, googlefake.Permission{Type: "group", Role: "reader", EmailAddress: "team@example.com"})
	}
	var want []string
	for _, p := range ps {
		want = append(want, s.Share(one, p))
	}
	if got := s.ShareAll(all, ps); !slices.Equal(got, want) {
		t.Errorf("ShareAll's IDs %v, Share's %v", got, want)
	}
	perms := func(id string) string {
		l, err := driveAs(t, s, alice).Permissions.List(id).Fields("permissions(id,type,role,emailAddress,domain,allowFileDiscovery)").Do()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range l.Permissions {
			out = append(out, fmt.Sprintf("%s %s %s %s%s %v", p.Id, p.Type, p.Role, p.EmailAddress, p.Domain, p.AllowFileDiscovery))
		}
		return strings.Join(out, "\n")
	}
	if got, want := perms(all), perms(one); got != want || strings.Count(got, "\n") != 4 {
		t.Errorf("shared all at once:\n%s\none by one:\n%s", got, want)
	}
}

// Drive lists a file's permissions in an order of its own, not by ID: the
// file's own first (its owner, then the others in the order they were
// granted), then those it inherits, in its parent's order. Sharing a
// principal again changes its role where it is.
func TestPermissionsInDriveOrder(t *testing.T) {
	s := newFake(t)
	user := func(email, role string) googlefake.Permission {
		return googlefake.Permission{Type: "user", Role: role, EmailAddress: email}
	}
	top := s.CreateFolder(alice, "", "top")
	s.Share(top, user("zed@example.com", "reader"))
	s.Share(top, googlefake.Permission{Type: "domain", Role: "reader", Domain: "example.com", AllowFileDiscovery: true})
	s.Share(top, user(bob, "reader"))
	s.Share(top, user("zed@example.com", "writer"))
	child := s.CreateFolder(alice, top, "child")
	s.Share(child, user(carol, "commenter"))
	s.Share(child, user(bob, "writer"))
	d := s.CreateSharedDrive("Team", alice)
	s.Share(d, user("zed@example.com", "writer"))
	s.Share(d, googlefake.Permission{Type: "group", Role: "reader", EmailAddress: "team@example.com"})
	item := s.CreateFolder(alice, d, "item")
	s.Share(item, user(carol, "reader"))
	s.Share(item, user(bob, "commenter"))
	plain := s.CreateFolder(alice, d, "plain")

	svc := driveAs(t, s, alice)
	tests := []struct {
		name, id string
		want     []string
	}{
		{"My Drive: the owner, then in the order granted", top, []string{
			"user alice@example.com owner", "user zed@example.com writer", "domain example.com reader", "user bob@example.com reader"}},
		{"My Drive: its own, then the parent's in its order", child, []string{
			"user alice@example.com owner", "user carol@other.org commenter", "user bob@example.com writer",
			"user zed@example.com writer", "domain example.com reader"}},
		{"shared drive: the members in the order added", d, []string{
			"user alice@example.com organizer", "user zed@example.com writer", "group team@example.com reader"}},
		{"shared drive item: its own, then the drive's", item, []string{
			"user carol@other.org reader", "user bob@example.com commenter",
			"user alice@example.com organizer", "user zed@example.com writer", "group team@example.com reader"}},
		{"shared drive item with nothing of its own: the drive's", plain, []string{
			"user alice@example.com organizer", "user zed@example.com writer", "group team@example.com reader"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := svc.Permissions.List(tt.id).SupportsAllDrives(true).Fields("permissions(id,type,role,emailAddress,domain)").Do()
			if err != nil {
				t.Fatal(err)
			}
			var got, ids []string
			for _, p := range l.Permissions {
				got = append(got, strings.Join([]string{p.Type, p.EmailAddress + p.Domain, p.Role}, " "))
				ids = append(ids, p.Id)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("listed\n %s\nwant\n %s", strings.Join(got, "\n "), strings.Join(tt.want, "\n "))
			}
			if slices.IsSorted(ids) && len(ids) > 2 {
				t.Errorf("listed by ID %v: this case's order must differ from the IDs'", ids)
			}
		})
	}
}

// ListNoPermissions makes the fake answer as a Drive emulator that keeps no
// permissions may: files carry none, permissions.list lists none (Drive
// itself always lists an owner); who may see what is unchanged.
func TestListNoPermissions(t *testing.T) {
	s := newFake(t)
	mine := s.CreateFolder(alice, "", "mine")
	s.Share(mine, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: bob})
	d := s.CreateSharedDrive("Team", alice)
	item := s.CreateFolder(alice, d, "item")
	s.ListNoPermissions(true)
	svc := driveAs(t, s, alice)
	for _, id := range []string{mine, d, item} {
		l, err := svc.Permissions.List(id).SupportsAllDrives(true).Do()
		if err != nil || len(l.Permissions) != 0 {
			t.Errorf("permissions.list of %s: %d permissions, %v", id, len(l.Permissions), err)
		}
	}
	f, err := svc.Files.Get(mine).Fields("id,permissions(id),permissionIds").Do()
	if err != nil || len(f.Permissions) != 0 || len(f.PermissionIds) != 0 {
		t.Errorf("files.get: %+v %v", f, err)
	}
	if _, err := driveAs(t, s, bob).Files.Get(mine).Do(); err != nil {
		t.Errorf("bob lost his access: %v", err)
	}
	if _, err := driveAs(t, s, carol).Files.Get(mine).Do(); err == nil {
		t.Error("carol gained access")
	}
	s.ListNoPermissions(false)
	if l, err := svc.Permissions.List(mine).Do(); err != nil || len(l.Permissions) != 2 {
		t.Errorf("permissions listed again: %v %v", l, err)
	}
}

// drives.get and drives.list take the drive or drive.readonly scope alone,
// as Drive's discovery document says: the metadata scope, which files.list
// takes, is refused.
func TestDrivesScopes(t *testing.T) {
	s := newFake(t)
	id := s.CreateSharedDrive("Team", alice)
	metadata := service(t, s, credentials(t, s, alice, drive.DriveMetadataReadonlyScope))
	_, err := metadata.Drives.Get(id).Do()
	wantAPIError(t, err, 403, "insufficientPermissions")
	_, err = metadata.Drives.List().Do()
	wantAPIError(t, err, 403, "insufficientPermissions")
	if _, err := metadata.Files.List().Do(); err != nil {
		t.Errorf("files.list with the metadata scope: %v", err)
	}
	readonly := service(t, s, credentials(t, s, alice, drive.DriveReadonlyScope))
	if _, err := readonly.Drives.List().Do(); err != nil {
		t.Errorf("drives.list with drive.readonly: %v", err)
	}
}
