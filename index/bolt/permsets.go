package bolt

import (
	"encoding/binary"

	fm "github.com/foldermirror/foldermirror"
)

// Permission lists are stored once per distinct list, a "permission set",
// and folders refer to theirs by key (fm.PermissionSetKey): most folders of
// a tree carry exactly the permissions they inherit, so a library holds far
// fewer sets than folders.
//
//	permsets   key → uvarint references, list as fm.AppendPermissions encodes it
//
// A folder refers to two sets, its list and its own permissions; each
// reference counts, and a set goes with its last one.

// splitPermset returns a stored set's references and encoded list.
func splitPermset(v []byte) (uint64, []byte) {
	refs, n := binary.Uvarint(v)
	if n <= 0 {
		return 0, nil
	}
	return refs, v[n:]
}

func joinPermset(refs uint64, list []byte) []byte {
	return append(binary.AppendUvarint(make([]byte, 0, len(list)+4), refs), list...)
}

// uncountedWidth is the width of the references a full sync stores a set
// with before they are counted: 0 as a uvarint padded to that many bytes,
// which binary.Uvarint reads as any other. setRefs keeps the width, so that
// the record keeps its size and the packed page it is in is not split.
// Four bytes hold counts below 2²⁸.
const uncountedWidth = 4

// putUncounted stores an encoded list under its key with no references yet
// (see uncountedWidth), unless a set is stored there.
func (t *tree) putUncounted(key fm.PermissionSetKey, list []byte) error {
	if t.permsets.Get(key[:]) != nil {
		return nil
	}
	v := appendPaddedUvarint(make([]byte, 0, uncountedWidth+len(list)), 0, uncountedWidth)
	return t.permsets.Put(key[:], append(v, list...))
}

// setRefs sets the references of a stored set, in as many bytes as they
// took, or more if they need more.
func (t *tree) setRefs(key fm.PermissionSetKey, refs uint64) error {
	v := t.permsets.Get(key[:])
	if v == nil {
		return errCorrupt
	}
	_, width := binary.Uvarint(v)
	if width <= 0 {
		return errCorrupt
	}
	nv := appendPaddedUvarint(make([]byte, 0, len(v)+binary.MaxVarintLen64), refs, width)
	return t.permsets.Put(key[:], append(nv, v[width:]...))
}

// appendPaddedUvarint appends x as a uvarint of at least width bytes (at
// most binary.MaxVarintLen64): the bytes short of width are continuation
// bytes of zero bits.
func appendPaddedUvarint(b []byte, x uint64, width int) []byte {
	for i := 1; i < min(width, binary.MaxVarintLen64) || x >= 0x80; i++ {
		b = append(b, byte(x)|0x80)
		x >>= 7
	}
	return append(b, byte(x))
}

// permissions returns the list of a set; ENOTFOUND if there is none such.
func (t *tree) permissions(key fm.PermissionSetKey) ([]fm.Permission, error) {
	return setList(t.permsets.Get(key[:]))
}

// setList decodes the list of a stored set, v; ENOTFOUND if v is nil.
func setList(v []byte) ([]fm.Permission, error) {
	if v == nil {
		return nil, fm.Errorf(fm.ENOTFOUND, "Permission set not found.")
	}
	_, list := splitPermset(v)
	return fm.DecodePermissions(list)
}
