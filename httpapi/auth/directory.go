package auth

import (
	"context"
	"slices"
	"strings"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/config"
)

// ConfigDirectory is the Directory of the users listed in the configuration
// (domains[].users). It knows no groups.
type ConfigDirectory struct{ Config *config.Config }

var _ fm.Directory = ConfigDirectory{}

// Lookup implements fm.Directory.
func (d ConfigDirectory) Lookup(_ context.Context, email string) (bool, []string, error) {
	email = strings.ToLower(email)
	dom := d.Config.Domain(fm.EmailDomain(email))
	return dom != nil && slices.Contains(dom.Users, email), nil, nil
}
