package httpapi

import (
	"crypto/subtle"
	"net/http"
	"slices"
	"strings"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/httpapi/auth"
	"github.com/foldermirror/foldermirror/httpapi/catalog"
)

// caller is an authenticated caller and the principals a grant may name to
// reach it, sorted (as etag hashes them).
type caller struct {
	*auth.Identity
	principals []string
}

func newCaller(id *auth.Identity) *caller {
	principals := id.Principals()
	slices.Sort(principals)
	return &caller{Identity: id, principals: principals}
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

// viewer is a caller as one library knows it: the numbers of its
// principals.
type viewer struct {
	lib *catalog.Library
	// owner: a security code of the library's domain acting as its admin.
	owner      bool
	principals []int32
}

// viewerOf returns how a library sees a caller.
func viewerOf(lib *catalog.Library, domain string, cl *caller) viewer {
	v := viewer{lib: lib, owner: cl.Admin && cl.CodeDomain == domain}
	for _, p := range cl.principals {
		if n, ok := lib.Principal(p); ok {
			v.principals = append(v.principals, n)
		}
	}
	return v
}

// sharedWith tells whether some folder grants the viewer a role.
func (v viewer) sharedWith() bool { return v.owner || len(v.principals) > 0 }

// access is what the viewer may do with a folder.
func (v viewer) access(r catalog.Ref) access { return v.setAccess(v.lib.SetOf(r)) }

// setAccess is what the viewer may do with the folders of a permission
// set.
func (v viewer) setAccess(set uint32) access {
	if v.owner {
		return access{role: fm.RoleOwner, listable: true}
	}
	var a access
	for _, g := range v.lib.SetGrants(set) {
		for _, p := range v.principals {
			if g.Principal == p {
				a.role = max(a.role, g.Role)
				a.listable = a.listable || !g.WithLink
			}
		}
	}
	return a
}

// accessMemo is a viewer's access to the folders of a listing: folders of
// one permission set share it, and a listing's folders have few sets
// between them (siblings often alternate between two or three), so the
// access of the last sets seen is kept.
type accessMemo struct {
	viewer *viewer
	sets   [accessMemoSize]uint32
	access [accessMemoSize]access
	// known counts the entries made; the next replaces entry known %
	// accessMemoSize.
	known int
}

// accessMemoSize is how many sets an accessMemo keeps.
const accessMemoSize = 8

// of is what the viewer may do with a folder.
func (m *accessMemo) of(r catalog.Ref) access {
	set := m.viewer.lib.SetOf(r)
	for i := range min(m.known, accessMemoSize) {
		if m.sets[i] == set {
			return m.access[i]
		}
	}
	i := m.known % accessMemoSize
	m.sets[i], m.access[i] = set, m.viewer.setAccess(set)
	m.known++
	return m.access[i]
}

// readsDirectly tells whether a caller with access a may read folder r of
// lib directly (operations 4 and 5, and 2 and 6 of it as the parent): it
// has a role on it and, if links alone reach it and it has a resource key,
// the request carries that key, as Drive asks for with the link. Knowing a
// folder's ID does not hand out its key.
func readsDirectly(a access, lib *catalog.Library, r catalog.Ref, keys resourceKeys) bool {
	switch {
	case a.role == fm.RoleNone:
		return false
	case a.listable:
		return true
	}
	v := lib.View(r)
	return v.ResourceKey == "" || keys.has(v.ID, v.ResourceKey)
}

// resourceKeysHeader is Drive's header for the resource keys of the items
// a request reaches by their links: comma-separated FOLDER_ID/RESOURCE_KEY.
const resourceKeysHeader = "X-Goog-Drive-Resource-Keys"

// resourceKeys are the values of a request's resourceKeysHeader, joined.
type resourceKeys string

func requestResourceKeys(r *http.Request) resourceKeys {
	return resourceKeys(strings.Join(r.Header.Values(resourceKeysHeader), ","))
}

// has tells whether the keys give escapedKey (a key escaped as a JSON
// string's contents, as catalogs keep it) for the folder id.
func (k resourceKeys) has(id, escapedKey string) bool {
	for pair := range strings.SplitSeq(string(k), ",") {
		folder, key, ok := strings.Cut(strings.TrimSpace(pair), "/")
		if ok && folder == id && subtle.ConstantTimeCompare([]byte(jsonContents(key)), []byte(escapedKey)) == 1 {
			return true
		}
	}
	return false
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

// permittedOperations lists what role permits on a folder: one that
// restricts downloads or not, the library's root or not, on which writers
// may share or not (the folder lets them, and the library does not ask for
// an organizer).
func permittedOperations(role fm.Role, restrictedDownload, isRoot, writersCanShare bool) []string {
	ops := make([]string, 0, 9)
	ops = append(ops, opViewACL, opOpenInDrive)
	writer := role >= fm.RoleWriter
	if writer || !restrictedDownload {
		ops = append(ops, opDownload)
	}
	if !writer {
		return ops
	}
	if !isRoot {
		ops = append(ops, opRename, opMove, opDelete)
	}
	ops = append(ops, opCreateSubfold, opCreateDocument)
	if role >= fm.RoleFileOrganizer || writersCanShare {
		ops = append(ops, opModifyACL)
	}
	return ops
}
