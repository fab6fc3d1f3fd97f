package googlefake

import (
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// person is the directory record of a user added with AddUser.
type person struct {
	created     time.Time
	admin       bool // administers the domain of its e-mail
	suspended   bool
	suspendedAt time.Time
}

// MakeAdmin makes a user an administrator of its e-mail's domain's
// organisation (AddOrganization; by default the domain alone): it may then
// read the users, groups and group members of that organisation's domains
// with the Directory API. It panics for a user not added with AddUser.
func (s *Server) MakeAdmin(email string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.person(email).admin = true
}

// SuspendUser suspends a user, or lifts the suspension: the Directory API
// reports it (suspended, and member status "SUSPENDED"), and a suspended
// admin may not read the directory. Drive access and tokens are unaffected.
// It panics for a user not added with AddUser.
func (s *Server) SuspendUser(email string, suspended bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.person(email)
	if suspended && !p.suspended {
		p.suspendedAt = time.Now().UTC()
	}
	p.suspended = suspended
}

// RemoveUser deletes a user's account: it leaves the directory and every
// group's member list, its access and refresh tokens stop working, and the
// token endpoint no longer delegates to it. The permissions granted to it
// become deleted where they were granted (files and shared drives): Drive
// lists them with deleted true, inherited ones too, and they grant nothing;
// each such item logs a change (see LogItemAlone for its descendants). The
// files it owns stay, as when an admin keeps a deleted user's data.
// Removing an unknown user is harmless; AddUser may add it again, with a new
// My Drive: a new account, which the deleted permissions do not reach.
func (s *Server) RemoveUser(email string) {
	email = strings.ToLower(email)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deletePermissionsOf(email)
	delete(s.users, email)
	delete(s.people, email)
	for g, members := range s.groups {
		s.groups[g] = slices.DeleteFunc(members, func(m string) bool { return m == email })
	}
	maps.DeleteFunc(s.accessTokens, func(_ string, t accessToken) bool { return t.user == email })
	maps.DeleteFunc(s.refreshTokens, func(_ string, g refreshGrant) bool { return g.user == email })
}

// deletePermissionsOf marks deleted the permissions granted to a user,
// logging a change for each item that had one.
func (s *Server) deletePermissionsOf(email string) {
	granted := func(d directPerm) bool { return d.p.Type == "user" && d.p.EmailAddress == email && !d.p.deleted }
	for _, f := range slices.Clone(s.byCreated.files) {
		if !slices.ContainsFunc(f.perms, granted) {
			continue
		}
		s.mutate(f.ID, inheritance, func(f *File) {
			for i := range f.perms {
				if granted(f.perms[i]) {
					f.perms[i].p.deleted = true
				}
			}
		})
	}
}

// AddGroupMember adds a user or group e-mail to a group, creating the group
// if needed (AddGroup(group, member) does the same).
func (s *Server) AddGroupMember(group, member string) {
	s.AddGroup(group, member)
}

// RemoveGroupMember removes a direct member from a group; removing a
// non-member is harmless. It panics for an unknown group.
func (s *Server) RemoveGroupMember(group, member string) {
	group, member = strings.ToLower(group), strings.ToLower(member)
	s.mu.Lock()
	defer s.mu.Unlock()
	members, ok := s.groups[group]
	if !ok {
		panic(fmt.Sprintf("googlefake: unknown group %q", group))
	}
	s.groups[group] = slices.DeleteFunc(members, func(m string) bool { return m == member })
}

// SetEmailVerified sets whether a user's e-mail is verified, as tokeninfo's
// email_verified and GoogleIDToken's claim of that name report it (true by
// default).
func (s *Server) SetEmailVerified(email string, verified bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if email = strings.ToLower(email); verified {
		delete(s.unverified, email)
	} else {
		s.unverified[email] = true
	}
}

// person returns a user's directory record or panics. Call with s.mu held.
func (s *Server) person(email string) *person {
	p := s.people[strings.ToLower(email)]
	if p == nil {
		panic(fmt.Sprintf("googlefake: unknown user %q", email))
	}
	return p
}

// AddOrganization makes domains one Google Workspace organisation (one
// customer), the first its primary domain: an admin of any of them
// administers them all, as a customer's admins read the users, groups and
// members of its secondary domains. Other organisations' groups stay
// forbidden to it. By default each domain is an organisation of its own; a
// domain already in another organisation moves to this one.
func (s *Server) AddOrganization(domains ...string) {
	if len(domains) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.organizations == nil {
		s.organizations = map[string]string{}
	}
	id := customerID(strings.ToLower(domains[0]))
	for _, d := range domains {
		s.organizations[strings.ToLower(d)] = id
	}
}

// customerOf returns the customer ID of the organisation holding a domain.
// Call with s.mu held.
func (s *Server) customerOf(domain string) string {
	if id, ok := s.organizations[domain]; ok {
		return id
	}
	return customerID(domain)
}

// adminCustomer returns the customer ID of the organisation a user
// administers, "" if none (suspended admins administer nothing). Call with
// s.mu held.
func (s *Server) adminCustomer(email string) string {
	if p := s.people[email]; p != nil && p.admin && !p.suspended {
		return s.customerOf(domainOf(email))
	}
	return ""
}

// domainOf returns the domain part of an e-mail, "" if it has none.
func domainOf(email string) string {
	at := strings.LastIndexByte(email, '@')
	if at < 0 {
		return ""
	}
	return email[at+1:]
}

// nameParts derives a person's given and family names from an e-mail's
// local part: "jane.doe@x" is Jane Doe, "alice@x" Alice (no family name).
func nameParts(email string) (given, family string) {
	local, _, _ := strings.Cut(email, "@")
	words := strings.FieldsFunc(local, func(r rune) bool { return r == '.' || r == '_' || r == '-' || r == '+' })
	for i, w := range words {
		r, size := utf8.DecodeRuneInString(w)
		words[i] = string(unicode.ToUpper(r)) + w[size:]
	}
	if len(words) == 0 {
		return local, ""
	}
	return words[0], strings.Join(words[1:], " ")
}

// displayName is the full name nameParts derives.
func displayName(email string) string {
	given, family := nameParts(email)
	return strings.TrimSpace(given + " " + family)
}

// groupID is the stable ID of a group, shaped like the Directory API's
// ("0" and 14 lower-case letters and digits).
func groupID(email string) string { return "0" + hashString("group:"+email, lowerAlnum, 14) }

// customerID is the stable ID of the customer whose primary domain is
// domain, shaped like Google's ("C0" and 7 letters and digits).
func customerID(domain string) string { return "C0" + hashString("customer:"+domain, lowerAlnum, 7) }

// hashString derives a stable string of n characters of alphabet from s.
func hashString(s, alphabet string, n int) string {
	sum := sha256.Sum256([]byte(s))
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[int(sum[i%len(sum)])%len(alphabet)]
	}
	return string(b)
}
