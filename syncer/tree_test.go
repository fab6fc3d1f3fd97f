package syncer

import (
	"slices"
	"testing"
)

func n(id string, restricted bool, parents ...string) *node {
	x := &node{parents: parents}
	x.ID = id
	x.OwnRestrictedDownload = restricted
	return x
}

func TestPlaceInTree(t *testing.T) {
	root := n("root", false)
	listed := map[string]*node{}
	for _, x := range []*node{
		root,
		n("a", true, "root"),
		n("a1", false, "a"),
		n("b", false, "root"),
		// several parents: the one nearest the root wins.
		n("deep", false, "a1", "b"),
		// a cycle reachable from the root, and one that is not.
		n("c1", false, "c2", "b"),
		n("c2", false, "c1"),
		n("x1", false, "x2"),
		n("x2", false, "x1"),
		// a parent outside the library, and itself as parent.
		n("orphan", false, "elsewhere"),
		n("self", false, "self", "a1"),
	} {
		listed[x.ID] = x
	}
	order := placeInTree(root, listed, &oddities{})
	got := map[string]string{}
	seen := map[string]bool{}
	for _, x := range order {
		if x.ParentID != "" && !seen[x.ParentID] {
			t.Errorf("%s comes before its parent %s", x.ID, x.ParentID)
		}
		seen[x.ID] = true
		got[x.ID] = x.ParentID
	}
	want := map[string]string{"root": "", "a": "root", "a1": "a", "b": "root", "deep": "b", "c1": "b", "c2": "c1", "self": "a1"}
	if len(got) != len(want) {
		t.Errorf("placed %v, want %v", got, want)
	}
	for id, p := range want {
		if got[id] != p {
			t.Errorf("%s: parent %q, want %q", id, got[id], p)
		}
	}
	var restricted []string
	for _, x := range order {
		if x.RestrictedDownload {
			restricted = append(restricted, x.ID)
		}
	}
	slices.Sort(restricted)
	if !slices.Equal(restricted, []string{"a", "a1", "self"}) {
		t.Errorf("restricted %v", restricted)
	}
}
