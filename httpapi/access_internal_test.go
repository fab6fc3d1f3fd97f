package httpapi

import (
	"context"
	"errors"
	"fmt"
	"testing"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/httpapi/auth"
	"github.com/foldermirror/foldermirror/httpapi/catalog"
)

// setsIndex is a library of a root and its children, the children given
// permission sets in turn.
type setsIndex struct {
	sets     []fm.PermissionSet
	children int
}

func (x *setsIndex) Library(context.Context, string) (*fm.LibraryState, error) {
	return &fm.LibraryState{ID: "lib", RootID: "root", Revision: 1}, nil
}

func (x *setsIndex) ReadLibrary(ctx context.Context, _ string, r fm.LibraryReader) (*fm.LibraryState, error) {
	for _, set := range x.sets {
		if err := r.PermissionSet(set); err != nil {
			return nil, err
		}
	}
	if err := r.Folder(&fm.Folder{ID: "root", Name: "Root", PermissionSet: x.sets[0].Key}); err != nil {
		return nil, err
	}
	for i := range x.children {
		f := &fm.Folder{ID: fmt.Sprintf("c%03d", i), ParentID: "root", Name: fmt.Sprintf("Child %03d", i), PermissionSet: x.sets[i%len(x.sets)].Key}
		if err := r.Folder(f); err != nil {
			return nil, err
		}
	}
	return x.Library(ctx, "lib")
}

func (x *setsIndex) Changes(context.Context, string, uint64) (*fm.ChangeSet, error) {
	return nil, errors.New("no changes kept")
}

func (x *setsIndex) PermissionSet(context.Context, string, fm.PermissionSetKey) ([]fm.Permission, error) {
	return nil, fm.Errorf(fm.ENOTFOUND, "no such set")
}

// TestAccessMemo checks that a listing's accessMemo gives each folder the
// access the viewer has to it, over more sets than it keeps, visited in a
// cycle and then in another order.
func TestAccessMemo(t *testing.T) {
	roles := []string{"reader", "writer", "commenter", "fileOrganizer"}
	var sets []fm.PermissionSet
	for i := range 3 * accessMemoSize / 2 {
		perms := []fm.Permission{{ID: "o", Type: "user", Role: "owner", EmailAddress: "s@example.com"}}
		switch i % 3 {
		case 0: // alice directly, a role by set
			perms = append(perms, fm.Permission{ID: "a", Type: "user", Role: roles[i%len(roles)], EmailAddress: "alice@example.com"})
		case 1: // alice by a link only
			perms = append(perms, fm.Permission{ID: "l", Type: "anyone", Role: roles[i%len(roles)], AllowFileDiscovery: false})
		default: // not alice
			perms = append(perms, fm.Permission{ID: "b", Type: "user", Role: "writer", EmailAddress: fmt.Sprintf("bob%d@example.com", i)})
		}
		sets = append(sets, fm.NewPermissionSet(perms))
	}
	idx := &setsIndex{sets: sets, children: 5 * len(sets)}
	lib, err := catalog.New(idx, "lib", nil).Update(context.Background(), &fm.LibraryState{ID: "lib", RootID: "root", Revision: 1})
	if err != nil {
		t.Fatal(err)
	}
	id := &auth.Identity{Email: "alice@example.com", Domain: "example.com", OrgDomain: "example.com", Method: auth.MethodGoogleIDToken}
	v := viewerOf(lib, "example.com", newCaller(id))
	var refs []catalog.Ref
	lib.Children(lib.Root(), func(r catalog.Ref) bool { refs = append(refs, r); return true })
	if len(refs) != idx.children {
		t.Fatalf("%d children, want %d", len(refs), idx.children)
	}
	for i := range len(refs) / 2 { // then every other child, from both ends
		refs = append(refs, refs[2*i], refs[len(refs)-1-2*i])
	}
	memo := accessMemo{viewer: &v}
	distinct := map[access]bool{}
	for i, r := range refs {
		want := v.access(r)
		distinct[want] = true
		if got := memo.of(r); got != want {
			t.Errorf("visit %d, %s: access %+v, want %+v", i, lib.View(r).ID, got, want)
		}
	}
	if len(distinct) < 3 {
		t.Errorf("the sets give %d distinct accesses, want at least 3: %v", len(distinct), distinct)
	}
}
