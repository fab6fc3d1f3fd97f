package foldermirror

import (
	"slices"
	"strings"
	"sync"
)

// Inherited permissions.
//
// Drive lists, for a folder, its effective permissions: those set on the
// folder itself and those it inherits from its parent (which inherits from
// its own, and so on), merged per principal. Each listed permission carries
// permissionDetails, one per source: its role, and whether it is inherited.
// A sync keeps, for each folder, its list and its own permissions (the
// sources that are not inherited); when a parent's list changes, a
// descendant's list is made again from its own permissions and its
// parent's new list, without asking Drive. The rule is Drive's, as
// googlefake models it (access.go, Server.state) after what Drive answers:
//
//   - one permission per principal: the user, group or domain of a
//     permission ID, and everyone for both anyone IDs ("anyone" and
//     "anyoneWithLink"), with the highest role of its sources;
//   - the parent's owner is inherited as a writer: a My Drive file owned by
//     someone else gives its owner that role; the folder's own owner keeps
//     the owner role, above the writer it would inherit;
//   - allowFileDiscovery is true when any source is discoverable, and
//     anyone's ID follows it ("anyone" when discoverable, else
//     "anyoneWithLink");
//   - the display name and photo are the folder's own permission's, or,
//     when it has none, the inherited one's;
//   - the list is in Drive's order: the folder's own permissions first, in
//     the order its own set keeps them (Drive's, for the own set is taken
//     from Drive's list), then its parent's list, in that list's order; a
//     principal merged from several sources stands where it first came.
//     A folder with no permission of its own has its parent's list in the
//     parent's order. Nothing here sorts a list.
//
// What Drive's answers do not tell, and what is done about it:
//
//   - Which source made a merged domain or anyone permission discoverable.
//     Drive lists one permission, discoverable if any source is, with the
//     role of each source but not its discoverability. When the folder also
//     inherits one (its own permission is AlsoInherited) and the listed one
//     is discoverable, the folder's own may or may not be: it matters only
//     once the inherited one is gone or no longer discoverable, and then the
//     folder is read from Drive again (InheritPermissions answers that it
//     cannot tell).
//   - Where a permission without permissionDetails comes from, and the list
//     of a folder with several parents (it inherits from each, and a library
//     keeps one) or with inheritance disabled (inheritedPermissionsDisabled).
//     Such a folder's own permissions are its whole list, each Opaque, and
//     it is read from Drive again whenever its parent's list changes. So is
//     any folder whose list, as Drive gave it, is not the one the rule makes
//     from its own permissions and its parent's list (ListFollows): Drive
//     knows something its answers do not say (a parent out of sight, say).
//   - The display name and photo of each source: Drive gives one per
//     principal (they are the account's), so a merged permission keeps what
//     was listed. Documented limitation: a source that named a principal
//     differently from the others would not be told apart.
//   - Drive's order of a list is not documented. It is not by permission
//     ID (the owner usually comes first); googlefake lists the file's own
//     permissions first (its owner, then the others in the order they were
//     granted), then what it inherits in the parent's order, and the lists
//     made here follow the same rule. Should Drive order a list otherwise,
//     the list would not follow (ListFollows compares in order), and that
//     folder would be read from Drive rather than made: right, at a call
//     each. Limitation: a shared-drive folder with no permission of its own
//     is never read (hasAugmentedPermissions says it only inherits), so its
//     list, made, is its parent's in the parent's order: should Drive order
//     such a list otherwise, it would differ from Drive's in order only,
//     never in what it grants.

// InheritPermissions makes a folder's list, as Drive would list it, from the
// folder's own permissions (as its own set keeps them) and its parent's
// list; it also returns the folder's own permissions as Drive would now
// list them (their discoverability, display names and AlsoInherited follow
// the merge). known is false when Drive's answers do not tell the list (an
// Opaque own permission, or an own discoverability hidden by an inherited
// one now gone): the folder must then be read from Drive.
func InheritPermissions(own, parent []Permission) (list, ownListed []Permission, known bool) {
	var m merge
	if !m.inherit(own, parent, true) {
		return nil, nil, false
	}
	list, ownListed = m.result()
	return list, ownListed, true
}

// inherit merges own (first) and parent's list into m, as
// InheritPermissions does; alsoInherited says whether own's AlsoInherited
// counts (ListFollows ignores it). It returns false where Drive's answers do
// not tell the list.
func (m *merge) inherit(own, parent []Permission, alsoInherited bool) bool {
	m.reserve(len(own) + len(parent))
	for _, o := range own {
		if o.Opaque {
			return false
		}
		m.add(o, true, alsoInherited)
	}
	for _, p := range parent {
		p.Role = inheritedRole(p.Role)
		m.add(p, false, false)
	}
	for _, s := range m.sources {
		if s.hidden && !s.inheritedDiscoverable {
			return false // what the inherited one hid now shows
		}
	}
	return true
}

// ListFollows tells whether a folder's list, as Drive gave it, is the one
// InheritPermissions makes from the folder's own permissions and its
// parent's list (as Drive gave it too). When it is not, Drive knows of the
// folder what its answers do not say (a parent out of the caller's sight,
// inheritance disabled, an order of its own...): the folder's own
// permissions should then be OpaquePermissions(list), so that it is read
// from Drive rather than made. An Opaque own set follows nothing.
func ListFollows(list, own, parent []Permission) bool {
	// Both lists are Drive's: an own discoverability a parent's would hide
	// is known here (the parent's is not discoverable, or the listed one is
	// not), so AlsoInherited does not matter.
	m := merges.Get().(*merge)
	follows := m.inherit(own, parent, false) && slices.Equal(m.list, list)
	clear(m.list[:cap(m.list)]) // keeps no strings alive
	m.list, m.sources, m.keys, m.at = m.list[:0], m.sources[:0], m.keys[:0], nil
	merges.Put(m)
	return follows
}

// merges are merges whose slices ListFollows uses again: its lists are
// only compared.
var merges = sync.Pool{New: func() any { return new(merge) }}

// OpaquePermissions returns a folder's list as its own permissions, each
// Opaque: Drive's answers do not tell how it follows its parent's.
func OpaquePermissions(list []Permission) []Permission {
	own := make([]Permission, len(list))
	for i, p := range list {
		p.AlsoInherited, p.Opaque = false, true
		own[i] = p
	}
	return own
}

// OwnPermission returns the part of a listed permission that is set on the
// folder itself, as the folder's own set keeps it: the listed permission
// with the role of the folder's own sources (role), and, for domain and
// anyone permissions, whether the folder inherits one too (inheritedToo).
func OwnPermission(listed Permission, role string, inheritedToo bool) Permission {
	listed.Role = role
	listed.AlsoInherited = inheritedToo && mergesDiscovery(listed.Type)
	listed.Opaque = false
	return listed
}

// inheritedRole is the role a folder inherits from a role of its parent's
// list: the same, but for the owner's, which is a writer's.
func inheritedRole(role string) string {
	if role == RoleOwner.String() {
		return RoleWriter.String()
	}
	return role
}

// mergesDiscovery tells whether permissions of a type have allowFileDiscovery.
func mergesDiscovery(typ string) bool { return typ == "domain" || typ == "anyone" }

// merge merges permissions per principal, the folder's own first, each
// principal where it first came. A list has a few principals: they are
// looked up one by one, and in a map past mergeScan.
type merge struct {
	list    []Permission
	sources []sources // per index of list
	keys    []principalKey
	at      map[principalKey]int // principal → index in list, past mergeScan
}

// mergeScan is how many principals a merge looks up one by one.
const mergeScan = 16

// sources says where a merged permission comes from.
type sources struct {
	// own: the folder's own, with that role.
	own     bool
	ownRole string
	// inherited: from the parent's list; inheritedDiscoverable: so, and
	// discoverable.
	inherited, inheritedDiscoverable bool
	// hidden: the folder's own discoverability is not known (an own
	// permission, AlsoInherited, listed discoverable).
	hidden bool
}

// reserve makes room for n permissions.
func (m *merge) reserve(n int) {
	if n <= cap(m.list) && n <= cap(m.sources) {
		return
	}
	m.list = make([]Permission, 0, n)
	m.sources = make([]sources, 0, n)
	m.keys = make([]principalKey, 0, min(n, mergeScan))
}

// index returns the index in list of a principal's permission.
func (m *merge) index(key principalKey) (int, bool) {
	if m.at != nil {
		i, ok := m.at[key]
		return i, ok
	}
	for i := range m.keys {
		if m.keys[i] == key {
			return i, true
		}
	}
	return 0, false
}

// add merges p, the folder's own or its parent's; alsoInherited says
// whether an own permission's AlsoInherited counts.
func (m *merge) add(p Permission, own, alsoInherited bool) {
	hidden := own && alsoInherited && p.AlsoInherited && p.AllowFileDiscovery
	p.AlsoInherited, p.Opaque = false, false
	key := principalOf(p)
	i, ok := m.index(key)
	if ok {
		m.list[i] = merged(m.list[i], p)
	} else {
		i = len(m.list)
		m.list = append(m.list, p)
		m.sources = append(m.sources, sources{})
		switch {
		case m.at != nil:
			m.at[key] = i
		case len(m.keys) < mergeScan:
			m.keys = append(m.keys, key)
		default:
			m.at = make(map[principalKey]int, 2*mergeScan)
			for j, k := range m.keys {
				m.at[k] = j
			}
			m.at[key] = i
		}
	}
	s := &m.sources[i]
	if !own {
		s.inherited = true
		s.inheritedDiscoverable = s.inheritedDiscoverable || p.AllowFileDiscovery
		return
	}
	if !s.own || ParseRole(p.Role) > ParseRole(s.ownRole) {
		s.ownRole = p.Role
	}
	s.own, s.hidden = true, s.hidden || hidden
}

// merged merges a permission into another of the same principal.
func merged(into, p Permission) Permission {
	if ParseRole(p.Role) > ParseRole(into.Role) {
		into.Role = p.Role
	}
	into.AllowFileDiscovery = into.AllowFileDiscovery || p.AllowFileDiscovery
	if into.DisplayName == "" {
		into.DisplayName = p.DisplayName
	}
	if into.PhotoLink == "" {
		into.PhotoLink = p.PhotoLink
	}
	if into.Type == "anyone" {
		into.ID = anyoneID(into.AllowFileDiscovery)
	}
	return into
}

// result returns the merged list in the order merged (Drive's: the own
// first, then the parent's), and the folder's own permissions as listed, in
// the same order.
func (m *merge) result() (list, own []Permission) {
	for i, p := range m.list {
		if s := m.sources[i]; s.own {
			own = append(own, OwnPermission(p, s.ownRole, s.inherited))
		}
	}
	return m.list, own
}

// principalKey names who a permission is for: by type and permission ID
// for a user, group or domain (Drive gives a principal the same ID on
// every file), by e-mail address or domain without an ID; anyone is
// everyone, whose ID depends on its discoverability.
type principalKey struct {
	typ, name string
	byID      bool
}

func principalOf(p Permission) principalKey {
	switch {
	case p.Type == "anyone":
		return principalKey{typ: p.Type}
	case p.ID == "":
		return principalKey{typ: p.Type, name: strings.ToLower(p.EmailAddress + p.Domain)}
	}
	return principalKey{typ: p.Type, name: p.ID, byID: true}
}

// anyoneID is the ID Drive gives an anyone permission.
func anyoneID(discoverable bool) string {
	if discoverable {
		return "anyone"
	}
	return "anyoneWithLink"
}
