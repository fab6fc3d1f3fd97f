package googlefake_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/foldermirror/foldermirror/internal/googlefake"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	admin "google.golang.org/api/admin/directory/v1"
	"google.golang.org/api/drive/v3"
	"google.golang.org/api/option"
)

// directoryScopes are the scopes foldermirror asks for to read the directory.
var directoryScopes = []string{
	admin.AdminDirectoryUserReadonlyScope, admin.AdminDirectoryGroupReadonlyScope,
	admin.AdminDirectoryGroupMemberReadonlyScope,
}

// directoryService returns a real Directory client on creds.
func directoryService(t testing.TB, s *googlefake.Server, creds *google.Credentials) *admin.Service {
	t.Helper()
	svc, err := admin.NewService(context.Background(), option.WithEndpoint(s.DirectoryEndpoint()),
		option.WithTokenSource(creds.TokenSource))
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// directoryAs returns a Directory client of the syncer acting as subject
// with the read-only directory scopes.
func directoryAs(t testing.TB, s *googlefake.Server, subject string) *admin.Service {
	t.Helper()
	return directoryService(t, s, credentials(t, s, subject, directoryScopes...))
}

// newDirectory starts a fake where alice administers example.com.
func newDirectory(t testing.TB) *googlefake.Server {
	t.Helper()
	s := newFake(t)
	s.MakeAdmin(alice)
	return s
}

func allUsers(t *testing.T, call *admin.UsersListCall) ([]*admin.User, int) {
	t.Helper()
	var out []*admin.User
	pages := 0
	err := call.Pages(context.Background(), func(u *admin.Users) error {
		if u.Kind != "admin#directory#users" {
			t.Errorf("kind %q", u.Kind)
		}
		pages++
		out = append(out, u.Users...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, pages
}

func allGroups(t *testing.T, call *admin.GroupsListCall) ([]*admin.Group, int) {
	t.Helper()
	var out []*admin.Group
	pages := 0
	err := call.Pages(context.Background(), func(g *admin.Groups) error {
		pages++
		out = append(out, g.Groups...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, pages
}

func allMembers(t *testing.T, call *admin.MembersListCall) ([]*admin.Member, int) {
	t.Helper()
	var out []*admin.Member
	pages := 0
	err := call.Pages(context.Background(), func(m *admin.Members) error {
		pages++
		out = append(out, m.Members...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, pages
}

func userEmails(users []*admin.User) []string {
	out := make([]string, len(users))
	for i, u := range users {
		out[i] = u.PrimaryEmail
	}
	return out
}

func TestDirectoryUsersPaging(t *testing.T) {
	s := newDirectory(t)
	for i := range 1200 {
		s.AddUser(fmt.Sprintf("user%04d@example.com", i))
	}
	svc := directoryAs(t, s, alice)
	tests := []struct {
		name      string
		call      *admin.UsersListCall
		wantPages int
	}{
		{"500 a page by domain", svc.Users.List().Domain("example.com").MaxResults(500), 3},
		{"default 100 a page by customer", svc.Users.List().Customer("my_customer").OrderBy("email"), 13},
		{"showDeleted ignored", svc.Users.List().Customer("my_customer").ShowDeleted("false").MaxResults(500), 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.ResetCalls()
			users, pages := allUsers(t, tt.call)
			emails := userEmails(users)
			if len(users) != 1202 || pages != tt.wantPages || !slices.IsSorted(emails) || len(slices.Compact(emails)) != 1202 {
				t.Errorf("%d users in %d pages, want 1202 in %d, sorted, once each", len(users), pages, tt.wantPages)
			}
			if slices.Contains(emails, carol) || !slices.Contains(emails, alice) || !slices.Contains(emails, bob) {
				t.Errorf("wrong domain's users: %v...", emails[:3])
			}
			if got := s.Calls(); got["directory.users.list"] != tt.wantPages || got["oauth2.token"] > 1 {
				t.Errorf("calls %v", got)
			}
		})
	}
}

func TestDirectoryPageTokensSurviveChanges(t *testing.T) {
	s := newDirectory(t)
	for i := range 10 {
		s.AddUser(fmt.Sprintf("u%d@example.com", i))
	}
	svc := directoryAs(t, s, alice)
	first, err := svc.Users.List().Domain("example.com").MaxResults(5).Do()
	if err != nil {
		t.Fatal(err)
	}
	last := first.Users[4].PrimaryEmail
	s.RemoveUser(last)
	s.AddUser("aaa@example.com") // sorts before the token's position
	rest, _ := allUsers(t, svc.Users.List().Domain("example.com").MaxResults(5).PageToken(first.NextPageToken))
	got := append(userEmails(first.Users), userEmails(rest)...)
	if len(got) != 12 || !slices.IsSorted(got) || slices.Contains(got[5:], last) || slices.Contains(got, "aaa@example.com") {
		t.Errorf("users %v", got)
	}
	_, err = svc.Users.List().Domain("example.com").PageToken("garbage").Do()
	wantAPIError(t, err, 400, "invalid")
	_, err = svc.Groups.List().Domain("example.com").PageToken(first.NextPageToken).Do()
	wantAPIError(t, err, 400, "invalid")
}

func TestDirectoryUserRecords(t *testing.T) {
	s := newDirectory(t)
	s.AddUser("Jane.Doe@Example.com")
	s.SuspendUser(bob, true)
	s.AddUser("gone@example.com")
	s.AddGroup("team@example.com", "gone@example.com", bob)
	s.RemoveUser("gone@example.com")
	users, _ := allUsers(t, directoryAs(t, s, alice).Users.List().Customer("my_customer"))
	byEmail := map[string]*admin.User{}
	for _, u := range users {
		byEmail[u.PrimaryEmail] = u
	}
	if strings.Join(userEmails(users), " ") != "alice@example.com bob@example.com jane.doe@example.com" {
		t.Fatalf("users %v", userEmails(users))
	}
	sub, _ := verify(s.GoogleIDToken(webClient, alice), fetchJWKS(t, s))
	tests := []struct {
		email                      string
		admin, suspended           bool
		given, family, full, suspR string
	}{
		{alice, true, false, "Alice", "", "Alice", ""},
		{bob, false, true, "Bob", "", "Bob", "ADMIN"},
		{"jane.doe@example.com", false, false, "Jane", "Doe", "Jane Doe", ""},
	}
	for _, tt := range tests {
		t.Run(tt.email, func(t *testing.T) {
			u := byEmail[tt.email]
			if u.Kind != "admin#directory#user" || u.IsAdmin != tt.admin || u.Suspended != tt.suspended ||
				u.SuspensionReason != tt.suspR || u.CustomerId == "" || u.OrgUnitPath != "/" || u.CreationTime == "" {
				t.Errorf("user %+v", u)
			}
			if u.Name.GivenName != tt.given || u.Name.FamilyName != tt.family || u.Name.FullName != tt.full {
				t.Errorf("name %+v", u.Name)
			}
		})
	}
	if byEmail[alice].Id != sub["sub"] || byEmail[bob].Id != googlefake.UserID(bob) || byEmail[bob].Id == byEmail[alice].Id {
		t.Errorf("alice's id %q, her ID token's sub %v; bob's id %q, want %s", byEmail[alice].Id, sub["sub"], byEmail[bob].Id, googlefake.UserID(bob))
	}
	members, _ := allMembers(t, directoryAs(t, s, alice).Members.List("team@example.com"))
	if len(members) != 1 || members[0].Email != bob || members[0].Status != "SUSPENDED" {
		t.Errorf("members after RemoveUser: %+v", members)
	}

	// The removed user is gone for the token endpoint too.
	_, err := credentials(t, s, "gone@example.com").TokenSource.Token()
	if code, status := tokenError(t, err); code != "invalid_grant" || status != 400 {
		t.Errorf("delegation to a removed user: %s %d", code, status)
	}
}

func TestDirectoryGroupsAndMembers(t *testing.T) {
	s := newDirectory(t)
	for i := range 450 {
		s.AddGroup(fmt.Sprintf("group%03d@example.com", i))
	}
	s.AddGroup("outsiders@other.org", carol)
	var everyone []string
	for i := range 250 {
		u := fmt.Sprintf("m%03d@example.com", i)
		s.AddUser(u)
		everyone = append(everyone, u)
	}
	s.AddGroup("all@example.com", everyone...)
	s.AddGroupMember("all@example.com", "outsiders@other.org") // a group of another domain
	s.AddGroupMember("all@example.com", "guest@gmail.com")     // an external account
	svc := directoryAs(t, s, alice)

	t.Run("groups", func(t *testing.T) {
		tests := []struct {
			call      *admin.GroupsListCall
			wantPages int
		}{
			{svc.Groups.List().Domain("example.com"), 3},
			{svc.Groups.List().Customer("my_customer").MaxResults(200), 3}, // the most (201 is refused)
			{svc.Groups.List().Customer("my_customer").MaxResults(100), 5},
		}
		for _, tt := range tests {
			groups, pages := allGroups(t, tt.call)
			if len(groups) != 451 || pages != tt.wantPages {
				t.Errorf("%d groups in %d pages, want 451 in %d", len(groups), pages, tt.wantPages)
			}
			i := slices.IndexFunc(groups, func(g *admin.Group) bool { return g.Email == "all@example.com" })
			if i < 0 || groups[i].DirectMembersCount != 252 || groups[i].Kind != "admin#directory#group" ||
				groups[i].Id == "" || groups[i].Name != "All" {
				t.Fatalf("group all: %+v", groups[max(i, 0)])
			}
		}
	})

	t.Run("members", func(t *testing.T) {
		s.ResetCalls()
		members, pages := allMembers(t, svc.Members.List("all@example.com"))
		if len(members) != 252 || pages != 2 || s.CallCount("directory.members.list") != 2 {
			t.Fatalf("%d members in %d pages (%v)", len(members), pages, s.Calls())
		}
		types := map[string]string{}
		for _, m := range members {
			if m.Kind != "admin#directory#member" || m.Role != "MEMBER" || m.Status != "ACTIVE" || m.Id == "" {
				t.Errorf("member %+v", m)
			}
			types[m.Email] = m.Type
		}
		if types["outsiders@other.org"] != "GROUP" || types["guest@gmail.com"] != "USER" || types["m000@example.com"] != "USER" {
			t.Errorf("types %v", types)
		}
	})

	t.Run("by ID, nested", func(t *testing.T) {
		s.AddGroup("parent@example.com", "group007@example.com", bob)
		direct, _ := allMembers(t, svc.Members.List("parent@example.com").IncludeDerivedMembership(true))
		var nested *admin.Member
		for _, m := range direct {
			if m.Type == "GROUP" {
				nested = m
			}
		}
		if len(direct) != 2 || nested == nil || nested.Email != "group007@example.com" {
			t.Fatalf("members %+v", direct)
		}
		s.AddGroupMember("group007@example.com", alice)
		byID, _ := allMembers(t, svc.Members.List(nested.Id))
		if len(byID) != 1 || byID[0].Email != alice {
			t.Errorf("members of the nested group by ID: %+v", byID)
		}
		s.RemoveGroupMember("parent@example.com", bob)
		after, _ := allMembers(t, svc.Members.List("PARENT@example.com"))
		if len(after) != 1 || after[0].Type != "GROUP" {
			t.Errorf("after RemoveGroupMember: %+v", after)
		}
		owners, _ := allMembers(t, svc.Members.List("parent@example.com").Roles("OWNER,MANAGER"))
		if len(owners) != 0 {
			t.Errorf("owners %+v", owners)
		}
	})

	t.Run("errors", func(t *testing.T) {
		_, err := svc.Members.List("nope@example.com").Do()
		gerr := wantAPIError(t, err, 404, "notFound")
		if gerr.Message != "Resource Not Found: groupKey" {
			t.Errorf("message %q", gerr.Message)
		}
		_, err = svc.Members.List("outsiders@other.org").Do()
		wantAPIError(t, err, 403, "forbidden")
		_, err = svc.Members.List("all@example.com").MaxResults(0).Do()
		wantAPIError(t, err, 400, "invalidParameter")
	})
}

func TestDirectoryGroupMembershipDrivesAccess(t *testing.T) {
	s := newDirectory(t)
	shared := s.CreateFolder(alice, "", "team folder")
	s.AddGroup("inner@example.com")
	s.AddGroup("team@example.com", "inner@example.com")
	s.Share(shared, googlefake.Permission{Type: "group", Role: "reader", EmailAddress: "team@example.com"})
	visible := func() bool {
		files := listAll(t, driveAs(t, s, carol).Files.List().Fields("files(id)"))
		return len(files) == 1
	}
	if visible() {
		t.Fatal("carol sees the folder before joining")
	}
	s.AddGroupMember("inner@example.com", carol)
	if !visible() {
		t.Error("carol, in a nested group, does not see the folder")
	}
	s.RemoveGroupMember("inner@example.com", carol)
	if visible() {
		t.Error("carol still sees the folder after leaving")
	}
}

func TestDirectoryAuthorization(t *testing.T) {
	s := newDirectory(t)
	s.AddUser("boss@other.org")
	s.MakeAdmin("boss@other.org")
	s.AddUser("suspended.admin@example.com")
	s.MakeAdmin("suspended.admin@example.com")
	s.SuspendUser("suspended.admin@example.com", true)
	s.AddGroup("team@example.com", bob)
	const forbidden = "Not Authorized to access this resource/api"
	static := func(tok string) *admin.Service {
		return directoryService(t, s, &google.Credentials{TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: tok})})
	}
	tests := []struct {
		name    string
		do      func() error
		code    int
		reason  string
		message string
	}{
		{"non-admin users", func() error { _, err := directoryAs(t, s, bob).Users.List().Customer("my_customer").Do(); return err },
			403, "forbidden", forbidden},
		{"non-admin groups", func() error { _, err := directoryAs(t, s, bob).Groups.List().Domain("example.com").Do(); return err },
			403, "forbidden", forbidden},
		{"non-admin members", func() error { _, err := directoryAs(t, s, bob).Members.List("team@example.com").Do(); return err },
			403, "forbidden", forbidden},
		{"suspended admin", func() error {
			_, err := directoryAs(t, s, "suspended.admin@example.com").Users.List().Domain("example.com").Do()
			return err
		}, 403, "forbidden", forbidden},
		{"another domain", func() error { _, err := directoryAs(t, s, alice).Users.List().Domain("other.org").Do(); return err },
			403, "forbidden", forbidden},
		{"another customer", func() error { _, err := directoryAs(t, s, alice).Users.List().Customer("C0other").Do(); return err },
			403, "forbidden", forbidden},
		{"another domain's admin", func() error {
			_, err := directoryAs(t, s, "boss@other.org").Members.List("team@example.com").Do()
			return err
		}, 403, "forbidden", forbidden},
		{"no domain nor customer", func() error { _, err := directoryAs(t, s, alice).Users.List().Do(); return err },
			400, "badRequest", "Bad Request"},
		{"users over 500", func() error {
			_, err := directoryAs(t, s, alice).Users.List().Domain("example.com").MaxResults(501).Do()
			return err
		}, 400, "invalidParameter", "Invalid value '501'. Values must be within the range: [1, 500]"},
		{"drive scope only", func() error {
			_, err := directoryService(t, s, credentials(t, s, alice)).Users.List().Domain("example.com").Do()
			return err
		}, 403, "insufficientPermissions", "Request had insufficient authentication scopes."},
		{"group scope for users", func() error {
			svc := directoryService(t, s, credentials(t, s, alice, admin.AdminDirectoryGroupReadonlyScope))
			_, err := svc.Users.List().Domain("example.com").Do()
			return err
		}, 403, "insufficientPermissions", "Request had insufficient authentication scopes."},
		{"member scope for members", func() error {
			svc := directoryService(t, s, credentials(t, s, alice, admin.AdminDirectoryGroupMemberReadonlyScope))
			_, err := svc.Members.List("team@example.com").Do()
			return err
		}, 0, "", ""},
		{"unknown token", func() error { _, err := static("ya29.bogus").Users.List().Domain("example.com").Do(); return err },
			401, "authError", "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential."},
		{"user's own access token", func() error {
			tok := s.GoogleAccessToken(webClient, alice, time.Hour, admin.AdminDirectoryUserReadonlyScope)
			_, err := static(tok).Users.List().Domain("example.com").Do()
			return err
		}, 0, "", ""},
		{"unimplemented method", func() error { _, err := directoryAs(t, s, alice).Users.Get(alice).Do(); return err },
			501, "notImplemented", "googlefake implements only users.list, groups.list and members.list of the Directory API"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.do()
			if tt.code == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			gerr := wantAPIError(t, err, tt.code, tt.reason)
			item := map[string]string{"insufficientPermissions": "Insufficient Permission", "authError": "Invalid Credentials"}[tt.reason]
			if item == "" {
				item = tt.message
			}
			if gerr.Message != tt.message || gerr.Errors[0].Message != item {
				t.Errorf("error %q %+v, want %q", gerr.Message, gerr.Errors, tt.message)
			}
		})
	}
}

func TestDirectoryRawBodies(t *testing.T) {
	s := newDirectory(t)
	s.AddGroup("team@example.com", bob)
	creds := credentials(t, s, alice, directoryScopes...)
	get := func(path string, q url.Values) (int, map[string]any) {
		t.Helper()
		tok, err := creds.TokenSource.Token()
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodGet, s.DirectoryEndpoint()+"admin/directory/v1/"+path+"?"+q.Encode(), nil)
		req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		return doJSON(t, req)
	}
	tests := []struct {
		name, path string
		q          url.Values
		wantStatus int
		wantKeys   string
		item       func(map[string]any) any // the part whose keys are checked
	}{
		{"users fields", "users", url.Values{"domain": {"example.com"}, "fields": {"users(primaryEmail,suspended,name/fullName)"}}, 200,
			"name,primaryEmail,suspended", firstOf("users")},
		{"user name fields", "users", url.Values{"domain": {"example.com"}, "fields": {"users(name/fullName)"}}, 200,
			"fullName", func(b map[string]any) any { return firstOf("users")(b).(map[string]any)["name"] }},
		{"user free-form field", "users", url.Values{"domain": {"example.com"}, "fields": {"users(emails/address)"}}, 200,
			"address", func(b map[string]any) any { return firstOf("users")(b).(map[string]any)["emails"].([]any)[0] }},
		{"users list fields", "users", url.Values{"domain": {"example.com"}, "fields": {"kind,nextPageToken"}}, 200,
			"kind", func(b map[string]any) any { return b }},
		{"all user fields", "users", url.Values{"domain": {"example.com"}}, 200,
			"agreedToTerms,archived,changePasswordAtNextLogin,creationTime,customerId,emails,id,includeInGlobalAddressList,ipWhitelisted,isAdmin,isDelegatedAdmin,isEnforcedIn2Sv,isEnrolledIn2Sv,isMailboxSetup,kind,lastLoginTime,name,orgUnitPath,primaryEmail,suspended",
			firstOf("users")},
		{"group fields", "groups", url.Values{"customer": {"my_customer"}, "fields": {"groups(email,directMembersCount)"}}, 200,
			"directMembersCount,email", firstOf("groups")},
		{"all group fields", "groups", url.Values{"customer": {"my_customer"}}, 200,
			"adminCreated,directMembersCount,email,id,kind,name", firstOf("groups")},
		{"member fields", "groups/team@example.com/members", url.Values{"fields": {"members(email,type)"}}, 200,
			"email,type", firstOf("members")},
		{"all member fields", "groups/team@example.com/members", url.Values{}, 200,
			"email,id,kind,role,status,type", firstOf("members")},
		{"bad field", "users", url.Values{"domain": {"example.com"}, "fields": {"users(nope)"}}, 400, "code,errors,message",
			func(b map[string]any) any { return b["error"] }},
		{"not found body", "groups/nope@example.com/members", url.Values{}, 404, "code,errors,message",
			func(b map[string]any) any { return b["error"] }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := get(tt.path, tt.q)
			if got := keys(tt.item(body)); status != tt.wantStatus || got != tt.wantKeys {
				t.Errorf("%d %s, want %d %s (%v)", status, got, tt.wantStatus, tt.wantKeys, body)
			}
		})
	}
	// directMembersCount is a JSON string, as int64 fields are in Google's APIs.
	_, body := get("groups", url.Values{"customer": {"my_customer"}})
	if n := firstOf("groups")(body).(map[string]any)["directMembersCount"]; n != "1" {
		t.Errorf("directMembersCount %#v", n)
	}
	// An unknown group's body is exactly Google's.
	_, body = get("groups/nope@example.com/members", url.Values{})
	want := map[string]any{"code": float64(404), "message": "Resource Not Found: groupKey",
		"errors": []any{map[string]any{"message": "Resource Not Found: groupKey", "domain": "global", "reason": "notFound"}}}
	if fmt.Sprint(body["error"]) != fmt.Sprint(want) {
		t.Errorf("body %v\nwant %v", body["error"], want)
	}
}

// firstOf returns the first element of a list field of a body.
func firstOf(field string) func(map[string]any) any {
	return func(b map[string]any) any {
		list, _ := b[field].([]any)
		if len(list) == 0 {
			return nil
		}
		return list[0]
	}
}

func TestDirectoryLatencyAndCalls(t *testing.T) {
	s := newDirectory(t)
	s.AddGroup("team@example.com", bob)
	svc := directoryAs(t, s, alice)
	if _, err := svc.Users.List().Domain("example.com").Do(); err != nil { // fetches the token
		t.Fatal(err)
	}
	s.ResetCalls()
	s.SetLatency(50 * time.Millisecond)
	start := time.Now()
	_, _ = svc.Groups.List().Domain("example.com").Do()
	_, _ = svc.Members.List("team@example.com").Do()
	_, _ = svc.Members.List("missing@example.com").Do()
	_, _ = svc.Users.List().Domain("example.com").Do()
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("4 requests took %v with 50ms latency", d)
	}
	want := map[string]int{"directory.users.list": 1, "directory.groups.list": 1, "directory.members.list": 2}
	if got := s.Calls(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("calls %v, want %v", got, want)
	}
}

func TestDirectoryHelpersPanic(t *testing.T) {
	s := newDirectory(t)
	for name, fn := range map[string]func(){
		"MakeAdmin":         func() { s.MakeAdmin("nobody@example.com") },
		"SuspendUser":       func() { s.SuspendUser("nobody@example.com", true) },
		"RemoveGroupMember": func() { s.RemoveGroupMember("nogroup@example.com", bob) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			fn()
		})
	}
	s.RemoveUser("nobody@example.com") // harmless
}

// Removing a user revokes its tokens, Drive's included.
func TestRemoveUserRevokesTokens(t *testing.T) {
	s := newDirectory(t)
	svc := driveAs(t, s, bob)
	if _, err := svc.Files.List().Do(); err != nil {
		t.Fatal(err)
	}
	tok := s.GoogleAccessToken(webClient, bob, time.Hour, drive.DriveReadonlyScope)
	s.RemoveUser(bob)
	_, err := svc.Files.List().Do()
	wantAPIError(t, err, 401, "authError")
	if status, _ := tokeninfo(t, s, tok); status != 400 {
		t.Errorf("tokeninfo of a removed user's token: %d", status)
	}
}

// Organisations: alpha.example with its secondary domain alpha-sub.example,
// beta.example, and gamma.org, which no test admin administers. An admin
// reads every domain of its own organisation, and gets Google's 403 for
// another organisation's group and 404 for a group that does not exist.
func TestDirectoryOrganizations(t *testing.T) {
	s := newFake(t)
	s.AddOrganization("alpha.example", "alpha-sub.example")
	for _, u := range []string{"admin@alpha.example", "ann@alpha.example", "sue@alpha-sub.example", "admin@beta.example", "bob@beta.example", "gus@gamma.org"} {
		s.AddUser(u)
	}
	s.MakeAdmin("admin@alpha.example")
	s.MakeAdmin("admin@beta.example")
	s.AddGroup("leads@alpha.example", "ann@alpha.example", "team@alpha-sub.example")
	s.AddGroup("team@alpha-sub.example", "sue@alpha-sub.example")
	s.AddGroup("outside@gamma.org", "gus@gamma.org")
	s.AddGroup("eng@beta.example", "bob@beta.example", "leads@alpha.example", "outside@gamma.org")
	alpha, beta := directoryAs(t, s, "admin@alpha.example"), directoryAs(t, s, "admin@beta.example")

	t.Run("lists", func(t *testing.T) {
		tests := []struct {
			name string
			call *admin.UsersListCall
			want string
		}{
			{"my_customer: every domain of the organisation", alpha.Users.List().Customer("my_customer"),
				"admin@alpha.example ann@alpha.example sue@alpha-sub.example"},
			{"a secondary domain", alpha.Users.List().Domain("alpha-sub.example"), "sue@alpha-sub.example"},
			{"the primary domain", alpha.Users.List().Domain("alpha.example"), "admin@alpha.example ann@alpha.example"},
			{"another organisation", beta.Users.List().Customer("my_customer"), "admin@beta.example bob@beta.example"},
		}
		for _, tt := range tests {
			users, _ := allUsers(t, tt.call)
			if got := strings.Join(userEmails(users), " "); got != tt.want {
				t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
			}
		}
		groups, _ := allGroups(t, alpha.Groups.List().Customer("my_customer"))
		if len(groups) != 2 || groups[0].Email != "leads@alpha.example" || groups[1].Email != "team@alpha-sub.example" {
			t.Errorf("alpha's groups: %+v", groups)
		}
		users, _ := allUsers(t, alpha.Users.List().Customer("my_customer"))
		if users[0].CustomerId != users[2].CustomerId {
			t.Errorf("alpha.example's customer %s, alpha-sub.example's %s", users[0].CustomerId, users[2].CustomerId)
		}
		others, _ := allUsers(t, beta.Users.List().Domain("beta.example"))
		if others[0].CustomerId == users[0].CustomerId {
			t.Errorf("beta.example shares alpha's customer %s", users[0].CustomerId)
		}
		_, err := alpha.Users.List().Customer(others[0].CustomerId).Do()
		wantAPIError(t, err, 403, "forbidden")
		_, err = alpha.Groups.List().Domain("beta.example").Do()
		wantAPIError(t, err, 403, "forbidden")
	})

	t.Run("members", func(t *testing.T) {
		const forbidden, notFound = "Not Authorized to access this resource/api", "Resource Not Found: groupKey"
		tests := []struct {
			name    string
			svc     *admin.Service
			group   string
			code    int
			message string
			members int
		}{
			{"own primary domain's group", alpha, "leads@alpha.example", 0, "", 2},
			{"own secondary domain's group", alpha, "team@alpha-sub.example", 0, "", 1},
			{"own group holding other organisations' groups", beta, "eng@beta.example", 0, "", 3},
			{"another organisation's group", beta, "leads@alpha.example", 403, forbidden, 0},
			{"another organisation's secondary domain", beta, "team@alpha-sub.example", 403, forbidden, 0},
			{"a group of an organisation no admin here runs", beta, "outside@gamma.org", 403, forbidden, 0},
			{"the other way round", alpha, "eng@beta.example", 403, forbidden, 0},
			{"a group that does not exist", beta, "gone@gamma.org", 404, notFound, 0},
			{"nor in its own domain", alpha, "gone@alpha.example", 404, notFound, 0},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				members, err := tt.svc.Members.List(tt.group).Do()
				if tt.code == 0 {
					if err != nil || len(members.Members) != tt.members {
						t.Fatalf("members %+v, error %v; want %d members", members, err, tt.members)
					}
					return
				}
				reason := map[int]string{403: "forbidden", 404: "notFound"}[tt.code]
				if gerr := wantAPIError(t, err, tt.code, reason); gerr.Message != tt.message {
					t.Errorf("message %q, want %q", gerr.Message, tt.message)
				}
			})
		}
	})

	t.Run("a domain moved to another organisation", func(t *testing.T) {
		s.AddOrganization("beta.example", "alpha-sub.example")
		if _, err := beta.Members.List("team@alpha-sub.example").Do(); err != nil {
			t.Errorf("beta's admin, now alpha-sub's: %v", err)
		}
		_, err := alpha.Members.List("team@alpha-sub.example").Do()
		wantAPIError(t, err, 403, "forbidden")
	})
}
