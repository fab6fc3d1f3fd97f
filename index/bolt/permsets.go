package bolt

import (
	"bytes"
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

// addSet stores an encoded list under its key with n references, or adds n
// references to the set stored there.
func (t *tree) addSet(key fm.PermissionSetKey, list []byte, n uint64) error {
	var refs uint64
	if v := t.permsets.Get(key[:]); v != nil {
		if n == 0 {
			return nil
		}
		refs, list = splitPermset(v)
		list = bytes.Clone(list)
	}
	return t.permsets.Put(key[:], joinPermset(refs+n, list))
}

// putList stores a list, or adds a reference to it, and returns its key.
func (t *tree) putList(perms []fm.Permission) (fm.PermissionSetKey, error) {
	list := fm.AppendPermissions(nil, perms)
	key := fm.KeyOf(list)
	return key, t.addSet(key, list, 1)
}

// dropSet removes a reference to a set, and the set with its last one; it
// returns the number of permissions in the set.
func (t *tree) dropSet(key fm.PermissionSetKey) (int, error) {
	v := t.permsets.Get(key[:])
	if v == nil {
		return 0, errCorrupt
	}
	refs, list := splitPermset(v)
	n := fm.PermissionCount(list)
	if refs <= 1 {
		return n, t.permsets.Delete(key[:])
	}
	return n, t.permsets.Put(key[:], joinPermset(refs-1, bytes.Clone(list)))
}

// setRefs sets the references of a stored set.
func (t *tree) setRefs(key fm.PermissionSetKey, refs uint64) error {
	v := t.permsets.Get(key[:])
	if v == nil {
		return errCorrupt
	}
	_, list := splitPermset(v)
	return t.permsets.Put(key[:], joinPermset(refs, bytes.Clone(list)))
}

// permissions returns the list of a set; ENOTFOUND if there is none such.
func (t *tree) permissions(key fm.PermissionSetKey) ([]fm.Permission, error) {
	v := t.permsets.Get(key[:])
	if v == nil {
		return nil, fm.Errorf(fm.ENOTFOUND, "Permission set not found.")
	}
	_, list := splitPermset(v)
	return fm.DecodePermissions(list)
}
