package googlefake_test

import (
	"fmt"
	"testing"

	"github.com/foldermirror/foldermirror/googlefake"
	"google.golang.org/api/drive/v3"
)

// BenchmarkFilesList100k lists pages of 1000 out of a store of 100,000
// folders (100 shared top-level folders of 999 subfolders each), with
// parents and inline permissions, through the real client.
func BenchmarkFilesList100k(b *testing.B) {
	s := newFake(b)
	s.AddGroup("staff@example.com", bob)
	for i := range 100 {
		top := s.CreateFolder(alice, "", fmt.Sprint("top", i))
		s.Share(top, googlefake.Permission{Type: "group", Role: "writer", EmailAddress: "staff@example.com"})
		s.Share(top, googlefake.Permission{Type: "domain", Role: "reader", Domain: "example.com"})
		for j := range 999 {
			s.CreateFolder(alice, top, fmt.Sprint("sub", j))
		}
	}
	svc := driveAs(b, s, alice)
	const fields = "nextPageToken,files(id,name,mimeType,parents,trashed,driveId,permissions(id,type,role,emailAddress,domain,allowFileDiscovery))"
	var tokens []string // the page tokens of a full listing
	err := svc.Files.List().PageSize(1000).Fields(fields).Pages(b.Context(), func(l *drive.FileList) error {
		if len(l.Files) != 1000 {
			return fmt.Errorf("page of %d", len(l.Files))
		}
		tokens = append(tokens, l.NextPageToken)
		return nil
	})
	if err != nil || len(tokens) != 100 {
		b.Fatal(len(tokens), err)
	}
	for i := 0; b.Loop(); i++ {
		call := svc.Files.List().PageSize(1000).Fields(fields)
		if i%100 != 0 {
			call.PageToken(tokens[i%100-1])
		}
		l, err := call.Do()
		if err != nil || len(l.Files) != 1000 {
			b.Fatal(err)
		}
	}
}
