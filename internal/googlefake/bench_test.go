package googlefake_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

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

// syncFields is what a full sync asks of each folder.
const syncFields = "nextPageToken,files(id,name,mimeType,parents,trashed,resourceKey,appProperties,copyRequiresWriterPermission," +
	"downloadRestrictions(itemDownloadRestriction(restrictedForReaders)),writersCanShare,hasAugmentedPermissions," +
	"permissions(id,type,role,emailAddress,domain,displayName,photoLink,allowFileDiscovery,deleted))"

// foldersQ is a full sync's query.
const foldersQ = "mimeType = '" + folder + "' and trashed = false"

// bigWorld makes alice's My Drive of n folders: n/1000 top-level folders,
// each shared with a group and the domain, of 999 subfolders each.
func bigWorld(b *testing.B, n int) *googlefake.Server {
	b.Helper()
	s := newFake(b)
	s.Seed(1)
	s.AddGroup("staff@example.com", bob)
	for i := range n / 1000 {
		top := s.CreateFolder(alice, "", fmt.Sprint("top", i))
		s.Share(top, googlefake.Permission{Type: "group", Role: "writer", EmailAddress: "staff@example.com"})
		s.Share(top, googlefake.Permission{Type: "domain", Role: "reader", Domain: "example.com"})
		for j := range 999 {
			s.CreateFolder(alice, top, fmt.Sprint("sub", j))
		}
	}
	return s
}

// pageRequest is a files.list request of a listing: its parameters and
// page token.
type pageRequest struct {
	q, orderBy, token string
}

func (r pageRequest) values() url.Values {
	v := url.Values{"pageSize": {"1000"}, "fields": {syncFields}, "q": {r.q}}
	if r.orderBy != "" {
		v.Set("orderBy", r.orderBy)
	}
	if r.token != "" {
		v.Set("pageToken", r.token)
	}
	return v
}

// pager answers files.list requests of alice's with the handler itself,
// nothing decoding the answer: it returns the next page token and how
// many files the page has.
func pager(b *testing.B, s *googlefake.Server) func(pageRequest) (next string, files int) {
	b.Helper()
	tok, err := credentials(b, s, alice).TokenSource.Token()
	if err != nil {
		b.Fatal(err)
	}
	return func(r pageRequest) (string, int) {
		req := httptest.NewRequest(http.MethodGet, "/drive/v3/files?"+r.values().Encode(), nil)
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
		return next, bytes.Count(w.Body.Bytes(), []byte(`"mimeType":`))
	}
}

// pages returns the requests of every page of the listings and how many
// files they list together.
func pages(page func(pageRequest) (string, int), listings ...pageRequest) ([]pageRequest, int) {
	var out []pageRequest
	total := 0
	for _, r := range listings {
		for {
			out = append(out, r)
			next, n := page(r)
			total += n
			if next == "" {
				break
			}
			r.token = next
		}
	}
	return out, total
}

// loopPages answers the requests, in a scattered order, as long as the
// benchmark asks, and reports how many files a page had on average.
func loopPages(b *testing.B, page func(pageRequest) (string, int), requests []pageRequest) {
	b.Helper()
	files := 0
	for i := 0; b.Loop(); i++ {
		_, n := page(requests[(i*7919)%len(requests)])
		files += n
	}
	b.ReportMetric(float64(files)/float64(b.N), "files/page")
}

// BenchmarkFilesListWorld answers pages of 1,000 folders, as a full sync
// asks them, out of worlds of 100,000 and 1,000,000 (see bigWorld), the
// handler called directly: a whole listing in the default order
// ("unranged"), and, the folders' times spread over ten years, listings
// of createdTime ranges of some 2,500 folders each in createdTime order
// ascending and descending, and a whole listing in modifiedTime order.
// Each page costs a binary search and the page, whatever the size of the
// world.
func BenchmarkFilesListWorld(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("%dk", n/1000), func(b *testing.B) {
			s := bigWorld(b, n)
			page := pager(b, s)
			b.Run("unranged", func(b *testing.B) {
				requests, total := pages(page, pageRequest{q: foldersQ})
				if total != n {
					b.Fatal(total, "folders")
				}
				loopPages(b, page, requests)
			})
			from, to := time.Date(2012, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2022, 1, 1, 0, 0, 0, 0, time.UTC)
			s.SpreadTimes(from, to)
			for _, orderBy := range []string{"createdTime", "createdTime desc"} {
				b.Run("ranged/"+orderBy, func(b *testing.B) {
					ranges := n / 2500
					step := to.Sub(from) / time.Duration(ranges)
					var listings []pageRequest
					for i := range ranges {
						lo, hi := from.Add(time.Duration(i)*step), from.Add(time.Duration(i+1)*step)
						if i == ranges-1 {
							hi = to
						}
						q := fmt.Sprintf("%s and createdTime >= '%s' and createdTime < '%s'", foldersQ,
							lo.Format(time.RFC3339Nano), hi.Format(time.RFC3339Nano))
						listings = append(listings, pageRequest{q: q, orderBy: orderBy})
					}
					requests, total := pages(page, listings...)
					if total != n {
						b.Fatal(total, "folders")
					}
					loopPages(b, page, requests)
				})
			}
			b.Run("modifiedTime", func(b *testing.B) {
				requests, total := pages(page, pageRequest{q: foldersQ, orderBy: "modifiedTime"})
				if total != n {
					b.Fatal(total, "folders")
				}
				loopPages(b, page, requests)
			})
		})
	}
}
