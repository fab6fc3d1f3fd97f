package googlefake

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
)

// roleRank orders Drive roles; a higher rank permits more.
var roleRank = map[string]int{
	"reader": 1, "commenter": 2, "writer": 3, "fileOrganizer": 4, "organizer": 5, "owner": 6,
}

// computed is the effective state of a file: what it has directly plus what
// it inherits through every parent. Values are immutable once built, so a
// change log entry can keep one as the state before a change.
type computed struct {
	grants  []grant // in Drive's order (see merger)
	trashed bool
}

// grant is one effective permission: the merge of every permission for one
// principal on the file and its ancestors.
type grant struct {
	id      string
	key     string     // principal: "user:EMAIL", "group:EMAIL", "domain:NAME" or "anyone"
	perm    Permission // Role is the highest, AllowFileDiscovery true if any source is
	details []detail
}

// detail is one source of a grant, as Drive's permissionDetails.
type detail struct {
	kind string // "file", or "member" for a shared drive membership
	role string
	from string // ID of the file the permission is set on
}

// equal reports whether two states grant the same and are equally trashed.
func (c *computed) equal(o *computed) bool {
	if c == nil || o == nil {
		return c == o
	}
	return c.trashed == o.trashed && slices.EqualFunc(c.grants, o.grants, func(a, b grant) bool {
		return a.id == b.id && a.perm == b.perm && slices.Equal(a.details, b.details)
	})
}

// state returns the effective state of a file, from the cache when it can.
// Every mutation drops the cached states of the files it may affect. Only
// the states of files with children are kept: the others are asked for
// once a listing and cost little to redo, and a world of a million folders
// is mostly such files.
func (s *Server) state(f *File) *computed {
	c, _ := s.stateCut(f)
	return c
}

// stateCut returns the effective state of a file, and the files whose state
// was being computed when a cycle of parents led back to them: nothing more
// comes that way, since what would is already there (roles and
// discoverability only grow around a cycle). A state cut short at another
// file than itself lacks what that file will have, so it is not cached:
// states do not depend on the order they are asked in.
func (s *Server) stateCut(f *File) (*computed, []string) {
	// Looking a file up in a map of a million costs a cache miss or two:
	// a file without children is not looked for in the cache. (One may
	// still be there, cached while it had some, and still right.)
	cached := len(s.children[f.ID]) > 0
	if cached {
		if c, ok := s.cache[f.ID]; ok {
			return c, nil
		}
	}
	if s.computing[f.ID] {
		return &computed{}, []string{f.ID}
	}
	s.computing[f.ID] = true
	defer delete(s.computing, f.ID)
	c := &computed{trashed: f.ExplicitlyTrashed}
	var parents [4]*computed // most files have one parent
	inherited := parents[:0]
	var cuts []string
	n := len(f.perms) + 1
	for _, pid := range f.Parents {
		p := s.files[pid]
		if p == nil {
			continue
		}
		pc, pcuts := s.stateCut(p)
		for _, id := range pcuts {
			if id != f.ID && !slices.Contains(cuts, id) {
				cuts = append(cuts, id)
			}
		}
		c.trashed = c.trashed || pc.trashed
		inherited = append(inherited, pc)
		n += len(pc.grants)
	}
	m := merger{s: s, grants: make([]grant, 0, n)}
	kind := "file"
	if f.root && f.DriveID != "" {
		kind = "member"
	}
	if f.Owner != "" && f.DriveID == "" {
		owner := Permission{Type: "user", Role: "owner", EmailAddress: f.Owner}
		m.add(s.principalKey(owner), owner, detail{kind: kind, role: owner.Role, from: f.ID})
	}
	for _, d := range f.perms {
		m.add(s.principalKey(d.p), d.p, detail{kind: kind, role: d.p.Role, from: f.ID})
	}
	for _, pc := range inherited {
		for i := range pc.grants {
			m.inherit(&pc.grants[i], f)
		}
	}
	c.grants = m.result()
	if cached && len(cuts) == 0 {
		s.cache[f.ID] = c
	}
	return c, cuts
}

// inheritedRole is the role a file gets from an ancestor's permission. My
// Drive ownership is per file: an ancestor's owner is only a writer of a
// file someone else owns, and adds nothing to the file's own owner ("").
func inheritedRole(p Permission, role string, f *File) string {
	switch {
	case role != "owner":
		return role
	case p.EmailAddress == f.Owner:
		return ""
	}
	return "writer"
}

// merger merges permissions by principal, in Drive's order: a grant takes
// the place of its first source. A file's own sources come first (its
// owner, then its permissions in the order they were granted), then what
// it inherits, in each parent's order. Drive does not document its order;
// it is not by ID (the owner usually comes first), and foldermirror keeps
// whatever order Drive gives.
type merger struct {
	s      *Server
	grants []grant
	// index finds a grant by principal key once there are many.
	index map[string]int
}

// mergerIndexFrom is how many grants a merger holds before it indexes them.
const mergerIndexFrom = 32

// add merges a permission for the principal key, from the source d.
func (m *merger) add(key string, p Permission, d detail) {
	g := m.grant(key, p)
	if !slices.Contains(g.details, d) {
		g.details = append(g.details, d)
	}
}

// inherit merges what f inherits of a parent's grant pg: each of its
// sources, with the role inheritedRole gives it.
func (m *merger) inherit(pg *grant, f *File) {
	if m.find(pg.key) < 0 && !slices.ContainsFunc(pg.details, func(d detail) bool { return d.role == "owner" }) {
		// Every source passes as it is (only an owner's role changes) and
		// f has no grant of the principal yet: f's grant is a copy of the
		// parent's, sharing its sources, capped so that appending copies.
		g := m.grant(pg.key, pg.perm)
		g.id, g.details = pg.id, slices.Clip(pg.details)
		return
	}
	for _, d := range pg.details {
		perm := pg.perm
		if perm.Role = inheritedRole(pg.perm, d.role, f); perm.Role != "" {
			m.add(pg.key, perm, detail{kind: d.kind, role: perm.Role, from: d.from})
		}
	}
}

// grant returns the grant of a principal, merging p into it (the highest
// role, discoverable if any source is, the first display name), or a new
// one made of p.
func (m *merger) grant(key string, p Permission) *grant {
	if i := m.find(key); i >= 0 {
		g := &m.grants[i]
		if roleRank[p.Role] > roleRank[g.perm.Role] {
			g.perm.Role = p.Role
		}
		g.perm.AllowFileDiscovery = g.perm.AllowFileDiscovery || p.AllowFileDiscovery
		if g.perm.DisplayName == "" {
			g.perm.DisplayName = p.DisplayName
		}
		return g
	}
	m.grants = append(m.grants, grant{key: key, perm: p})
	switch {
	case m.index != nil:
		m.index[key] = len(m.grants) - 1
	case len(m.grants) > mergerIndexFrom:
		m.index = make(map[string]int, 2*len(m.grants))
		for i, g := range m.grants {
			m.index[g.key] = i
		}
	}
	return &m.grants[len(m.grants)-1]
}

// find returns the index of a principal's grant, -1 if none.
func (m *merger) find(key string) int {
	if m.index != nil {
		if i, ok := m.index[key]; ok {
			return i
		}
		return -1
	}
	for i := range m.grants {
		if m.grants[i].key == key {
			return i
		}
	}
	return -1
}

// result returns the grants with their IDs, in the order merged. A grant
// copied from a parent has its ID already, unless it is anyone's, whose ID
// depends on its discoverability, which another source may have changed.
func (m *merger) result() []grant {
	out := m.grants
	for i := range out {
		if out[i].id == "" || out[i].perm.Type == "anyone" {
			out[i].id = m.s.permissionID(out[i].key, out[i].perm)
		}
	}
	return slices.Clip(out)
}

// principalKey names who a permission is for. A deleted account's is
// apart: no viewer is it, and a new account of the same address is another.
func principalKey(p Permission) string {
	if p.deleted {
		return "deleted:" + p.Type + ":" + p.EmailAddress
	}
	switch p.Type {
	case "domain":
		return "domain:" + p.Domain
	case "anyone":
		return "anyone"
	}
	return p.Type + ":" + p.EmailAddress
}

// principal is who a permission is for, as a map key that costs no
// allocation to make.
type principal struct {
	typ, name string
	deleted   bool
}

// principalKey returns principalKey(p), made once per principal.
func (s *Server) principalKey(p Permission) string {
	who := principal{p.Type, p.EmailAddress, p.deleted}
	if p.Type == "domain" {
		who.name = p.Domain
	}
	if k, ok := s.keys[who]; ok {
		return k
	}
	k := principalKey(p)
	s.keys[who] = k
	return k
}

// permissionID returns the ID of the permission p of the principal key,
// worked out once per principal (an "anyone" one depends on p).
func (s *Server) permissionID(key string, p Permission) string {
	if p.Type == "anyone" {
		return permissionID(p)
	}
	if id, ok := s.ids[key]; ok {
		return id
	}
	id := permissionID(p)
	s.ids[key] = id
	return id
}

// permissionID is the stable ID Drive gives a principal's permission:
// numeric for users and groups, numeric with a "k" for domains,
// "anyoneWithLink" or "anyone" for everybody.
func permissionID(p Permission) string {
	switch p.Type {
	case "anyone":
		if p.AllowFileDiscovery {
			return "anyone"
		}
		return "anyoneWithLink"
	case "domain":
		return numericID("domain:"+p.Domain, 20) + "k"
	}
	return numericID(p.EmailAddress, 20)
}

// numericID derives a stable decimal string of n digits (at most 20) from s.
func numericID(s string, n int) string {
	sum := sha256.Sum256([]byte(s))
	v := binary.BigEndian.Uint64(sum[:8])
	return fmt.Sprintf("%020d", v)[20-n:]
}

// viewer is the acting user of a request.
type viewer struct {
	email      string
	root       string          // My Drive root ID, "" for a service account without one
	principals map[string]bool // principal keys the user matches
}

// viewer returns the acting user with its principals: its e-mail, the groups
// containing it (transitively), its e-mail domain, and anyone.
func (s *Server) viewer(email string) *viewer {
	member := map[string]bool{email: true}
	for grew := true; grew; {
		grew = false
		for g, members := range s.groups {
			if !member[g] && slices.ContainsFunc(members, func(m string) bool { return member[m] }) {
				member[g], grew = true, true
			}
		}
	}
	v := &viewer{email: email, root: s.users[email], principals: map[string]bool{
		"user:" + email: true, "anyone": true,
	}}
	if at := strings.LastIndexByte(email, '@'); at >= 0 {
		v.principals["domain:"+email[at+1:]] = true
	}
	for g := range member {
		if g != email {
			v.principals["group:"+g] = true
		}
	}
	return v
}

// role returns the highest role the viewer has on a file with state c, "" if none.
func (v *viewer) role(c *computed) string {
	best := ""
	for _, g := range c.grants {
		if v.principals[g.key] && roleRank[g.perm.Role] > roleRank[best] {
			best = g.perm.Role
		}
	}
	return best
}

// canAccess reports whether any effective permission matches the viewer.
func (v *viewer) canAccess(c *computed) bool {
	return slices.ContainsFunc(c.grants, func(g grant) bool { return v.principals[g.key] })
}

// canList reports whether the viewer finds the file in lists: through a
// user or group grant (drive membership included), or a discoverable
// domain/anyone grant. "Anyone with the link" grants access but not listing.
func (v *viewer) canList(c *computed) bool {
	return slices.ContainsFunc(c.grants, func(g grant) bool {
		return v.principals[g.key] && (g.perm.Type == "user" || g.perm.Type == "group" || g.perm.AllowFileDiscovery)
	})
}

// canShare reports whether a user with the role may share the file.
func canShare(role string, f *File) bool {
	switch role {
	case "owner", "organizer", "fileOrganizer":
		return true
	case "writer":
		return f.WritersCanShare
	}
	return false
}
