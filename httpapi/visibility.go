package httpapi

import (
	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/httpapi/auth"
)

// caller is an authenticated caller with what it takes to decide, folder by
// folder, what it may see and do.
type caller struct {
	*auth.Identity
	principals []string
	has        map[string]bool
}

func newCaller(id *auth.Identity) *caller {
	c := &caller{Identity: id, principals: id.Principals()}
	c.has = make(map[string]bool, len(c.principals))
	for _, p := range c.principals {
		c.has[p] = true
	}
	return c
}

// access is what a caller may do with one folder.
type access struct {
	// role is the highest role any of the caller's principals is granted,
	// link grants included; RoleNone: the folder does not exist for it.
	role fm.Role
	// listable: a grant that is not a link grant reaches the caller, so the
	// folder appears in listings.
	listable bool
}

func (c *caller) access(lib *config.Library, f *fm.Folder) access {
	if c.Admin && lib.Domain == c.CodeDomain {
		return access{role: fm.RoleOwner, listable: true}
	}
	var a access
	for _, g := range f.Grants {
		if c.has[g.Principal] {
			a.role = max(a.role, g.Role)
			a.listable = a.listable || !g.WithLink
		}
	}
	return a
}

// Permitted operations, in the contract's order.
const (
	opViewACL        = "VIEW_ACL"
	opOpenInDrive    = "OPEN_IN_DRIVE"
	opDownload       = "DOWNLOAD"
	opRename         = "RENAME"
	opMove           = "MOVE_TO_ANOTHER_FOLDER"
	opDelete         = "DELETE"
	opCreateSubfold  = "CREATE_SUBFOLDER"
	opCreateDocument = "CREATE_DOCUMENT_IN_THIS_FOLDER"
	opModifyACL      = "MODIFY_ACL"
)

// permittedOperations lists what role permits on f.
func permittedOperations(role fm.Role, f *fm.Folder, isRoot bool, lib *fm.LibraryState) []string {
	ops := make([]string, 0, 9)
	ops = append(ops, opViewACL, opOpenInDrive)
	writer := role >= fm.RoleWriter
	if writer || !f.RestrictedDownload {
		ops = append(ops, opDownload)
	}
	if !writer {
		return ops
	}
	if !isRoot {
		ops = append(ops, opRename, opMove, opDelete)
	}
	ops = append(ops, opCreateSubfold, opCreateDocument)
	if role >= fm.RoleFileOrganizer || (f.WritersCanShare && !lib.SharingRequiresOrganizer) {
		ops = append(ops, opModifyACL)
	}
	return ops
}
