package foldermirror

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
)

// PermissionSetKey names a distinct permission list: the first 16 bytes of
// the SHA-256 of its encoding (AppendPermissions). Folders with equal lists
// share one set; 128 bits make two lists sharing a key beyond reach, even of
// someone choosing the lists (it takes about 2^64 tries to find a pair).
type PermissionSetKey [16]byte

// PermissionSet is a distinct permission list, in Drive's order, and its key.
type PermissionSet struct {
	Key         PermissionSetKey
	Permissions []Permission
}

// NewPermissionSet returns the set of a list.
func NewPermissionSet(perms []Permission) PermissionSet {
	return PermissionSet{Key: KeyOf(AppendPermissions(nil, perms)), Permissions: perms}
}

// KeyOf returns the key of an encoded permission list.
func KeyOf(encoded []byte) PermissionSetKey {
	sum := sha256.Sum256(encoded)
	return PermissionSetKey(sum[:16])
}

// permissionsFormat is the first byte of an encoded permission list.
const permissionsFormat = 1

// ErrCorrupt means an encoded record cannot be decoded.
var ErrCorrupt = errors.New("corrupt record")

// Flags of an encoded permission. A list whose permissions have only
// allowFileDiscovery encodes as it did before the others existed, so the
// keys of the sets stored then stay right.
const (
	flagAllowFileDiscovery = 1 << iota
	flagAlsoInherited
	flagOpaque
)

// AppendPermissions appends the encoding of a permission list to b: a
// format byte, the count, then each permission's fields in a fixed order,
// strings as a uvarint length and their bytes, and a byte of flags. Equal
// lists encode equally, so the encoding is what a set's key is made of.
func AppendPermissions(b []byte, perms []Permission) []byte {
	b = append(b, permissionsFormat)
	b = binary.AppendUvarint(b, uint64(len(perms)))
	for _, p := range perms {
		for _, s := range [...]string{p.ID, p.Type, p.Role, p.EmailAddress, p.Domain, p.DisplayName, p.PhotoLink} {
			b = binary.AppendUvarint(b, uint64(len(s)))
			b = append(b, s...)
		}
		b = append(b, permissionFlags(p))
	}
	return b
}

func permissionFlags(p Permission) byte {
	var flags byte
	if p.AllowFileDiscovery {
		flags |= flagAllowFileDiscovery
	}
	if p.AlsoInherited {
		flags |= flagAlsoInherited
	}
	if p.Opaque {
		flags |= flagOpaque
	}
	return flags
}

// DecodePermissions decodes a list AppendPermissions encoded; the strings
// are parts of one copy of b, so the list outlives b.
func DecodePermissions(b []byte) ([]Permission, error) {
	if len(b) == 0 || b[0] != permissionsFormat {
		return nil, ErrCorrupt
	}
	b = b[1:]
	n, size := binary.Uvarint(b)
	if size <= 0 || n > uint64(len(b)) {
		return nil, ErrCorrupt
	}
	b = b[size:]
	// The strings are parts of one copy of the list's bytes.
	all := string(b)
	perms := make([]Permission, n)
	for i := range perms {
		p := &perms[i]
		for _, s := range [...]*string{&p.ID, &p.Type, &p.Role, &p.EmailAddress, &p.Domain, &p.DisplayName, &p.PhotoLink} {
			l, size := binary.Uvarint(b)
			if size <= 0 || l > uint64(len(b)-size) {
				return nil, ErrCorrupt
			}
			at := len(all) - len(b) + size
			*s = all[at : at+int(l)]
			b = b[size+int(l):]
		}
		if len(b) == 0 {
			return nil, ErrCorrupt
		}
		if b[0]&^(flagAllowFileDiscovery|flagAlsoInherited|flagOpaque) != 0 {
			return nil, ErrCorrupt
		}
		p.AllowFileDiscovery = b[0]&flagAllowFileDiscovery != 0
		p.AlsoInherited = b[0]&flagAlsoInherited != 0
		p.Opaque = b[0]&flagOpaque != 0
		b = b[1:]
	}
	if len(b) != 0 {
		return nil, ErrCorrupt
	}
	return perms, nil
}

// PermissionCount reads only the number of permissions of an encoded list.
func PermissionCount(b []byte) int {
	if len(b) == 0 || b[0] != permissionsFormat {
		return 0
	}
	n, size := binary.Uvarint(b[1:])
	if size <= 0 {
		return 0
	}
	return int(n)
}
