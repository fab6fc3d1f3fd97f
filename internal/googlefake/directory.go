package googlefake

import (
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"

	admin "google.golang.org/api/admin/directory/v1"
)

const (
	directoryPrefix      = "/admin/directory/v1/"
	directoryScopePrefix = "https://www.googleapis.com/auth/admin.directory."
)

var (
	usersListEndpoint = &endpoint{callUsersList, (*Server).usersList, reflect.TypeFor[admin.Users](), "",
		directoryScopes("user", "user.readonly")}
	groupsListEndpoint = &endpoint{callGroupsList, (*Server).groupsList, reflect.TypeFor[admin.Groups](), "",
		directoryScopes("group", "group.readonly")}
	membersListEndpoint = &endpoint{callMembersList, (*Server).membersList, reflect.TypeFor[admin.Members](), "",
		directoryScopes("group", "group.readonly", "group.member", "group.member.readonly")}
)

// directoryScopes returns a scope check accepting the named Directory scopes
// ("user.readonly" is https://www.googleapis.com/auth/admin.directory.user.readonly).
func directoryScopes(names ...string) func(string) bool {
	return func(scope string) bool {
		name, ok := strings.CutPrefix(scope, directoryScopePrefix)
		return ok && slices.Contains(names, name)
	}
}

// directoryRoute maps a request path to its Directory method and path
// parameter.
func directoryRoute(path string) (*endpoint, string) {
	rest := strings.TrimPrefix(path, directoryPrefix)
	seg := strings.Split(rest, "/")
	switch {
	case rest == "users":
		return usersListEndpoint, ""
	case rest == "groups":
		return groupsListEndpoint, ""
	case len(seg) == 3 && seg[0] == "groups" && seg[1] != "" && seg[2] == "members":
		return membersListEndpoint, seg[1]
	}
	return nil, ""
}

// errDirectoryUnimplemented answers the Directory methods the fake lacks:
// 501 rather than 404, so that a test reaching beyond the fake does not
// mistake it for a missing resource.
var errDirectoryUnimplemented = newAPIError(http.StatusNotImplemented, "notImplemented",
	"googlefake implements only users.list, groups.list and members.list of the Directory API", "")

// usersList is users.list: the users of one domain, or of every domain of a
// customer, by e-mail.
func (s *Server) usersList(c *call) (any, *apiError) {
	inList, selection, aerr := s.listDomains(c)
	if aerr != nil {
		return nil, aerr
	}
	size, aerr := intParam(c.q, "maxResults", 100)
	if aerr != nil {
		return nil, aerr
	}
	page, next, aerr := pageOf(inDomains(slices.Collect(maps.Keys(s.people)), inList), "users:"+selection, c.q, size)
	if aerr != nil {
		return nil, aerr
	}
	out := &admin.Users{Kind: "admin#directory#users", NextPageToken: next}
	for _, email := range page {
		out.Users = append(out.Users, userJSON(email, s.people[email], s.customerOf(domainOf(email))))
	}
	return out, nil
}

// groupsList is groups.list: the groups of one domain, or of every domain
// of a customer, by e-mail.
func (s *Server) groupsList(c *call) (any, *apiError) {
	inList, selection, aerr := s.listDomains(c)
	if aerr != nil {
		return nil, aerr
	}
	size, aerr := intParam(c.q, "maxResults", 200)
	if aerr != nil {
		return nil, aerr
	}
	page, next, aerr := pageOf(inDomains(slices.Collect(maps.Keys(s.groups)), inList), "groups:"+selection, c.q, size)
	if aerr != nil {
		return nil, aerr
	}
	out := &admin.Groups{Kind: "admin#directory#groups", NextPageToken: next}
	for _, email := range page {
		out.Groups = append(out.Groups, s.groupJSON(email))
	}
	return out, nil
}

// membersList is members.list: a group's direct members, by e-mail, with
// role MEMBER (includeDerivedMembership is ignored). The group key is its
// e-mail or ID. The acting user must administer the organisation holding
// the group's domain: another organisation's group is 403, an unknown one
// 404.
func (s *Server) membersList(c *call) (any, *apiError) {
	customer := s.adminCustomer(c.v.email)
	if customer == "" {
		return nil, errNotAuthorized
	}
	group, ok := s.groupByKey(c.id)
	if !ok {
		return nil, resourceNotFound("groupKey")
	}
	if s.customerOf(domainOf(group)) != customer {
		return nil, errNotAuthorized
	}
	size, aerr := intParam(c.q, "maxResults", 200)
	if aerr != nil {
		return nil, aerr
	}
	members := slices.Clone(s.groups[group])
	if !rolesInclude(c.q.Get("roles"), "MEMBER") {
		members = nil
	}
	slices.Sort(members)
	page, next, aerr := pageOf(members, "members:"+group, c.q, size)
	if aerr != nil {
		return nil, aerr
	}
	out := &admin.Members{Kind: "admin#directory#members", NextPageToken: next}
	for _, email := range page {
		out.Members = append(out.Members, s.memberJSON(email))
	}
	return out, nil
}

// listDomains tells which domains a users.list or groups.list request
// covers: its domain parameter, else every domain of its customer
// ("my_customer" is the acting user's), and names that selection for page
// tokens. The acting user must administer the organisation holding them.
func (s *Server) listDomains(c *call) (func(domain string) bool, string, *apiError) {
	own := s.adminCustomer(c.v.email)
	if own == "" {
		return nil, "", errNotAuthorized
	}
	domain, customer := strings.ToLower(c.q.Get("domain")), c.q.Get("customer")
	switch {
	case domain == "" && customer == "":
		return nil, "", errBadRequest
	case customer != "" && customer != "my_customer" && customer != own:
		return nil, "", errNotAuthorized
	case domain != "" && s.customerOf(domain) != own:
		return nil, "", errNotAuthorized
	case domain != "":
		return func(d string) bool { return d == domain }, domain, nil
	}
	return func(d string) bool { return s.customerOf(d) == own }, own, nil
}

// groupByKey finds a group by e-mail or ID.
func (s *Server) groupByKey(key string) (string, bool) {
	key = strings.ToLower(key)
	if _, ok := s.groups[key]; ok {
		return key, true
	}
	for email := range s.groups {
		if groupID(email) == key {
			return email, true
		}
	}
	return "", false
}

// userJSON renders a user of a customer as users.list does (projection
// basic).
func userJSON(email string, p *person, customer string) *admin.User {
	given, family := nameParts(email)
	u := &admin.User{
		Kind: "admin#directory#user", Id: googleID(email), PrimaryEmail: email,
		Name:    &admin.UserName{GivenName: given, FamilyName: family, FullName: displayName(email)},
		IsAdmin: p.admin, AgreedToTerms: true, Suspended: p.suspended,
		CreationTime: p.created.Format(timeFormat), LastLoginTime: "1970-01-01T00:00:00.000Z",
		Emails:     []map[string]any{{"address": email, "primary": true}},
		CustomerId: customer, OrgUnitPath: "/", IsMailboxSetup: true,
		IncludeInGlobalAddressList: true,
		ForceSendFields: []string{"IsAdmin", "IsDelegatedAdmin", "Suspended", "Archived",
			"ChangePasswordAtNextLogin", "IpWhitelisted", "IsEnrolledIn2Sv", "IsEnforcedIn2Sv"},
	}
	if p.suspended {
		u.SuspensionReason = "ADMIN"
	}
	return u
}

// groupJSON renders a group as groups.list does; its name derives from its
// e-mail ("eng-team@x" is "Eng Team").
func (s *Server) groupJSON(email string) *admin.Group {
	return &admin.Group{
		Kind: "admin#directory#group", Id: groupID(email), Email: email, Name: displayName(email),
		DirectMembersCount: int64(len(s.groups[email])), AdminCreated: true,
		ForceSendFields: []string{"DirectMembersCount", "AdminCreated"},
	}
}

// memberJSON renders a group member: type GROUP for a group, USER for anyone
// else (users of other domains and unknown e-mails included); status
// SUSPENDED for a suspended user, else ACTIVE.
func (s *Server) memberJSON(email string) *admin.Member {
	m := &admin.Member{Kind: "admin#directory#member", Email: email, Role: "MEMBER", Type: "USER",
		Id: googleID(email), Status: "ACTIVE"}
	if _, ok := s.groups[email]; ok {
		m.Type, m.Id = "GROUP", groupID(email)
	} else if p := s.people[email]; p != nil && p.suspended {
		m.Status = "SUSPENDED"
	}
	return m
}

// rolesInclude reports whether a roles parameter ("OWNER,MANAGER", ""
// for all) selects role.
func rolesInclude(roles, role string) bool {
	if roles == "" {
		return true
	}
	return slices.ContainsFunc(strings.Split(roles, ","), func(r string) bool {
		return strings.EqualFold(strings.TrimSpace(r), role)
	})
}

// inDomains returns the e-mails of the domains selected, sorted.
func inDomains(emails []string, selected func(domain string) bool) []string {
	emails = slices.DeleteFunc(emails, func(e string) bool { return !selected(domainOf(e)) })
	slices.Sort(emails)
	return emails
}

// pageOf returns the page of sorted keys a request asks for and the token
// of the next page, "" after the last. Tokens hold the last key returned,
// so they stay valid while keys come and go.
func pageOf(sorted []string, kind string, q url.Values, size int) ([]string, string, *apiError) {
	start := 0
	if tok := q.Get("pageToken"); tok != "" {
		after, ok := decodePageToken(kind, tok)
		if !ok {
			return nil, "", invalidParam("pageToken")
		}
		var found bool
		if start, found = slices.BinarySearch(sorted, after); found {
			start++
		}
	}
	end := min(start+size, len(sorted))
	next := ""
	if end < len(sorted) {
		next = encodePageToken(kind, sorted[end-1])
	}
	return sorted[start:end], next, nil
}
