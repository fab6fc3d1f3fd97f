package foldermirror_test

import (
	"bytes"
	"errors"
	"testing"

	fm "github.com/foldermirror/foldermirror"
)

func TestPermissionsCodec(t *testing.T) {
	perms := []fm.Permission{
		ownerAnn, domainFound, also(anyoneFound),
		with(teamReader, func(p *fm.Permission) { p.Opaque = true }),
		with(domainLink, func(p *fm.Permission) { p.AlsoInherited, p.Opaque = true, true }),
	}
	got, err := fm.DecodePermissions(fm.AppendPermissions(nil, perms))
	if err != nil {
		t.Fatal(err)
	}
	if describe(got) != describe(perms) {
		t.Errorf("decoded\n%s\nwant\n%s", describe(got), describe(perms))
	}
}

// Lists of permissions without the flags added later encode as they did
// before, so that the keys of the sets stored then are still theirs.
func TestPermissionsCodecKeepsOldEncodings(t *testing.T) {
	old := []byte{1, 2,
		2, '0', '1', 4, 'u', 's', 'e', 'r', 5, 'o', 'w', 'n', 'e', 'r', 15, 'a', 'n', 'n', '@', 'e', 'x', 'a', 'm', 'p', 'l', 'e', '.', 'c', 'o', 'm', 0, 0, 0, 0,
		3, '0', '9', 'k', 6, 'd', 'o', 'm', 'a', 'i', 'n', 6, 'r', 'e', 'a', 'd', 'e', 'r', 0, 11, 'e', 'x', 'a', 'm', 'p', 'l', 'e', '.', 'c', 'o', 'm', 0, 0, 1,
	}
	if got := fm.AppendPermissions(nil, []fm.Permission{ownerAnn, domainFound}); !bytes.Equal(got, old) {
		t.Errorf("encoding\n got %v\nwant %v", got, old)
	}
	for _, flags := range []byte{8, 0x80} {
		corrupt := append(bytes.Clone(old[:len(old)-1]), flags)
		if _, err := fm.DecodePermissions(corrupt); !errors.Is(err, fm.ErrCorrupt) {
			t.Errorf("flags %#x: %v, want ErrCorrupt", flags, err)
		}
	}
}
