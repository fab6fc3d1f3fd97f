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
	grants  []grant // by permission ID
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
// Every mutation drops the cached states of the files it may affect.
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
	if c, ok := s.cache[f.ID]; ok {
		return c, nil
	}
	if s.computing[f.ID] {
		return &computed{}, []string{f.ID}
	}
	s.computing[f.ID] = true
	defer delete(s.computing, f.ID)
	m := merger{}
	kind := "file"
	if f.root && f.DriveID != "" {
		kind = "member"
	}
	for _, p := range s.directPermissions(f) {
		m.add(p, detail{kind: kind, role: p.Role, from: f.ID})
	}
	c := &computed{trashed: f.ExplicitlyTrashed}
	var cuts []string
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
		for _, g := range pc.grants {
			for _, d := range g.details {
				perm := g.perm
				if perm.Role = inheritedRole(g.perm, d.role, f); perm.Role != "" {
					m.add(perm, detail{kind: d.kind, role: perm.Role, from: d.from})
				}
			}
		}
	}
	c.grants = m.result()
	if len(cuts) == 0 {
		s.cache[f.ID] = c
	}
	return c, cuts
}

// directPermissions returns the permissions set on f, with the owner's first.
func (s *Server) directPermissions(f *File) []Permission {
	var out []Permission
	if f.Owner != "" && f.DriveID == "" {
		out = append(out, Permission{Type: "user", Role: "owner", EmailAddress: f.Owner})
	}
	for _, d := range f.perms {
		out = append(out, d.p)
	}
	return out
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

// merger merges permissions by principal.
type merger map[string]*grant

func (m merger) add(p Permission, d detail) {
	key := principalKey(p)
	g := m[key]
	if g == nil {
		g = &grant{key: key, perm: p}
		m[key] = g
	} else {
		if roleRank[p.Role] > roleRank[g.perm.Role] {
			g.perm.Role = p.Role
		}
		g.perm.AllowFileDiscovery = g.perm.AllowFileDiscovery || p.AllowFileDiscovery
		if g.perm.DisplayName == "" {
			g.perm.DisplayName = p.DisplayName
		}
	}
	if !slices.Contains(g.details, d) {
		g.details = append(g.details, d)
	}
}

func (m merger) result() []grant {
	out := make([]grant, 0, len(m))
	for _, g := range m {
		g.id = permissionID(g.perm)
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b grant) int { return strings.Compare(a.id, b.id) })
	return out
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
