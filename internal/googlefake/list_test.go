package googlefake_test

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/foldermirror/foldermirror/internal/googlefake"
	"google.golang.org/api/drive/v3"
	"google.golang.org/api/googleapi"
)

func TestFilesListPaging(t *testing.T) {
	s := newFake(t)
	for i := range 2500 {
		s.CreateFolder(alice, "", fmt.Sprintf("f%04d", i))
	}
	svc := driveAs(t, s, alice)
	var sizes []int
	seen := map[string]bool{}
	err := svc.Files.List().PageSize(1000).Fields("nextPageToken,files(id)").Pages(t.Context(), func(l *drive.FileList) error {
		sizes = append(sizes, len(l.Files))
		for _, f := range l.Files {
			seen[f.Id] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(sizes) != "[1000 1000 500]" || len(seen) != 2500 {
		t.Errorf("page sizes %v, %d distinct files", sizes, len(seen))
	}

	tests := []struct {
		pageSize int64
		want     int
	}{{1000, 1000}, {0, 100}, {7, 7}}
	for _, tt := range tests {
		call := svc.Files.List().Fields("nextPageToken,files(id)")
		if tt.pageSize != 0 {
			call.PageSize(tt.pageSize)
		}
		l, err := call.Do()
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Files) != tt.want || l.NextPageToken == "" {
			t.Errorf("pageSize %d: %d files, token %q; want %d", tt.pageSize, len(l.Files), l.NextPageToken, tt.want)
		}
	}
	_, err = svc.Files.List().PageSize(-1).Do()
	wantAPIError(t, err, 400, "invalidParameter")
}

func TestPageTokensSurviveChanges(t *testing.T) {
	s := newFake(t)
	var ids []string
	for i := range 5 {
		ids = append(ids, s.CreateFolder(alice, "", fmt.Sprint("n", i)))
	}
	svc := driveAs(t, s, alice)
	first, err := svc.Files.List().PageSize(2).Fields("nextPageToken,files(name)").Do()
	if err != nil {
		t.Fatal(err)
	}
	s.Delete(ids[0])
	s.Delete(ids[2])
	s.CreateFolder(alice, "", "n5")
	rest := listAll(t, svc.Files.List().PageSize(2).PageToken(first.NextPageToken).Fields("nextPageToken,files(name)"))
	got := append(names(first.Files), names(rest)...)
	if strings.Join(got, ",") != "n0,n1,n3,n4,n5" {
		t.Errorf("names = %v", got)
	}

	for _, bad := range []string{"garbage!", "djF8cGVybWlzc2lvbnN8eA"} {
		_, err = svc.Files.List().PageToken(bad).Do()
		gerr := wantAPIError(t, err, 400, "invalid")
		if !strings.Contains(gerr.Body, `"location":"pageToken"`) {
			t.Errorf("body %s", gerr.Body)
		}
	}
}

// queryTree builds, in alice's My Drive:
//
//	Projects/
//	  Alpha Plan/        (folder)
//	    alpha notes.pdf
//	  beta-plan.pdf
//	  it's here          (folder)
//	  back\slash         (folder)
//	  Link to Alpha      (shortcut)
//	  Old/               (trashed)
//	    old child
//	top.pdf
func queryTree(s *googlefake.Server) (projects string) {
	projects = s.CreateFolder(alice, "", "Projects")
	alpha := s.CreateFolder(alice, projects, "Alpha Plan")
	s.CreateFile(alice, alpha, "alpha notes.pdf", "application/pdf")
	s.CreateFile(alice, projects, "beta-plan.pdf", "application/pdf")
	s.CreateFolder(alice, projects, "it's here")
	s.CreateFolder(alice, projects, `back\slash`)
	s.CreateFile(alice, projects, "Link to Alpha", "application/vnd.google-apps.shortcut")
	old := s.CreateFolder(alice, projects, "Old")
	s.CreateFile(alice, old, "old child", "application/pdf")
	s.CreateFile(alice, "", "top.pdf", "application/pdf")
	s.Trash(old)
	return projects
}

func TestQueries(t *testing.T) {
	s := newFake(t)
	projects := queryTree(s)
	svc := driveAs(t, s, alice)
	tests := []struct {
		q    string
		want string
	}{
		{"", "Alpha Plan,Link to Alpha,Old,Projects,alpha notes.pdf,back\\slash,beta-plan.pdf,it's here,old child,top.pdf"},
		{"mimeType = '" + folder + "'", "Alpha Plan,Old,Projects,back\\slash,it's here"},
		{"mimeType != '" + folder + "'", "Link to Alpha,alpha notes.pdf,beta-plan.pdf,old child,top.pdf"},
		{"mimeType='application/vnd.google-apps.shortcut'", "Link to Alpha"},
		{"name = 'Alpha Plan'", "Alpha Plan"},
		{"name != 'Alpha Plan' and name contains 'alpha'", "Link to Alpha,alpha notes.pdf"},
		{"name contains 'PLAN'", "Alpha Plan,beta-plan.pdf"},
		{"name contains 'lan'", ""},
		{"'" + projects + "' in parents", "Alpha Plan,Link to Alpha,Old,back\\slash,beta-plan.pdf,it's here"},
		{"'root' in parents", "Projects,top.pdf"},
		{"trashed = true", "Old,old child"},
		{"trashed = false and mimeType = '" + folder + "'", "Alpha Plan,Projects,back\\slash,it's here"},
		{"not trashed = true and not mimeType = '" + folder + "'", "Link to Alpha,alpha notes.pdf,beta-plan.pdf,top.pdf"},
		{"trashed != true AND (name = 'top.pdf' OR name = 'Old')", "top.pdf"},
		{`name = 'it\'s here'`, "it's here"},
		{`name = 'back\\slash'`, `back\slash`},
		{"not ('" + projects + "' in parents or trashed = true)", "Projects,alpha notes.pdf,top.pdf"},
		// Queries that only children of some parents can match are answered
		// from those parents' children: the same answers.
		{"('" + projects + "' in parents or 'root' in parents) and mimeType = '" + folder + "'", "Alpha Plan,Old,Projects,back\\slash,it's here"},
		{"name contains 'alpha' and '" + projects + "' in parents", "Alpha Plan,Link to Alpha"},
		{"'" + projects + "' in parents or name = 'top.pdf'", "Alpha Plan,Link to Alpha,Old,back\\slash,beta-plan.pdf,it's here,top.pdf"},
	}
	for _, tt := range tests {
		t.Run(tt.q, func(t *testing.T) {
			got := names(listAll(t, svc.Files.List().Q(tt.q).Fields("nextPageToken,files(name)")))
			if strings.Join(got, ",") != tt.want {
				t.Errorf("got %q\nwant %q", strings.Join(got, ","), tt.want)
			}
		})
	}
}

func TestBadQueries(t *testing.T) {
	s := newFake(t)
	svc := driveAs(t, s, alice)
	for _, q := range []string{
		"name > 'x'", "name = 'unterminated", "name = x", "and",
		"name = 'a' and", "()", "fullText contains 'x'", "mimeType contains 'x'", "trashed = maybe",
		"'x' in owners", `name = 'bad \escape'`, "name = 'a' name = 'b'", "(name = 'a'",
	} {
		_, err := svc.Files.List().Q(q).Do()
		gerr := wantAPIError(t, err, 400, "invalid")
		if !strings.Contains(gerr.Body, `"location":"q"`) {
			t.Errorf("%s: body %s", q, gerr.Body)
		}
	}
}

func TestCorpora(t *testing.T) {
	s := newFake(t)
	d := s.CreateSharedDrive("Team", alice)
	s.Share(d, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: bob})
	top := s.CreateFolder(alice, d, "team top")
	s.CreateFolder(bob, top, "team child")
	s.CreateFolder(alice, "", "mine")
	svc := driveAs(t, s, bob)
	inDrive := func() *drive.FilesListCall {
		return svc.Files.List().Corpora("drive").DriveId(d).IncludeItemsFromAllDrives(true).SupportsAllDrives(true).
			Fields("nextPageToken,files(name,driveId,parents)")
	}

	files := listAll(t, inDrive())
	if got := names(files); strings.Join(got, ",") != "team child,team top" {
		t.Fatalf("drive corpus: %v", got)
	}
	for _, f := range files {
		if f.DriveId != d || len(f.Parents) != 1 {
			t.Errorf("%s: driveId %q parents %v", f.Name, f.DriveId, f.Parents)
		}
		if f.Name == "team top" && f.Parents[0] != d {
			t.Errorf("top-level parent %v, want the drive ID", f.Parents)
		}
	}
	if got := names(listAll(t, driveAs(t, s, alice).Files.List().Fields("files(name)"))); strings.Join(got, ",") != "mine" {
		t.Errorf("user corpus: %v", got)
	}
	all := svc.Files.List().Corpora("allDrives").IncludeItemsFromAllDrives(true).SupportsAllDrives(true).Fields("files(name)")
	if got := names(listAll(t, all)); strings.Join(got, ",") != "team child,team top" {
		t.Errorf("allDrives corpus for bob: %v", got)
	}

	tests := []struct {
		name   string
		call   *drive.FilesListCall
		code   int
		reason string
	}{
		{"no includeItemsFromAllDrives", svc.Files.List().Corpora("drive").DriveId(d).SupportsAllDrives(true), 403, "teamDriveIncludeItemsRequired"},
		{"no supportsAllDrives", svc.Files.List().Corpora("drive").DriveId(d).IncludeItemsFromAllDrives(true), 400, "invalid"},
		{"driveId without corpora", svc.Files.List().DriveId(d).IncludeItemsFromAllDrives(true).SupportsAllDrives(true), 400, "teamDriveIdRequiresTeamDriveCorpora"},
		{"corpora drive without driveId", svc.Files.List().Corpora("drive").IncludeItemsFromAllDrives(true).SupportsAllDrives(true), 400, "teamDriveIdRequiresTeamDriveCorpora"},
		{"unknown corpora", svc.Files.List().Corpora("everything"), 400, "invalid"},
		{"non-member", driveAs(t, s, carol).Files.List().Corpora("drive").DriveId(d).IncludeItemsFromAllDrives(true).SupportsAllDrives(true), 404, "notFound"},
		{"unknown space", svc.Files.List().Spaces("photos"), 400, "invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.call.Do()
			wantAPIError(t, err, tt.code, tt.reason)
		})
	}
}

func TestFieldsPartialResponse(t *testing.T) {
	s := newFake(t)
	id := s.CreateFolder(alice, "", "shared")
	s.Share(id, googlefake.Permission{Type: "user", Role: "writer", EmailAddress: bob})
	creds := credentials(t, s, alice)
	tests := []struct {
		fields   string
		wantTop  string
		wantFile string
		wantPerm string
	}{
		{"", "files,incompleteSearch,kind", "id,kind,mimeType,name", ""},
		{"files(id)", "files", "id", ""},
		{"files/name", "files", "name", ""},
		{"nextPageToken, files(id,name,parents,permissions(id,type,role))", "files", "id,name,parents,permissions", "id,role,type"},
		{"files(permissions/emailAddress,permissions/role)", "files", "permissions", "emailAddress,role"},
		{"files(id,permissions)", "files", "id,permissions", "deleted,emailAddress,id,kind,permissionDetails,role,type"},
		{"kind,files(*)", "files,kind", "capabilities,copyRequiresWriterPermission,createdTime,downloadRestrictions,explicitlyTrashed,id,kind,mimeType,modifiedTime,name,ownedByMe,owners,parents,permissionIds,permissions,shared,trashed,writersCanShare", ""},
	}
	for _, tt := range tests {
		t.Run(tt.fields, func(t *testing.T) {
			q := url.Values{"q": {"name = 'shared'"}}
			if tt.fields != "" {
				q.Set("fields", tt.fields)
			}
			status, body := rawGet(t, s, creds, "files", q)
			if status != 200 || keys(body) != tt.wantTop {
				t.Fatalf("%d top-level keys %q, want %q", status, keys(body), tt.wantTop)
			}
			file := body["files"].([]any)[0].(map[string]any)
			if keys(file) != tt.wantFile {
				t.Errorf("file keys %q, want %q", keys(file), tt.wantFile)
			}
			if tt.wantPerm != "" {
				for _, p := range file["permissions"].([]any) {
					if keys(p) != tt.wantPerm {
						t.Errorf("permission keys %q, want %q", keys(p), tt.wantPerm)
					}
				}
			}
		})
	}

	svc := driveAs(t, s, alice)
	for _, bad := range []string{"files(nme)", "files(id", "files(id,capabilities/canAddChildre)", "files/id/x", ",", "bogus"} {
		_, err := svc.Files.List().Fields(googleapi.Field(bad)).Do()
		gerr := wantAPIError(t, err, 400, "invalidParameter")
		if !strings.HasPrefix(gerr.Message, "Invalid field selection") {
			t.Errorf("%s: message %q", bad, gerr.Message)
		}
	}
	// files.get without fields has Google's default set only.
	f, err := svc.Files.Get(id).Do()
	if err != nil || f.Name != "shared" || f.Parents != nil || f.Permissions != nil || f.Kind != "drive#file" {
		t.Errorf("files.get default fields: %+v %v", f, err)
	}
}

func TestInlinePermissions(t *testing.T) {
	s := newFake(t)
	f := s.CreateFolder(alice, "", "F")
	s.Share(f, googlefake.Permission{Type: "user", Role: "writer", EmailAddress: bob})
	s.Share(f, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: carol})
	child := s.CreateFile(bob, f, "bob's file", "application/pdf")
	many := s.CreateFolder(alice, "", "many")
	for i := range 101 {
		s.Share(many, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: fmt.Sprintf("u%d@example.com", i)})
	}
	d := s.CreateSharedDrive("Team", alice)
	inDrive := s.CreateFolder(alice, d, "in drive")
	s.Share(inDrive, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: bob})

	get := func(as, id string) *drive.File {
		t.Helper()
		file, err := driveAs(t, s, as).Files.Get(id).SupportsAllDrives(true).
			Fields("id,permissions(id,type,role,emailAddress,permissionDetails),hasAugmentedPermissions,ownedByMe,owners,capabilities").Do()
		if err != nil {
			t.Fatal(err)
		}
		return file
	}
	tests := []struct {
		name  string
		as    string
		id    string
		perms int // -1: absent
	}{
		{"owner", alice, f, 3},
		{"writer", bob, f, 3},
		{"reader", carol, f, -1},
		{"over 100", alice, many, -1},
		{"shared drive organizer", alice, inDrive, -1},
		{"child owned by bob", bob, child, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := get(tt.as, tt.id)
			if tt.perms < 0 && got.Permissions != nil || tt.perms >= 0 && len(got.Permissions) != tt.perms {
				t.Errorf("%d permissions, want %d", len(got.Permissions), tt.perms)
			}
			if got.Capabilities.CanShare != (tt.as != carol) {
				t.Errorf("canShare = %v", got.Capabilities.CanShare)
			}
		})
	}

	// The owner of an ancestor is a writer of a file someone else owns.
	file := get(alice, child)
	roles := map[string]string{}
	for _, p := range file.Permissions {
		roles[p.EmailAddress] = p.Role
		if p.EmailAddress == alice && (len(p.PermissionDetails) != 1 || !p.PermissionDetails[0].Inherited || p.PermissionDetails[0].InheritedFrom != f) {
			t.Errorf("alice's details %+v", p.PermissionDetails[0])
		}
	}
	if fmt.Sprint(roles) != fmt.Sprint(map[string]string{alice: "writer", bob: "owner", carol: "reader"}) {
		t.Errorf("roles %v", roles)
	}
	if file.OwnedByMe || len(file.Owners) != 1 || file.Owners[0].EmailAddress != bob {
		t.Errorf("ownership %v %+v", file.OwnedByMe, file.Owners)
	}
	if !get(alice, inDrive).HasAugmentedPermissions {
		t.Error("hasAugmentedPermissions false for a shared drive item with a direct permission")
	}

	s.Modify(f, func(x *googlefake.File) { x.WritersCanShare = false })
	if get(bob, f).Permissions != nil {
		t.Error("writer sees permissions though writers cannot share")
	}
}

func TestListabilityRules(t *testing.T) {
	s := newFake(t)
	link := s.CreateFolder(alice, "", "link only")
	s.Share(link, googlefake.Permission{Type: "anyone", Role: "reader"})
	domain := s.CreateFolder(alice, "", "domain wide")
	s.Share(domain, googlefake.Permission{Type: "domain", Role: "reader", Domain: "Example.com", AllowFileDiscovery: true})
	grouped := s.CreateFolder(alice, "", "for the group")
	s.AddGroup("outer@example.com", "inner@example.com")
	s.AddGroup("inner@example.com", carol)
	s.Share(grouped, googlefake.Permission{Type: "group", Role: "reader", EmailAddress: "outer@example.com"})

	tests := []struct {
		as   string
		want string
	}{
		{bob, "domain wide"},
		{carol, "for the group"},
	}
	for _, tt := range tests {
		got := names(listAll(t, driveAs(t, s, tt.as).Files.List().Fields("files(name)")))
		if strings.Join(got, ",") != tt.want {
			t.Errorf("%s lists %v, want %s", tt.as, got, tt.want)
		}
	}
	// Anyone with the link may open it, though no one finds it in lists.
	if _, err := driveAs(t, s, carol).Files.Get(link).Do(); err != nil {
		t.Errorf("link-shared file: %v", err)
	}
	// A user's root is accessible to it, never listed.
	root, err := driveAs(t, s, alice).Files.Get("root").Fields("id,name,mimeType,ownedByMe").Do()
	if err != nil || root.Id != s.RootOf(alice) || root.Name != "My Drive" || root.MimeType != folder || !root.OwnedByMe {
		t.Errorf("root: %+v %v", root, err)
	}
	_, err = driveAs(t, s, bob).Files.Get(s.RootOf(alice)).Do()
	gerr := wantAPIError(t, err, 404, "notFound")
	if gerr.Message != "File not found: "+s.RootOf(alice)+"." {
		t.Errorf("message %q", gerr.Message)
	}
}

func TestPermissionIDs(t *testing.T) {
	s := newFake(t)
	a := s.CreateFolder(alice, "", "a")
	b := s.CreateFolder(alice, "", "b")
	tests := []struct {
		p    googlefake.Permission
		want func(id string) bool
	}{
		{googlefake.Permission{Type: "anyone", Role: "reader"}, func(id string) bool { return id == "anyoneWithLink" }},
		{googlefake.Permission{Type: "anyone", Role: "reader", AllowFileDiscovery: true}, func(id string) bool { return id == "anyone" }},
		{googlefake.Permission{Type: "domain", Role: "reader", Domain: "example.com"}, func(id string) bool { return strings.HasSuffix(id, "k") }},
		{googlefake.Permission{Type: "user", Role: "reader", EmailAddress: bob}, func(id string) bool { return strings.Trim(id, "0123456789") == "" }},
	}
	for _, tt := range tests {
		idA, idB := s.Share(a, tt.p), s.Share(b, tt.p)
		if idA != idB || !tt.want(idA) {
			t.Errorf("%+v: IDs %q %q", tt.p, idA, idB)
		}
	}
	if s.Share(a, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: "BOB@example.com"}) != s.Share(b, googlefake.Permission{Type: "user", Role: "writer", EmailAddress: bob}) {
		t.Error("user permission IDs depend on case")
	}
}

func TestTrashHidesDescendants(t *testing.T) {
	s := newFake(t)
	top := s.CreateFolder(alice, "", "top")
	mid := s.CreateFolder(alice, top, "mid")
	leaf := s.CreateFile(alice, mid, "leaf", "application/pdf")
	s.CreateFolder(alice, "", "other")
	svc := driveAs(t, s, alice)
	live := func() string {
		return strings.Join(names(listAll(t, svc.Files.List().Q("trashed = false").Fields("files(name)"))), ",")
	}
	s.Trash(top)
	if got := live(); got != "other" {
		t.Errorf("after trash: %s", got)
	}
	for id, explicit := range map[string]bool{top: true, mid: false, leaf: false} {
		f, err := svc.Files.Get(id).Fields("trashed,explicitlyTrashed").Do()
		if err != nil || !f.Trashed || f.ExplicitlyTrashed != explicit {
			t.Errorf("%s: %+v %v", id, f, err)
		}
	}
	s.Untrash(top)
	if got := live(); got != "leaf,mid,other,top" {
		t.Errorf("after untrash: %s", got)
	}
}

func TestSharedDriveItemsNeedSupportsAllDrives(t *testing.T) {
	s := newFake(t)
	d := s.CreateSharedDrive("Team", alice)
	item := s.CreateFile(alice, d, "doc.pdf", "application/pdf")
	svc := driveAs(t, s, alice)
	_, err := svc.Files.Get(item).Do()
	wantAPIError(t, err, 404, "notFound")
	f, err := svc.Files.Get(item).SupportsAllDrives(true).Fields("id,driveId,parents,mimeType").Do()
	if err != nil || f.DriveId != d || !slices.Equal(f.Parents, []string{d}) || f.MimeType != "application/pdf" {
		t.Errorf("item: %+v %v", f, err)
	}
	root, err := svc.Files.Get(d).SupportsAllDrives(true).Fields("id,name,mimeType,driveId").Do()
	if err != nil || root.Id != d || root.Name != "Team" || root.MimeType != folder || root.DriveId != d {
		t.Errorf("drive root: %+v %v", root, err)
	}
}
