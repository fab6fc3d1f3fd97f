package googlefake_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/foldermirror/foldermirror/internal/googlefake"
	"google.golang.org/api/drive/v3"
)

// grantsOn describes a file's permissions as alice lists them: "email role"
// (the domain, or "anyone", for those), with "(deleted)" and the
// inherited-ness of each source ("+own", "+inherited").
func grantsOn(t *testing.T, svc *drive.Service, id string) string {
	t.Helper()
	l, err := svc.Permissions.List(id).SupportsAllDrives(true).
		Fields("permissions(type,emailAddress,domain,role,deleted,permissionDetails(inherited))").Do()
	if err != nil {
		t.Fatalf("permissions of %s: %v", id, err)
	}
	var out []string
	for _, p := range l.Permissions {
		who := p.EmailAddress + p.Domain
		if p.Type == "anyone" {
			who = "anyone"
		}
		s := who + " " + p.Role
		if p.Deleted {
			s += "(deleted)"
		}
		for _, d := range p.PermissionDetails {
			s += map[bool]string{true: "+inherited", false: "+own"}[d.Inherited]
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// With LogItemAlone, permission changes and moves log the item alone (and
// the drive, for its members), while the descendants' permissions change
// all the same; trash still logs the subtree. Without it, every descendant
// whose permissions change is logged.
func TestLogItemAlone(t *testing.T) {
	for _, alone := range []bool{false, true} {
		t.Run(fmt.Sprint("item alone ", alone), func(t *testing.T) {
			s := newFake(t)
			s.LogItemAlone(alone)
			names := map[string]string{}
			mk := func(parent, name string) string {
				id := s.CreateFolder(alice, parent, name)
				names[id] = name
				return id
			}
			a := mk("", "A")
			b := mk(a, "B")
			c := mk(b, "C")
			other := mk("", "Other")
			s.Share(other, googlefake.Permission{Type: "user", Role: "commenter", EmailAddress: carol})
			d := s.CreateSharedDrive("Team", alice)
			names[d] = "Team"
			e := mk(d, "E")
			mk(e, "F")
			mine := newChangeReader(t, s, alice, names)
			team := newChangeReader(t, s, alice, names)
			team.driveID = d
			team.restart()
			svc := driveAs(t, s, alice)

			either := func(deep, itemAlone string) string {
				if alone {
					return itemAlone
				}
				return deep
			}
			var bobs string
			steps := []struct {
				name            string
				mutate          func()
				myDrive, shared string
				// perms: a descendant and what it lists after the step.
				of, perms string
			}{
				{"share", func() {
					bobs = s.Share(a, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: bob})
				}, either("A,B,C", "A"), "", c, "alice@example.com owner+own, bob@example.com reader+inherited"},
				{"share the domain", func() {
					s.Share(b, googlefake.Permission{Type: "domain", Role: "reader", Domain: "example.com", AllowFileDiscovery: true})
				}, either("B,C", "B"), "", c, "alice@example.com owner+own, bob@example.com reader+inherited, example.com reader+inherited"},
				{"unshare", func() { s.Unshare(a, bobs) }, either("A,B,C", "A"), "", c, "alice@example.com owner+own, example.com reader+inherited"},
				{"move under another parent", func() { s.Move(b, other) }, either("B,C", "B"), "", c,
					"alice@example.com owner+own, carol@other.org commenter+inherited, example.com reader+inherited"},
				// Other's owner is B's writer now, and so C's, besides its owner.
				{"new owner", func() { s.Modify(b, func(f *googlefake.File) { f.Owner = bob }) }, either("B,C", "B"), "", c,
					"alice@example.com owner+own+inherited, bob@example.com writer+inherited, carol@other.org commenter+inherited, example.com reader+inherited"},
				// alice's own feed has the drive's change (she is a member),
				// not its items'.
				{"a drive member", func() {
					s.Share(d, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: carol})
				}, "drive:Team", either("E,F,drive:Team", "drive:Team"), e, "alice@example.com organizer+inherited, carol@other.org reader+inherited"},
				{"trash", func() { s.Trash(e) }, "", "E(trashed),F(trashed)", e, "alice@example.com organizer+inherited, carol@other.org reader+inherited"},
			}
			for _, step := range steps {
				step.mutate()
				if got := mine.read(); got != step.myDrive {
					t.Errorf("%s: My Drive changes %q, want %q", step.name, got, step.myDrive)
				}
				if got := team.read(); got != step.shared {
					t.Errorf("%s: shared drive changes %q, want %q", step.name, got, step.shared)
				}
				if got := grantsOn(t, svc, step.of); got != step.perms {
					t.Errorf("%s: %s lists %s, want %s", step.name, names[step.of], got, step.perms)
				}
			}
		})
	}
}

// RemoveUser deletes the account's permissions where they were granted:
// listed deleted, inherited ones too, granting nothing, even to a new
// account of the same address; each item that had one logs a change.
func TestRemoveUserDeletesPermissions(t *testing.T) {
	for _, alone := range []bool{false, true} {
		t.Run(fmt.Sprint("item alone ", alone), func(t *testing.T) {
			s := newFake(t)
			s.LogItemAlone(alone)
			names := map[string]string{}
			a := s.CreateFolder(alice, "", "A")
			b := s.CreateFolder(alice, a, "B")
			d := s.CreateSharedDrive("Team", alice)
			e := s.CreateFolder(alice, d, "E")
			names[a], names[b], names[d], names[e] = "A", "B", "Team", "E"
			s.Share(a, googlefake.Permission{Type: "user", Role: "writer", EmailAddress: bob})
			s.Share(d, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: bob})
			s.Share(a, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: carol})
			everything := newChangeReader(t, s, alice, names)
			everything.tweak = func(c *drive.ChangesListCall) { c.IncludeItemsFromAllDrives(true).SupportsAllDrives(true) }
			if _, err := driveAs(t, s, bob).Files.Get(b).Do(); err != nil {
				t.Fatalf("bob before: %v", err)
			}

			s.RemoveUser(bob)
			want := "A,B,E,drive:Team"
			if alone {
				want = "A,drive:Team"
			}
			if got := everything.read(); got != want {
				t.Errorf("changes %q, want %q", got, want)
			}
			svc := driveAs(t, s, alice)
			for id, want := range map[string]string{
				a: "alice@example.com owner+own, bob@example.com writer(deleted)+own, carol@other.org reader+own",
				b: "alice@example.com owner+own, bob@example.com writer(deleted)+inherited, carol@other.org reader+inherited",
				e: "alice@example.com organizer+inherited, bob@example.com reader(deleted)+inherited",
			} {
				if got := grantsOn(t, svc, id); got != want {
					t.Errorf("%s lists %s, want %s", names[id], got, want)
				}
			}
			s.AddUser(bob) // a new account of the same address
			for _, id := range []string{a, b} {
				_, err := driveAs(t, s, bob).Files.Get(id).Do()
				wantAPIError(t, err, 404, "notFound")
			}
			_, err := driveAs(t, s, bob).Drives.Get(d).Do()
			wantAPIError(t, err, 404, "notFound")
		})
	}
}

// OmitMyDriveDetails leaves out the details of My Drive items' permissions,
// inline and listed, and keeps those of shared drive items.
func TestOmitMyDriveDetails(t *testing.T) {
	s := newFake(t)
	mine := s.CreateFolder(alice, "", "mine")
	d := s.CreateSharedDrive("Team", alice)
	theirs := s.CreateFolder(alice, d, "theirs")
	s.OmitMyDriveDetails(true)
	svc := driveAs(t, s, alice)
	if got := grantsOn(t, svc, mine); got != "alice@example.com owner" {
		t.Errorf("My Drive item lists %s, want no details", got)
	}
	f, err := svc.Files.Get(mine).Fields("permissions(emailAddress,permissionDetails)").Do()
	if err != nil || len(f.Permissions) != 1 || f.Permissions[0].PermissionDetails != nil {
		t.Errorf("inline: %+v %v", f, err)
	}
	if got := grantsOn(t, svc, theirs); got != "alice@example.com organizer+inherited" {
		t.Errorf("shared drive item lists %s, want its details", got)
	}
}
