package foldermirror_test

import (
	"fmt"
	"strings"
	"testing"

	fm "github.com/foldermirror/foldermirror"
)

// Permissions for the tests, by the short names the cases use.
var (
	ownerAnn    = fm.Permission{ID: "01", Type: "user", Role: "owner", EmailAddress: "ann@example.com"}
	ownerBen    = fm.Permission{ID: "02", Type: "user", Role: "owner", EmailAddress: "ben@example.com"}
	readerBen   = fm.Permission{ID: "02", Type: "user", Role: "reader", EmailAddress: "ben@example.com", DisplayName: "Ben"}
	writerBen   = fm.Permission{ID: "02", Type: "user", Role: "writer", EmailAddress: "ben@example.com"}
	teamReader  = fm.Permission{ID: "03", Type: "group", Role: "reader", EmailAddress: "team@example.com"}
	domainFound = fm.Permission{ID: "09k", Type: "domain", Role: "reader", Domain: "example.com", AllowFileDiscovery: true}
	domainLink  = fm.Permission{ID: "09k", Type: "domain", Role: "reader", Domain: "example.com"}
	anyoneFound = fm.Permission{ID: "anyone", Type: "anyone", Role: "reader", AllowFileDiscovery: true}
	anyoneLink  = fm.Permission{ID: "anyoneWithLink", Type: "anyone", Role: "commenter"}
	hiddenA     = fm.Permission{ID: "05", Type: "user", Role: "reader", DisplayName: "Hidden A"}
	hiddenB     = fm.Permission{ID: "06", Type: "user", Role: "reader", DisplayName: "Hidden B"}
)

// with returns p changed by fn.
func with(p fm.Permission, fn func(*fm.Permission)) fm.Permission {
	fn(&p)
	return p
}

func also(p fm.Permission) fm.Permission {
	return with(p, func(p *fm.Permission) { p.AlsoInherited = true })
}

func role(p fm.Permission, r string) fm.Permission {
	return with(p, func(p *fm.Permission) { p.Role = r })
}

func TestInheritPermissions(t *testing.T) {
	// Many principals, past those a merge looks up one by one: its own
	// readers 0-19, the parent's writers 10-39 (and 5 again, last).
	user := func(i int, role string) fm.Permission {
		return fm.Permission{ID: fmt.Sprintf("u%02d", i), Type: "user", Role: role, EmailAddress: fmt.Sprintf("u%02d@example.com", i)}
	}
	var manyOwn, manyParent, manyList []fm.Permission
	for i := range 40 {
		if i < 20 {
			manyOwn = append(manyOwn, user(i, "reader"))
		}
		if i >= 10 {
			manyParent = append(manyParent, user(i, "writer"))
		}
		manyList = append(manyList, user(i, map[bool]string{true: "reader", false: "writer"}[i < 10]))
	}
	manyParent = append(manyParent, user(5, "commenter"))
	manyList[5] = user(5, "commenter")
	tests := []struct {
		name        string
		own, parent []fm.Permission
		// wantList and wantOwn are what Drive lists (googlefake, access.go);
		// unknown: Drive must be asked.
		wantList, wantOwn []fm.Permission
		unknown           bool
	}{
		{"nothing of its own: the parent's list in the parent's order (not by ID), the owner a writer",
			nil, []fm.Permission{teamReader, ownerAnn, readerBen},
			[]fm.Permission{teamReader, role(ownerAnn, "writer"), readerBen}, nil, false},
		{"its own owner, the parent's another: both, its own first",
			[]fm.Permission{ownerBen}, []fm.Permission{ownerAnn},
			[]fm.Permission{ownerBen, role(ownerAnn, "writer")}, []fm.Permission{ownerBen}, false},
		{"its own in their order, then the parent's in its order, a principal merged where it first came",
			[]fm.Permission{anyoneLink, ownerAnn, teamReader}, []fm.Permission{domainFound, readerBen, ownerAnn, teamReader, anyoneFound},
			[]fm.Permission{role(anyoneFound, "commenter"), ownerAnn, teamReader, domainFound, readerBen},
			[]fm.Permission{also(role(anyoneFound, "commenter")), ownerAnn, teamReader}, false},
		{"the same owner as the parent's: the owner, once",
			[]fm.Permission{ownerAnn}, []fm.Permission{ownerAnn, readerBen},
			[]fm.Permission{ownerAnn, readerBen}, []fm.Permission{ownerAnn}, false},
		{"an own role below the inherited one: the inherited, the own kept as it is",
			[]fm.Permission{ownerAnn, readerBen}, []fm.Permission{writerBen},
			[]fm.Permission{ownerAnn, with(writerBen, func(p *fm.Permission) { p.DisplayName = "Ben" })},
			[]fm.Permission{ownerAnn, readerBen}, false},
		{"an own role above the inherited one; the display name it lacks from the inherited one",
			[]fm.Permission{writerBen}, []fm.Permission{readerBen},
			[]fm.Permission{with(writerBen, func(p *fm.Permission) { p.DisplayName = "Ben" })},
			[]fm.Permission{with(writerBen, func(p *fm.Permission) { p.DisplayName = "Ben" })}, false},
		{"an own link-only domain under a discoverable one: discoverable, and said to be inherited too",
			[]fm.Permission{domainLink}, []fm.Permission{domainFound},
			[]fm.Permission{domainFound}, []fm.Permission{also(domainFound)}, false},
		{"an own discoverable domain, inherited too, still discoverable above: known",
			[]fm.Permission{also(domainFound)}, []fm.Permission{domainFound},
			[]fm.Permission{domainFound}, []fm.Permission{also(domainFound)}, false},
		{"an own discoverable domain, inherited too, gone above: Drive must say",
			[]fm.Permission{ownerAnn, also(domainFound)}, nil, nil, nil, true},
		{"an own discoverable domain, inherited too, link-only above now: Drive must say",
			[]fm.Permission{also(domainFound)}, []fm.Permission{domainLink}, nil, nil, true},
		{"an own link-only domain, inherited too, gone above: link-only, its own alone",
			[]fm.Permission{also(domainLink)}, nil,
			[]fm.Permission{domainLink}, []fm.Permission{domainLink}, false},
		{"an own discoverable domain not inherited: its own, whatever comes above",
			[]fm.Permission{domainFound}, []fm.Permission{domainLink},
			[]fm.Permission{domainFound}, []fm.Permission{also(domainFound)}, false},
		{"anyone with the link under anyone discoverable: one permission, the discoverable ID, the higher role",
			[]fm.Permission{anyoneLink}, []fm.Permission{anyoneFound},
			[]fm.Permission{role(anyoneFound, "commenter")}, []fm.Permission{also(role(anyoneFound, "commenter"))}, false},
		{"anyone with the link, inherited too and link-only: the parent's gone, its own ID",
			[]fm.Permission{also(anyoneLink)}, []fm.Permission{},
			[]fm.Permission{anyoneLink}, []fm.Permission{anyoneLink}, false},
		{"users and groups are never said to be inherited too",
			[]fm.Permission{teamReader}, []fm.Permission{teamReader},
			[]fm.Permission{teamReader}, []fm.Permission{teamReader}, false},
		{"users without an e-mail are told apart by ID",
			[]fm.Permission{hiddenA}, []fm.Permission{hiddenB},
			[]fm.Permission{hiddenA, hiddenB}, []fm.Permission{hiddenA}, false},
		{"an opaque own permission: Drive must say",
			[]fm.Permission{with(ownerAnn, func(p *fm.Permission) { p.Opaque = true })}, nil, nil, nil, true},
		{"flags of the parent's list are not inherited",
			nil, []fm.Permission{also(domainFound)}, []fm.Permission{domainFound}, nil, false},
		{"many principals: each once, where it first came, with its highest role",
			manyOwn, manyParent, manyList, manyOwn, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			list, own, known := fm.InheritPermissions(tt.own, tt.parent)
			if known == tt.unknown {
				t.Fatalf("known %v, want %v (list %s)", known, !tt.unknown, describe(list))
			}
			if got, want := describe(list), describe(tt.wantList); got != want {
				t.Errorf("list\n got %s\nwant %s", got, want)
			}
			if got, want := describe(own), describe(tt.wantOwn); got != want {
				t.Errorf("own\n got %s\nwant %s", got, want)
			}
		})
	}
}

func TestOwnPermission(t *testing.T) {
	tests := []struct {
		listed       fm.Permission
		role         string
		inheritedToo bool
		want         fm.Permission
	}{
		{writerBen, "reader", true, role(writerBen, "reader")},
		{domainFound, "reader", true, also(domainFound)},
		{anyoneLink, "reader", false, role(anyoneLink, "reader")},
		{with(teamReader, func(p *fm.Permission) { p.Opaque = true }), "reader", false, teamReader},
	}
	for _, tt := range tests {
		if got := fm.OwnPermission(tt.listed, tt.role, tt.inheritedToo); got != tt.want {
			t.Errorf("OwnPermission(%+v, %s, %v) = %+v, want %+v", tt.listed, tt.role, tt.inheritedToo, got, tt.want)
		}
	}
}

// describe renders permissions one a line, every field shown.
func describe(perms []fm.Permission) string {
	var b strings.Builder
	for _, p := range perms {
		fmt.Fprintf(&b, "\n  %+v", p)
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}

func TestListFollows(t *testing.T) {
	opaque := fm.OpaquePermissions([]fm.Permission{ownerAnn})
	// Many principals (a merge looks them up in a map), first: the merges
	// of ListFollows are used again by the cases after it.
	var many []fm.Permission
	for i := range 30 {
		many = append(many, fm.Permission{ID: fmt.Sprint(i), Type: "user", Role: "reader", EmailAddress: fmt.Sprintf("u%d@example.com", i)})
	}
	tests := []struct {
		name              string
		list, own, parent []fm.Permission
		want              bool
	}{
		{"many principals", many, many[:20], many[10:], true},
		{"many principals, one missing", many[1:], many[:20], many[10:], false},
		{"its own and its parent's", []fm.Permission{ownerAnn, readerBen}, []fm.Permission{ownerAnn}, []fm.Permission{readerBen}, true},
		{"a grant from nowhere (a parent out of sight)", []fm.Permission{ownerAnn, readerBen}, []fm.Permission{ownerAnn}, nil, false},
		{"a parent's grant missing (inheritance disabled)", []fm.Permission{ownerAnn}, []fm.Permission{ownerAnn}, []fm.Permission{readerBen}, false},
		{"another order", []fm.Permission{readerBen, ownerAnn}, []fm.Permission{ownerAnn}, []fm.Permission{readerBen}, false},
		// Drive lists C's own link-only domain discoverable under A's: known
		// from both lists, even where AlsoInherited would hide it.
		{"an own discoverability a link-only parent's does not hide", []fm.Permission{domainFound},
			[]fm.Permission{also(domainFound)}, []fm.Permission{domainLink}, true},
		{"opaque", []fm.Permission{ownerAnn}, opaque, nil, false},
	}
	for _, tt := range tests {
		if got := fm.ListFollows(tt.list, tt.own, tt.parent); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
	if opaque[0] != with(ownerAnn, func(p *fm.Permission) { p.Opaque = true }) {
		t.Errorf("OpaquePermissions: %+v", opaque)
	}
}
