package catalog

import (
	"maps"

	fm "github.com/foldermirror/foldermirror"
)

// Grant is what a folder's permissions give one principal, its principal
// numbered within the library.
type Grant struct {
	Principal int32
	Role      fm.Role
	// WithLink: a link grant, which lets the principal open the folder but
	// does not list it.
	WithLink bool
}

// grantTable holds the grants of each of a library's permission sets, each
// distinct set once, and numbers the principals they name. It grows as
// sets come; it never changes what it holds, so that every Library made
// from it keeps seeing what there was when it was made (views are slices
// that stop at their own length). One goroutine at a time changes it.
type grantTable struct {
	start []uint32 // set n's grants are all[start[n]:start[n+1]]
	all   []Grant
	keys  []fm.PermissionSetKey // the key of set n
	byKey map[fm.PermissionSetKey]uint32
	// principals is copied before a change once a view shares it.
	principals map[string]int32
	shared     bool
}

func newGrantTable() *grantTable {
	return &grantTable{start: []uint32{0}, byKey: map[fm.PermissionSetKey]uint32{}, principals: map[string]int32{}}
}

// add returns the number of a permission set, giving it one if it is new.
func (g *grantTable) add(set fm.PermissionSet) uint32 {
	if n, ok := g.byKey[set.Key]; ok {
		return n
	}
	for _, gr := range fm.GrantsOf(set.Permissions) {
		g.all = append(g.all, Grant{Principal: g.number(gr.Principal), Role: gr.Role, WithLink: gr.WithLink})
	}
	n := uint32(len(g.keys))
	g.keys = append(g.keys, set.Key)
	g.start = append(g.start, uint32(len(g.all)))
	g.byKey[set.Key] = n
	return n
}

// number returns the number of a principal, giving it one if it has none.
func (g *grantTable) number(p string) int32 {
	if n, ok := g.principals[p]; ok {
		return n
	}
	if g.shared {
		g.principals, g.shared = maps.Clone(g.principals), false
	}
	n := int32(len(g.principals))
	g.principals[p] = n
	return n
}

// lookup returns the number of a set the table holds.
func (g *grantTable) lookup(key fm.PermissionSetKey) (uint32, bool) {
	n, ok := g.byKey[key]
	return n, ok
}

// view returns what the table holds now, for a Library to keep.
func (g *grantTable) view() grantView {
	g.shared = true
	n := len(g.keys)
	return grantView{start: g.start[: n+1 : n+1], all: g.all[:len(g.all):len(g.all)], keys: g.keys[:n:n], principals: g.principals}
}

// grantView is a grant table as a Library sees it.
type grantView struct {
	start      []uint32
	all        []Grant
	keys       []fm.PermissionSetKey
	principals map[string]int32
}

// grants returns the grants of set n.
func (v *grantView) grants(n uint32) []Grant { return v.all[v.start[n]:v.start[n+1]] }
