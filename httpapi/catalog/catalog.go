// Package catalog holds libraries in memory for the API: each folder's
// place in its tree, its fields ready for JSON, and its grants, so that a
// request reads no index. A million folders cost the garbage collector
// almost nothing: folders are numbers into flat arrays and one byte arena,
// with no pointer per folder.
//
// A Library is one revision of a library, immutable, read by any number of
// requests at once. Its folders are a base, laid out in the order the API
// lists them (depth first, siblings by name), and a delta: the folders
// changed since the base was made. A sync's changes make a new Library that
// shares the base and carries a larger delta; once the delta is large, a
// new base is made from the two (in memory, without reading the index).
package catalog

import (
	"unsafe"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/internal/intern"
)

// none is the number of no folder.
const none = ^uint32(0)

// Folder flags.
const (
	flagRestricted      = 1 << iota // downloads restricted, here or above
	flagWritersCanShare             // Drive's writersCanShare
	flagEscapedID                   // the ID or the parent's needs escaping in JSON
)

// Library is a library at one revision.
type Library struct {
	// State is the index's state of the library at this revision.
	State  fm.LibraryState
	base   *base
	delta  *delta
	grants grantView
}

// base is a library's folders, depth first with siblings in the API's
// order: a folder's subtree is the run of size folders that starts with it.
type base struct {
	// revision is the library's revision the base holds (without a delta).
	revision uint64
	ids      *intern.Table // folder n's ID is string n
	size     []uint32
	parent   []uint32 // none for the root
	set      []uint32
	flags    []uint8
	record   []uint32 // where folder n's fields start in arena
	arena    []byte
}

// Ref is a folder of a Library: a folder of its base (b), one of its
// delta (d), or both (a base folder the delta changed).
type Ref struct {
	b uint32
	d *folder
}

// Valid tells a folder from no folder.
func (r Ref) Valid() bool { return r.b != none || r.d != nil }

// View is what a Library holds of a folder. Its strings are the Library's:
// they are not copied.
type View struct {
	ID, ParentID string
	// Name is the folder's name; EscapedName the same, escaped as a JSON
	// string's contents.
	Name, EscapedName string
	// ResourceKey and DefinitionID are escaped as JSON strings' contents;
	// DefinitionID is "" when Drive sets none.
	ResourceKey, DefinitionID string
	IsRoot                    bool
	// Restricted: downloads restricted here or above.
	Restricted      bool
	WritersCanShare bool
	// EscapedID: the ID or the parent's needs escaping in JSON; Drive's
	// IDs never do.
	EscapedID bool
	// Set is the number of the folder's permission set.
	Set uint32
}

// Len returns the number of folders in the library.
func (l *Library) Len() int { return l.base.len() + l.delta.added() - l.delta.removedCount() }

// Root returns the library's root folder.
func (l *Library) Root() Ref { r, _ := l.Lookup(l.State.RootID); return r }

// Lookup finds a folder by ID.
func (l *Library) Lookup(id string) (Ref, bool) {
	b, inBase := l.base.ids.Lookup(id)
	if !inBase {
		b = none
	}
	if d := l.delta; d != nil {
		if f := d.folders[id]; f != nil {
			return Ref{b: b, d: f}, true
		}
		if d.removed[id] {
			return Ref{b: none}, false
		}
	}
	return Ref{b: b}, inBase
}

// View returns what the library holds of a folder.
func (l *Library) View(r Ref) View {
	var v View
	l.Load(r, &v)
	return v
}

// Load sets *v to what the library holds of a folder, as View returns it:
// a loop over many folders fills one View rather than copying one out for
// each.
func (l *Library) Load(r Ref, v *View) {
	if r.d != nil {
		r.d.load(r.d.id == l.State.RootID, v)
		return
	}
	l.base.load(r.b, v)
}

// Grants returns a folder's grants.
func (l *Library) Grants(r Ref) []Grant { return l.grants.grants(l.SetOf(r)) }

// SetOf returns the number of a folder's permission set: folders of one
// set have the same grants (SetGrants).
func (l *Library) SetOf(r Ref) uint32 {
	if r.d != nil {
		return r.d.set
	}
	return l.base.set[r.b]
}

// SetGrants returns the grants of a permission set.
func (l *Library) SetGrants(set uint32) []Grant { return l.grants.grants(set) }

// SetKey returns the key of a set's permissions in the index.
func (l *Library) SetKey(set uint32) fm.PermissionSetKey { return l.grants.keys[set] }

// Principal returns the number of a principal some folder grants a role to.
func (l *Library) Principal(p string) (int32, bool) {
	return l.grants.principals.lookup(p)
}

// Bytes returns the memory a Library holds, for accounting; its base and
// grants are shared with the Libraries of other revisions.
func (l *Library) Bytes() int {
	b := l.base
	n := b.ids.Size() + 4*(cap(b.size)+cap(b.parent)+cap(b.set)+cap(b.record)) + cap(b.flags) + cap(b.arena)
	return n + l.delta.bytes() + 4*cap(l.grants.start) + 8*cap(l.grants.all) + 16*cap(l.grants.keys)
}

func (b *base) len() int { return len(b.size) }

// load decodes base folder n into v.
func (b *base) load(n uint32, v *View) {
	flags := b.flags[n]
	v.IsRoot, v.Set = n == 0, b.set[n]
	v.Restricted, v.WritersCanShare, v.EscapedID = flags&flagRestricted != 0, flags&flagWritersCanShare != 0, flags&flagEscapedID != 0
	v.ParentID = ""
	if p := b.parent[n]; p != none {
		v.ParentID = unsafeString(b.ids.Bytes(p))
	}
	v.ID = unsafeString(b.ids.Bytes(n))
	v.Name, v.EscapedName, v.ResourceKey, v.DefinitionID = decodeRecord(b.arena[b.record[n]:])
}

// unsafeString returns b as a string without copying: b is a base's, which
// nothing changes once the base is made.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
