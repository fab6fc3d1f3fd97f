package drivelist

import (
	"encoding/json"
	"fmt"
	"testing"

	drive "google.golang.org/api/drive/v3"
)

// benchPage is a page of n folders shaped like a domain's: each shared with
// the principals of one of lists distinct lists of 6 permissions, the
// same for ten folders in a row (siblings, listed together).
func benchPage(n, lists int) []byte {
	page := drive.FileList{NextPageToken: "next-token", Files: make([]*drive.File, n)}
	for i := range n {
		l := i / 10 % lists
		perms := make([]*drive.Permission, 6)
		for j := range perms {
			perms[j] = &drive.Permission{Id: fmt.Sprintf("%d%d", l, j), Type: "user", Role: "writer",
				EmailAddress: fmt.Sprintf("user%d-%d@example.com", l, j), DisplayName: fmt.Sprintf("User %d %d", l, j),
				PhotoLink: "https://lh3.googleusercontent.com/a/photo", PermissionDetails: []*drive.PermissionPermissionDetails{
					{Role: "writer", Inherited: j > 0, PermissionType: "file", InheritedFrom: "0AbCdEfGhIjKlMnOpQrStUvW"}}}
		}
		page.Files[i] = &drive.File{Id: fmt.Sprintf("1AbCdEfGhIjKlMnOpQrStUvWxYz%07d", i), Name: fmt.Sprintf("Folder %d", i),
			MimeType: "application/vnd.google-apps.folder", Parents: []string{fmt.Sprintf("1AbCdEfGhIjKlMnOpQrStUvWxYz%07d", i/10)},
			CreatedTime: "2020-01-01T00:00:00.000Z", WritersCanShare: true, Permissions: perms,
			ForceSendFields: []string{"Trashed", "CopyRequiresWriterPermission", "HasAugmentedPermissions"}}
	}
	data, err := json.Marshal(&page)
	if err != nil {
		panic(err)
	}
	return data
}

// distinctListsPage is a page of n folders as a changes.list page of scattered
// changes gives them: each folder's list its own, of the 4 permissions its
// library's root gives every folder, 2 of a pool of 300 inherited from the
// folders above, and 1 of the folder itself.
func distinctListsPage(n int) []byte {
	perm := func(id string, inheritedFrom string) *drive.Permission {
		detail := &drive.PermissionPermissionDetails{Role: "reader", PermissionType: "file"}
		if inheritedFrom != "" {
			detail.Inherited, detail.InheritedFrom = true, inheritedFrom
		}
		return &drive.Permission{Id: id, Type: "user", Role: "reader", EmailAddress: id + "@example.com",
			DisplayName: "User " + id, PermissionDetails: []*drive.PermissionPermissionDetails{detail}}
	}
	page := drive.FileList{NextPageToken: "next-token", Files: make([]*drive.File, n)}
	for i := range n {
		perms := make([]*drive.Permission, 0, 7)
		for j := range 4 {
			perms = append(perms, perm(fmt.Sprintf("root%d", j), "0AbCdEfGhIjKlMnOpQrStUvW"))
		}
		for _, k := range []int{i % 300, (i*7 + 1) % 300} {
			perms = append(perms, perm(fmt.Sprintf("pool%03d", k), fmt.Sprintf("1AbCdEfGhIjKlMnOpQrS%07d", k)))
		}
		perms = append(perms, perm(fmt.Sprintf("own%04d", i), ""))
		page.Files[i] = &drive.File{Id: fmt.Sprintf("1AbCdEfGhIjKlMnOpQrStUvWxYz%07d", i), Name: fmt.Sprintf("Folder %d", i),
			MimeType: "application/vnd.google-apps.folder", Parents: []string{fmt.Sprintf("1AbCdEfGhIjKlMnOpQrStUvWxYz%07d", i/10)},
			Permissions: perms}
	}
	data, err := json.Marshal(&page)
	if err != nil {
		panic(err)
	}
	return data
}

// BenchmarkDecode decodes a page of 1,000 folders, 6 permissions each in
// 100 distinct lists: with the Decoder (its lists met on earlier pages, as
// in a listing), and with encoding/json as the client library does; and
// with a new Decoder, a page of as many distinct lists as folders, as a
// changes.list page of scattered changes is (distinctListsPage).
func BenchmarkDecode(b *testing.B) {
	page := benchPage(1000, 100)
	b.Run("drivelist", func(b *testing.B) {
		d := New()
		b.SetBytes(int64(len(page)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := d.Decode(page); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("distinct-lists", func(b *testing.B) {
		page := distinctListsPage(1000)
		b.SetBytes(int64(len(page)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := New().Decode(page); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(page)))
		b.ReportAllocs()
		for b.Loop() {
			var list drive.FileList
			if err := json.Unmarshal(page, &list); err != nil {
				b.Fatal(err)
			}
		}
	})
}
