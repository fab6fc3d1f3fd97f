package index

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"

	fm "github.com/foldermirror/foldermirror"
)

// Permission lists are stored once per distinct list, a "permission set",
// and folders refer to theirs: most folders of a tree carry exactly the
// permissions they inherit, so a library holds far fewer sets than folders.
//
//	permsets   key → uvarint references, encoded permission list
//
// A key is the first 16 bytes of the list's SHA-256 and a byte that tells
// apart lists whose hashes begin alike (never seen, but not impossible).

const permsetHashLen = 16

// permsetKey returns the key of an encoded list in the tree, and whether
// the list is stored already.
func (t *tree) permsetKey(list []byte) ([]byte, bool) {
	h := sha256.Sum256(list)
	key := append(h[:permsetHashLen:permsetHashLen], 0)
	for {
		v := t.permsets.Get(key)
		if v == nil {
			return key, false
		}
		if _, stored := splitPermset(v); bytes.Equal(stored, list) {
			return key, true
		}
		key[permsetHashLen]++
		if key[permsetHashLen] == 0 {
			panic("index: 256 permission lists share a 128-bit hash prefix")
		}
	}
}

// splitPermset returns a stored set's references and list.
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

// addPermset stores a list, or adds n references to it, and returns its key.
func (t *tree) addPermset(perms []fm.Permission, n uint64) ([]byte, error) {
	list := encodePermissions(perms)
	key, found := t.permsetKey(list)
	var refs uint64
	if found {
		if n == 0 {
			return key, nil
		}
		refs, _ = splitPermset(t.permsets.Get(key))
	}
	return key, t.permsets.Put(key, joinPermset(refs+n, list))
}

// dropPermset removes a reference to a set, and the set with its last one;
// it returns the number of permissions in the set.
func (t *tree) dropPermset(key []byte) (int, error) {
	v := t.permsets.Get(key)
	if v == nil {
		return 0, errCorrupt
	}
	refs, list := splitPermset(v)
	n := permissionCount(list)
	if refs <= 1 {
		return n, t.permsets.Delete(key)
	}
	return n, t.permsets.Put(key, joinPermset(refs-1, bytes.Clone(list)))
}

// setPermsetRefs sets the references of a stored set.
func (t *tree) setPermsetRefs(key []byte, refs uint64) error {
	v := t.permsets.Get(key)
	if v == nil {
		return errors.New("permission set vanished")
	}
	_, list := splitPermset(v)
	return t.permsets.Put(key, joinPermset(refs, bytes.Clone(list)))
}

// permissions returns the list of a set.
func (t *tree) permissions(key []byte) ([]fm.Permission, error) {
	v := t.permsets.Get(key)
	if v == nil {
		return nil, errCorrupt
	}
	_, list := splitPermset(v)
	return decodePermissions(list)
}

// grants returns the grants a set makes, decoded once per tree.
func (t *tree) grants(key []byte) ([]fm.Grant, error) {
	if g, ok := t.grantCache[string(key)]; ok {
		return g, nil
	}
	perms, err := t.permissions(key)
	if err != nil {
		return nil, err
	}
	g := fm.GrantsOf(perms)
	if t.grantCache == nil {
		t.grantCache = map[string][]fm.Grant{}
	}
	t.grantCache[string(key)] = g
	return g, nil
}
