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
)

// storageAccount is the member of every drive of drivesWorld.
const storageAccount = "storage@example.com"

// drivesWorld makes n shared drives of folders folders each, of which
// storageAccount is a member (organizer), and returns their IDs.
func drivesWorld(b *testing.B, n, folders int) (*googlefake.Server, []string) {
	b.Helper()
	s := newFake(b)
	s.Seed(1)
	s.AddUser(storageAccount)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = s.CreateSharedDrive(fmt.Sprint("drive ", i), storageAccount)
		for j := range folders {
			s.CreateFolder(storageAccount, ids[i], fmt.Sprint("folder ", j))
		}
	}
	return s, ids
}

// getter answers Drive GET requests of a user with the handler itself,
// nothing decoding the answer.
func getter(b testing.TB, s *googlefake.Server, user string) func(path string, q url.Values) []byte {
	b.Helper()
	tok, err := credentials(b, s, user).TokenSource.Token()
	if err != nil {
		b.Fatal(err)
	}
	return func(path string, q url.Values) []byte {
		req := httptest.NewRequest(http.MethodGet, "/drive/v3/"+path+"?"+q.Encode(), nil)
		req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatal(path, w.Code, w.Body.String())
		}
		return w.Body.Bytes()
	}
}

// stringField returns the value of a string field of a JSON answer, "" if
// it has none.
func stringField(body []byte, name string) string {
	_, rest, ok := bytes.Cut(body, []byte(`"`+name+`":"`))
	if !ok {
		return ""
	}
	return string(rest[:bytes.IndexByte(rest, '"')])
}

// BenchmarkSharedDrivesWorld builds worlds of 1,000 and 10,000 shared
// drives of 100 folders each, whose storage account is a member of every
// one, and times, the handler called directly: the whole drives.list of the
// account (pages of 100; an op is the whole listing), one drive's folders
// (files.list, corpora drive: an op is one drive's), a changes.list of
// one drive's log (an op is one drive's), at rest (nothing changed since
// the token) and after a change in each drive since the token; and the
// account's user change log after those changes (none of which it
// carries). Each costs the same whatever the number of drives.
func BenchmarkSharedDrivesWorld(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("%dk", n/1000), func(b *testing.B) {
			start := time.Now()
			s, ids := drivesWorld(b, n, 100)
			b.Logf("%d drives of 100 folders built in %v", n, time.Since(start).Round(time.Millisecond))
			get := getter(b, s, storageAccount)
			b.Run("drives.list", func(b *testing.B) {
				for b.Loop() {
					if got := listDrives(get); got != n {
						b.Fatal(got, "drives")
					}
				}
			})
			b.Run("files.list/one-drive", func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					body := get("files", url.Values{"corpora": {"drive"}, "driveId": {ids[i%n]}, "supportsAllDrives": {"true"},
						"includeItemsFromAllDrives": {"true"}, "pageSize": {"1000"}, "q": {"mimeType = 'application/vnd.google-apps.folder'"},
						"fields": {"nextPageToken,files(id,name,parents)"}})
					if got := bytes.Count(body, []byte(`"id":`)); got != 100 {
						b.Fatal(got, "folders listed, want 100")
					}
				}
			})
			token := stringField(get("changes/startPageToken", nil), "startPageToken")
			driveLog := func(b *testing.B, want int) {
				found := 0
				for i := 0; b.Loop(); i++ {
					body := get("changes", url.Values{"pageToken": {token}, "driveId": {ids[i%n]}, "supportsAllDrives": {"true"},
						"includeItemsFromAllDrives": {"true"}, "pageSize": {"1000"},
						"fields": {"nextPageToken,newStartPageToken,changes(fileId,removed,file(id,name,parents,trashed))"}})
					found += bytes.Count(body, []byte(`"fileId":`))
				}
				if found != want*b.N {
					b.Fatal(found, "changes in", b.N, "reads")
				}
			}
			b.Run("changes.list/at-rest", func(b *testing.B) { driveLog(b, 0) })
			for _, id := range ids {
				s.CreateFolder(storageAccount, id, "new")
			}
			b.Run("changes.list/one-change-each", func(b *testing.B) { driveLog(b, 1) })
			b.Run("changes.list/user-log", func(b *testing.B) {
				for b.Loop() {
					body := get("changes", url.Values{"pageToken": {token}, "supportsAllDrives": {"true"},
						"fields": {"nextPageToken,newStartPageToken,changes(changeType)"}})
					if bytes.Contains(body, []byte(`"changeType"`)) || stringField(body, "newStartPageToken") == "" {
						b.Fatal(string(body))
					}
				}
			})
		})
	}
}

// listDrives reads every page of drives.list, as discovery asks for them,
// and returns how many drives they hold.
func listDrives(get func(string, url.Values) []byte) int {
	n := 0
	q := url.Values{"pageSize": {"100"}, "fields": {"nextPageToken,drives(id,name,hidden)"}}
	for {
		body := get("drives", q)
		n += bytes.Count(body, []byte(`"id":`))
		next := stringField(body, "nextPageToken")
		if next == "" {
			return n
		}
		q.Set("pageToken", next)
	}
}
