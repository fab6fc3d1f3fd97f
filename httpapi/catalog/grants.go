package catalog

import (
	"maps"
	"slices"

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
//
// A small table (at most smallTable sets, or principals) finds them by
// looking through its lists, without a map: a daemon of thousands of
// shared drives holds thousands of tables of a set or two each, and two
// maps a table would weigh more than the grants.
type grantTable struct {
	start      []uint32 // set n's grants are all[start[n]:start[n+1]]
	all        []Grant
	keys       []fm.PermissionSetKey          // the key of set n
	byKey      map[fm.PermissionSetKey]uint32 // nil while the table is small
	principals principalNumbers
}

// smallTable is the most entries a grantTable finds by looking through
// its lists.
const smallTable = 8

func newGrantTable() *grantTable { return &grantTable{start: []uint32{0}} }

// add returns the number of a permission set, giving it one if it is new.
func (g *grantTable) add(set fm.PermissionSet) uint32 {
	if n, ok := g.lookup(set.Key); ok {
		return n
	}
	for _, gr := range fm.GrantsOf(set.Permissions) {
		g.all = append(g.all, Grant{Principal: g.principals.number(gr.Principal), Role: gr.Role, WithLink: gr.WithLink})
	}
	n := uint32(len(g.keys))
	g.keys = append(g.keys, set.Key)
	g.start = append(g.start, uint32(len(g.all)))
	switch {
	case g.byKey != nil:
		g.byKey[set.Key] = n
	case len(g.keys) > smallTable:
		g.byKey = indexOf[fm.PermissionSetKey, uint32](g.keys)
	}
	return n
}

// lookup returns the number of a set the table holds.
func (g *grantTable) lookup(key fm.PermissionSetKey) (uint32, bool) {
	return find(g.byKey, g.keys, key)
}

// view returns what the table holds now, for a Library to keep.
func (g *grantTable) view() grantView {
	n := len(g.keys)
	return grantView{start: g.start[: n+1 : n+1], all: g.all[:len(g.all):len(g.all)], keys: g.keys[:n:n],
		principals: g.principals.view()}
}

// principalNumbers numbers principals in the order they come: names[n] is
// principal n. Past smallTable of them, byName finds them; it is copied
// before a change once a view shares it.
type principalNumbers struct {
	names  []string
	byName map[string]int32
	shared bool
}

// number returns the number of a principal, giving it one if it has none.
func (p *principalNumbers) number(name string) int32 {
	if n, ok := p.lookup(name); ok {
		return n
	}
	n := int32(len(p.names))
	p.names = append(p.names, name)
	switch {
	case p.byName != nil:
		if p.shared {
			p.byName, p.shared = maps.Clone(p.byName), false
		}
		p.byName[name] = n
	case len(p.names) > smallTable:
		p.byName = indexOf[string, int32](p.names)
	}
	return n
}

// lookup returns the number of a principal, and whether it has one.
func (p *principalNumbers) lookup(name string) (int32, bool) { return find(p.byName, p.names, name) }

// find returns the number of k: its index in list, found in byIndex when
// there is one (a table past smallTable).
func find[K comparable, N int32 | uint32](byIndex map[K]N, list []K, k K) (N, bool) {
	if byIndex != nil {
		n, ok := byIndex[k]
		return n, ok
	}
	i := slices.Index(list, k)
	return N(i), i >= 0
}

// indexOf returns a map of each element of list to its index.
func indexOf[K comparable, N int32 | uint32](list []K) map[K]N {
	m := make(map[K]N, 2*len(list))
	for i, k := range list {
		m[k] = N(i)
	}
	return m
}

// view returns the principals numbered now, for a Library to keep.
func (p *principalNumbers) view() principalNumbers {
	p.shared = p.byName != nil
	n := len(p.names)
	return principalNumbers{names: p.names[:n:n], byName: p.byName}
}

// grantView is a grant table as a Library sees it.
type grantView struct {
	start      []uint32
	all        []Grant
	keys       []fm.PermissionSetKey
	principals principalNumbers
}

// grants returns the grants of set n.
func (v *grantView) grants(n uint32) []Grant { return v.all[v.start[n]:v.start[n+1]] }
