package httpapi

import "strings"

// Domain is what the API shows of a configured Workspace domain.
type Domain struct {
	// Name is the lower-cased domain name.
	Name string
	// AllowlistedDomains are the other domains, lower-cased, whose users
	// may be granted access to the domain's libraries.
	AllowlistedDomains []string
	// Flags are the domain's configuration flags: the defaults of every
	// domain, with the domain's own values over them.
	Flags map[string]string
}

// domain returns the domain with the given name, compared without regard to
// case, or nil if there is none.
func (s *Server) domain(name string) *Domain {
	for i := range s.domains {
		if strings.EqualFold(s.domains[i].Name, name) {
			return &s.domains[i]
		}
	}
	return nil
}
