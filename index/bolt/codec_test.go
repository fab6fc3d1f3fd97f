package bolt

import (
	"encoding/binary"
	"reflect"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
)

func FuzzFolderCodec(f *testing.F) {
	f.Add("parent", "Name ✓", "rk", "def", byte(3), []byte("0123456789abcdef"))
	f.Add("", "", "", "", byte(0), []byte{})
	f.Fuzz(func(t *testing.T, parent, name, rk, def string, flags byte, key []byte) {
		in := &fm.Folder{ID: "id", ParentID: parent, Name: name, ResourceKey: rk, DefinitionID: def,
			OwnRestrictedDownload: flags&1 != 0, RestrictedDownload: flags&2 != 0, WritersCanShare: flags&4 != 0}
		copy(in.PermissionSet[:], key)
		copy(in.OwnSet[:], name)
		out := &fm.Folder{}
		if err := decodeFolder(out, "id", encodeFolder(in)); err != nil || !reflect.DeepEqual(in, out) {
			t.Fatalf("round trip: %+v → %+v, %v", in, out, err)
		}
		// Any byte string decodes to a value or an error, never a panic.
		_ = decodeFolder(out, "id", []byte(name))
		_, _ = fm.DecodePermissions([]byte(name))
		_, _ = decodeLibrary([]byte(name))
	})
}

func TestPermissionsAndLibraryCodecs(t *testing.T) {
	perms := []fm.Permission{{ID: "1", Type: "user", Role: "writer", EmailAddress: "a@b.c", DisplayName: "A", PhotoLink: "https://x"},
		{ID: "anyone", Type: "anyone", Role: "reader", AllowFileDiscovery: true}}
	got, err := fm.DecodePermissions(fm.AppendPermissions(nil, perms))
	if err != nil || !reflect.DeepEqual(got, perms) {
		t.Errorf("permissions: %+v, %v", got, err)
	}
	if _, err := fm.DecodePermissions(append(fm.AppendPermissions(nil, perms), 0)); err == nil {
		t.Error("permissions: trailing byte accepted")
	}
	rec := &libraryRecord{Generation: 42, ChangeLog: fm.ChangeLog{LogStart: 3, LogEntries: 7}, LibraryState: fm.LibraryState{ID: "lib", RootID: "r", DriveID: "d",
		SharingRequiresOrganizer: true, StartPageToken: "77", LastFullSync: time.Unix(1700000000, 5).UTC(),
		Folders: 3, Permissions: 9}}
	back, err := decodeLibrary(encodeLibrary(rec))
	if err != nil || !reflect.DeepEqual(back, rec) {
		t.Errorf("library: %+v, %v", back, err)
	}
	if _, err := decodeLibrary(append(encodeLibrary(rec), 0)); err == nil {
		t.Error("trailing byte accepted")
	}
}

// A padded uvarint reads back as its value, in as many bytes as asked or
// as the value needs.
func TestPaddedUvarint(t *testing.T) {
	for _, x := range []uint64{0, 1, 127, 128, 300, 1<<28 - 1, 1 << 28, 1<<64 - 1} {
		for _, width := range []int{0, 1, 4, binary.MaxVarintLen64, 12} {
			b := appendPaddedUvarint([]byte{0xff}, x, width)[1:]
			got, n := binary.Uvarint(b)
			want := max(min(width, binary.MaxVarintLen64), len(binary.AppendUvarint(nil, x)))
			if got != x || n != len(b) || len(b) != want {
				t.Errorf("%d in %d bytes: % x reads %d in %d bytes; want %d bytes", x, width, b, got, n, want)
			}
		}
	}
}
