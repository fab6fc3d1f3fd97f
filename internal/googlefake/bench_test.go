package googlefake_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/foldermirror/foldermirror/internal/googlefake"
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

// BenchmarkFilesListAnswer measures the fake alone answering files.list
// pages of 1,000 folders, with parents and inline permissions as a full
// sync asks, out of a 100,000-folder tree six levels deep where one folder
// in ten is shared with one of 50 users (so that folders inherit varied
// grants): the handler is called directly, and nothing decodes the answer.
func BenchmarkFilesListAnswer(b *testing.B) {
	s := newFake(b)
	root := s.CreateFolder(alice, "", "root")
	s.Share(root, googlefake.Permission{Type: "domain", Role: "reader", Domain: "example.com", AllowFileDiscovery: true})
	s.Share(root, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: bob})
	parents, made := []string{root}, 0
	for made < 100_000 {
		var next []string
		for i := 0; i < 7*len(parents) && made < 100_000; i++ {
			id := s.CreateFolder(alice, parents[i/7], fmt.Sprint("folder ", made))
			if made%10 == 0 {
				s.Share(id, googlefake.Permission{Type: "user", Role: "writer", EmailAddress: fmt.Sprintf("u%d@example.com", made%50)})
			}
			next, made = append(next, id), made+1
		}
		parents = next
	}
	tok, err := credentials(b, s, alice).TokenSource.Token()
	if err != nil {
		b.Fatal(err)
	}
	const fields = "nextPageToken,files(id,name,mimeType,parents,trashed,resourceKey,appProperties,copyRequiresWriterPermission," +
		"downloadRestrictions(itemDownloadRestriction(restrictedForReaders)),writersCanShare,hasAugmentedPermissions," +
		"permissions(id,type,role,emailAddress,domain,displayName,photoLink,allowFileDiscovery,deleted))"
	page := func(token string) (string, int) {
		q := url.Values{"pageSize": {"1000"}, "fields": {fields}, "q": {"mimeType = '" + folder + "' and trashed = false"}}
		if token != "" {
			q.Set("pageToken", token)
		}
		req := httptest.NewRequest(http.MethodGet, "/drive/v3/files?"+q.Encode(), nil)
		req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatal(w.Code, w.Body.String())
		}
		next := ""
		if _, rest, ok := bytes.Cut(w.Body.Bytes(), []byte(`"nextPageToken":"`)); ok {
			next = string(rest[:bytes.IndexByte(rest, '"')])
		}
		return next, w.Body.Len()
	}
	tokens := []string{""}
	for next, _ := page(""); next != ""; next, _ = page(next) {
		tokens = append(tokens, next)
	}
	var size int
	for i := 0; b.Loop(); i++ {
		_, n := page(tokens[i%len(tokens)])
		size += n
	}
	b.ReportMetric(float64(size)/float64(b.N), "bytes/page")
}
