package auth

import (
	"context"
	"slices"
	"strings"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/config"
)

// Directory is the directory callers are checked against: the users listed
// in the configuration (domains[].users) and those of the synced directory.
type Directory struct {
	Config *config.Config
	// Synced is the synced directory; nil: configuration only.
	Synced fm.Directory
}

var _ fm.Directory = Directory{}

// Lookup implements fm.Directory: a user the configuration lists is known
// too, unless the synced directory lists it suspended (suspension wins).
// Its ID and InDirectory are the synced directory's.
func (d Directory) Lookup(ctx context.Context, email string) (fm.DirectoryEntry, error) {
	email = strings.ToLower(email)
	var entry fm.DirectoryEntry
	if d.Synced != nil {
		var err error
		if entry, err = d.Synced.Lookup(ctx, email); err != nil {
			return fm.DirectoryEntry{}, err
		}
	}
	if dom := d.Config.Domain(fm.EmailDomain(email)); dom != nil && !entry.InDirectory && slices.Contains(dom.Users, email) {
		entry.Known = true
	}
	return entry, nil
}
