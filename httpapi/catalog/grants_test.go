package catalog

import (
	"fmt"
	"testing"

	fm "github.com/foldermirror/foldermirror"
)

// A grant table finds its sets and principals the same whether it is small
// (lists looked through) or has grown past smallTable (maps), and each view
// keeps seeing what the table held when it was taken, however it grew after.
func TestGrantTableAcrossItsSmallSize(t *testing.T) {
	g := newGrantTable()
	type taken struct {
		view  grantView
		sets  []fm.PermissionSet
		names []string
	}
	var views []taken
	var sets []fm.PermissionSet
	var names []string
	for i := range 3 * smallTable {
		// Each set names a principal of its own and the first one's.
		own := fmt.Sprintf("user:u%02d@example.com", i)
		set := fm.NewPermissionSet([]fm.Permission{
			{ID: "p0", Type: "user", Role: "reader", EmailAddress: "u00@example.com"},
			{ID: fmt.Sprint("p", i), Type: "user", Role: "writer", EmailAddress: fmt.Sprintf("u%02d@example.com", i)},
		})
		if n := g.add(set); int(n) != i {
			t.Fatalf("set %d numbered %d", i, n)
		}
		if n := g.add(set); int(n) != i {
			t.Fatalf("set %d, added again, numbered %d", i, n)
		}
		sets, names = append(sets, set), append(names, own)
		views = append(views, taken{g.view(), sets, names})
	}
	for i, v := range views {
		for n, set := range v.sets {
			if got := v.view.keys[n]; got != set.Key {
				t.Errorf("view %d: set %d has key %x, want %x", i, n, got, set.Key)
			}
			if got, ok := g.lookup(set.Key); !ok || int(got) != n {
				t.Errorf("the table finds set %d as %d, %v", n, got, ok)
			}
		}
		for n, name := range v.names {
			if got, ok := v.view.principals.lookup(name); !ok || int(got) != n {
				t.Errorf("view %d: principal %s numbered %d, %v; want %d", i, name, got, ok, n)
			}
		}
		for _, later := range names[len(v.names):] {
			if got, ok := v.view.principals.lookup(later); ok {
				t.Errorf("view %d (%d principals) finds %s, numbered after it was taken, as %d", i, len(v.names), later, got)
			}
		}
	}
	if g.byKey == nil || g.principals.byName == nil {
		t.Errorf("a table of %d sets and principals finds them without maps", len(sets))
	}
	if small := views[smallTable-1].view; small.principals.byName != nil {
		t.Errorf("a table of %d principals keeps a map of them", smallTable)
	}
}
