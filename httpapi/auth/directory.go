package auth

import (
	"context"
	"slices"
	"strings"

	fm "github.com/foldermirror/foldermirror"
)

// Domain is what the Authenticator knows of a configured Workspace domain.
type Domain struct {
	// Name is the lower-cased domain name.
	Name string
	// Users are the lower-cased e-mails of the domain's users known without
	// its directory.
	Users []string
	// SecurityCodes let their holders act for the domain.
	SecurityCodes []SecurityCode
}

// findDomain returns the domain of domains with the given name, compared
// without regard to case, or nil if there is none.
func findDomain(domains []Domain, name string) *Domain {
	for i := range domains {
		if strings.EqualFold(domains[i].Name, name) {
			return &domains[i]
		}
	}
	return nil
}

// configured tells whether a domain of that name is among domains.
func configured(domains []Domain, name string) bool { return findDomain(domains, name) != nil }

// Directory is the directory callers are checked against: the users the
// domains list (Domain.Users) and those of the synced directory.
type Directory struct {
	Domains []Domain
	// Synced is the synced directory; nil: the domains' users only.
	Synced fm.Directory
}

var _ fm.Directory = Directory{}

// Lookup implements fm.Directory: a user a domain lists is known too,
// unless the synced directory lists it suspended (suspension wins). Its ID
// and InDirectory are the synced directory's.
func (d Directory) Lookup(ctx context.Context, email string) (fm.DirectoryEntry, error) {
	email = strings.ToLower(email)
	var entry fm.DirectoryEntry
	if d.Synced != nil {
		var err error
		if entry, err = d.Synced.Lookup(ctx, email); err != nil {
			return fm.DirectoryEntry{}, err
		}
	}
	if dom := findDomain(d.Domains, fm.EmailDomain(email)); dom != nil && !entry.InDirectory && slices.Contains(dom.Users, email) {
		entry.Known = true
	}
	return entry, nil
}
