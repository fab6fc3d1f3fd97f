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

// Lookup implements fm.Directory.
func (d Directory) Lookup(ctx context.Context, email string) (bool, []string, error) {
	email = strings.ToLower(email)
	var known bool
	var groups []string
	if d.Synced != nil {
		var err error
		if known, groups, err = d.Synced.Lookup(ctx, email); err != nil {
			return false, nil, err
		}
	}
	if dom := d.Config.Domain(fm.EmailDomain(email)); dom != nil && slices.Contains(dom.Users, email) {
		known = true
	}
	return known, groups, nil
}
