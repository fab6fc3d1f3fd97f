package foldermirror

import "strings"

// Role is a Drive role, ordered so that a higher value permits more.
type Role uint8

// Drive roles, weakest first.
const (
	RoleNone Role = iota
	RoleReader
	RoleCommenter
	RoleWriter
	RoleFileOrganizer
	RoleOrganizer
	RoleOwner
)

var roleNames = [...]string{"", "reader", "commenter", "writer", "fileOrganizer", "organizer", "owner"}

// ParseRole maps a Drive role name to a Role; unknown names are RoleNone.
func ParseRole(name string) Role {
	for r, n := range roleNames {
		if n == name && n != "" {
			return Role(r)
		}
	}
	return RoleNone
}

// String returns the Drive name of the role.
func (r Role) String() string {
	if int(r) < len(roleNames) {
		return roleNames[r]
	}
	return ""
}

// Principal prefixes. A principal names who a grant is for: "user:EMAIL",
// "group:EMAIL", "domain:NAME" or "anyone". E-mails and domains are lower-case.
const (
	PrincipalAnyone = "anyone"
	userPrefix      = "user:"
	groupPrefix     = "group:"
	domainPrefix    = "domain:"
)

// UserPrincipal returns the principal of a user.
func UserPrincipal(email string) string { return userPrefix + strings.ToLower(email) }

// GroupPrincipal returns the principal of a group.
func GroupPrincipal(email string) string { return groupPrefix + strings.ToLower(email) }

// DomainPrincipal returns the principal of everyone in a domain.
func DomainPrincipal(domain string) string { return domainPrefix + strings.ToLower(domain) }

// EmailDomain returns the lower-cased domain part of an e-mail address, or "".
func EmailDomain(email string) string {
	at := strings.LastIndexByte(email, '@')
	if at < 0 {
		return ""
	}
	return strings.ToLower(email[at+1:])
}

// Grant is what one Drive permission gives: a role to a principal. WithLink
// grants (domain or anyone, not discoverable) let a caller open a folder it
// knows the ID of, but do not make it appear in listings.
type Grant struct {
	Principal string
	Role      Role
	WithLink  bool
}

// Permission is a Drive permission as mirrored, with Drive's own values
// (Type: user, group, domain, anyone; Role: reader ... owner).
type Permission struct {
	ID                 string
	Type               string
	Role               string
	EmailAddress       string
	Domain             string
	DisplayName        string
	PhotoLink          string
	AllowFileDiscovery bool
	// AlsoInherited, in a folder's own permissions only: a domain or anyone
	// permission that the folder also inherits, so that the
	// AllowFileDiscovery Drive lists may be the inherited one's (see
	// InheritPermissions). Always false in a folder's list.
	AlsoInherited bool
	// Opaque, in a folder's own permissions only: Drive's answer does not
	// tell how the folder's list follows its parent's (a permission without
	// details, several parents, inheritance disabled, a list that is not
	// the one made from its parent's: see ListFollows), so its own
	// permissions are its whole list, each marked so, and the folder is
	// read from Drive again when its parent's list changes. Always false in
	// a folder's list.
	Opaque bool
}

// Grant returns the grant the permission makes, and false when it makes none
// (an unknown type or role, or a user or group permission without an e-mail).
func (p Permission) Grant() (Grant, bool) {
	g := Grant{Role: ParseRole(p.Role)}
	if g.Role == RoleNone {
		return Grant{}, false
	}
	switch p.Type {
	case "user":
		g.Principal = UserPrincipal(p.EmailAddress)
	case "group":
		g.Principal = GroupPrincipal(p.EmailAddress)
	case "domain":
		g.Principal = DomainPrincipal(p.Domain)
		g.WithLink = !p.AllowFileDiscovery
	case "anyone":
		g.Principal = PrincipalAnyone
		g.WithLink = !p.AllowFileDiscovery
	default:
		return Grant{}, false
	}
	if g.Principal != PrincipalAnyone && strings.HasSuffix(g.Principal, ":") {
		return Grant{}, false
	}
	return g, true
}

// GrantsOf returns the grants a permission list makes, in the list's order.
func GrantsOf(perms []Permission) []Grant {
	grants := make([]Grant, 0, len(perms))
	for _, p := range perms {
		if g, ok := p.Grant(); ok {
			grants = append(grants, g)
		}
	}
	return grants
}
