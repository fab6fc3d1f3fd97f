package googlefake_test

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/foldermirror/foldermirror/internal/googlefake"
	"google.golang.org/api/drive/v3"
)

// timed is a file of a test world as the tests know it: its place in
// creation order, what it is, and its times as files.list reports them.
type timed struct {
	seq               int
	id, name, mime    string
	parent            string
	created, modified time.Time
}

// timedWorld is a world whose files have times spread over ten years, with
// ties and times out of creation order.
type timedWorld struct {
	s       *googlefake.Server
	svc     *drive.Service
	seq     map[string]int // file ID → place in creation order
	parents []string
	now     time.Time // the fake's clock
}

// newTimedWorld makes, in alice's My Drive, 3 folders and 300 files and
// folders in them; spreads their times over 2012–2022; gives 40 of them one
// createdTime and 20 one modifiedTime; moves some times out of creation
// order; deletes a few; and, with the clock in 2023, renames some (which
// sets their modifiedTime) and makes a few more. The modifiedTime index is
// made before the changes, so that they go through it.
func newTimedWorld(t *testing.T) *timedWorld {
	t.Helper()
	s := newFake(t)
	s.Seed(7)
	w := &timedWorld{s: s, svc: driveAs(t, s, alice), seq: map[string]int{}, now: date(2023, 1, 1)}
	s.SetClock(func() time.Time { return w.now })
	var made []string
	create := func(parent, name, mime string) string {
		id := s.CreateFile(alice, parent, name, mime)
		w.seq[id] = len(w.seq)
		made = append(made, id)
		return id
	}
	for i := range 3 {
		w.parents = append(w.parents, create("", fmt.Sprint("parent ", i), folder))
	}
	for i := range 300 {
		mime := folder
		if i%4 == 3 {
			mime = "application/pdf"
		}
		create(w.parents[i%3], fmt.Sprintf("item %03d", i), mime)
	}
	s.SpreadTimes(date(2012, 1, 1), date(2022, 1, 1))
	listAll(t, w.svc.Files.List().OrderBy("modifiedTime").Fields("nextPageToken,files(id)"))
	tie, _ := time.Parse(time.RFC3339, "2016-06-06T06:06:06.666Z")
	for _, id := range made[100:140] {
		s.SetFileTimes(id, tie, time.Time{})
	}
	for _, id := range made[200:220] {
		s.SetFileTimes(id, time.Time{}, tie)
	}
	s.SetFileTimes(made[10], date(2011, 5, 5), date(2021, 5, 5))
	s.SetFileTimes(made[250], date(2013, 5, 5), time.Time{})
	for _, id := range made[290:] {
		s.Delete(id)
		delete(w.seq, id)
	}
	for i, id := range made[50:60] {
		w.now = w.now.Add(time.Duration(i) * time.Hour)
		s.Rename(id, fmt.Sprintf("renamed %d", i))
	}
	for i := range 5 {
		create(w.parents[0], fmt.Sprint("new ", i), folder)
	}
	return w
}

func date(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

// driveTime is Drive's form of a time: RFC 3339, UTC, milliseconds.
var driveTime = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

// corpus lists every file of alice's with its times, checking their form.
func (w *timedWorld) corpus(t *testing.T) []timed {
	t.Helper()
	var out []timed
	for _, f := range listAll(t, w.svc.Files.List().PageSize(1000).Fields("nextPageToken,files(id,name,mimeType,parents,createdTime,modifiedTime)")) {
		if !driveTime.MatchString(f.CreatedTime) || !driveTime.MatchString(f.ModifiedTime) {
			t.Fatalf("%s: times %q %q", f.Name, f.CreatedTime, f.ModifiedTime)
		}
		c, _ := time.Parse(time.RFC3339, f.CreatedTime)
		m, _ := time.Parse(time.RFC3339, f.ModifiedTime)
		out = append(out, timed{seq: w.seq[f.Id], id: f.Id, name: f.Name, mime: f.MimeType, parent: f.Parents[0], created: c, modified: m})
	}
	if len(out) != len(w.seq) {
		t.Fatalf("corpus of %d files, want %d", len(out), len(w.seq))
	}
	return out
}

// sortKey is an order of a test: a time of a file, and the direction.
type sortKey struct {
	time func(timed) time.Time
	desc bool
}

var (
	byCreated  = func(f timed) time.Time { return f.created }
	byModified = func(f timed) time.Time { return f.modified }
)

// expect returns the names of the files that match, in the order keys
// say, ties in creation order (reversed when the last key is desc).
func expect(corpus []timed, match func(timed) bool, keys ...sortKey) []string {
	var files []timed
	for _, f := range corpus {
		if match(f) {
			files = append(files, f)
		}
	}
	slices.SortFunc(files, func(a, b timed) int {
		for _, k := range keys {
			if c := k.time(a).Compare(k.time(b)); c != 0 {
				return flip(c, k.desc)
			}
		}
		return flip(cmp.Compare(a.seq, b.seq), keys[len(keys)-1].desc)
	})
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.name
	}
	return out
}

func flip(c int, desc bool) int {
	if desc {
		return -c
	}
	return c
}

// listed returns the names a listing returns, in its order, page by page
// of pageSize, checking that no file comes twice.
func listed(t *testing.T, call *drive.FilesListCall, pageSize int64) []string {
	t.Helper()
	var out []string
	seen := map[string]bool{}
	pages := 0
	err := call.PageSize(pageSize).Fields("nextPageToken,files(id,name)").Pages(t.Context(), func(l *drive.FileList) error {
		if pages++; pages > 1000 {
			return errors.New("over 1,000 pages: the listing goes round")
		}
		for _, f := range l.Files {
			if seen[f.Id] {
				t.Errorf("%s listed twice", f.Name)
			}
			seen[f.Id] = true
			out = append(out, f.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTimeQueries lists the timed world with queries on createdTime and
// modifiedTime, in pages of 13, and checks each listing against the
// corpus. The everyday run lists each query in one of the orders, every
// order in turn; -tags long lists each in every order (everyTimeOrder).
func TestTimeQueries(t *testing.T) {
	w := newTimedWorld(t)
	corpus := w.corpus(t)
	tie, _ := time.Parse(time.RFC3339, "2016-06-06T06:06:06.666Z")
	mid, _ := time.Parse(time.RFC3339, "2017-03-04T05:06:07.123Z")
	before := func(at time.Time) func(time.Time) bool { return func(x time.Time) bool { return x.Before(at) } }
	after := func(at time.Time) func(time.Time) bool { return func(x time.Time) bool { return x.After(at) } }
	not := func(p func(time.Time) bool) func(time.Time) bool { return func(x time.Time) bool { return !p(x) } }
	equal := func(at time.Time) func(time.Time) bool { return func(x time.Time) bool { return x.Equal(at) } }
	created := func(p func(time.Time) bool) func(timed) bool { return func(f timed) bool { return p(f.created) } }
	modified := func(p func(time.Time) bool) func(timed) bool { return func(f timed) bool { return p(f.modified) } }
	tests := []struct {
		q     string
		match func(timed) bool
	}{
		{"createdTime < '2016-06-06T06:06:06.666Z'", created(before(tie))},
		{"createdTime <= '2016-06-06T06:06:06.666Z'", created(not(after(tie)))},
		{"createdTime > '2016-06-06T06:06:06.666Z'", created(after(tie))},
		{"createdTime >= '2016-06-06T06:06:06.666Z'", created(not(before(tie)))},
		{"createdTime = '2016-06-06T06:06:06.666Z'", created(equal(tie))},
		{"createdTime != '2016-06-06T06:06:06.666Z'", created(not(equal(tie)))},
		{"modifiedTime < '2016-06-06T06:06:06.666Z'", modified(before(tie))},
		{"modifiedTime <= '2016-06-06T06:06:06.666Z'", modified(not(after(tie)))},
		{"modifiedTime > '2016-06-06T06:06:06.666Z'", modified(after(tie))},
		{"modifiedTime >= '2016-06-06T06:06:06.666Z'", modified(not(before(tie)))},
		{"modifiedTime = '2016-06-06T06:06:06.666Z'", modified(equal(tie))},
		{"modifiedTime != '2016-06-06T06:06:06.666Z'", modified(not(equal(tie)))},
		// The forms of a time: no zone is UTC; an offset; a date alone is
		// its midnight UTC; a fraction of a millisecond lies between two.
		{"createdTime < '2017-03-04T05:06:07.123'", created(before(mid))},
		{"createdTime < '2017-03-04T07:06:07.123+02:00'", created(before(mid))},
		{"createdTime < '2017-03-04t05:06:07.123z'", created(before(mid))},
		{"createdTime >= '2017-03-04'", created(not(before(date(2017, 3, 4))))},
		{"createdTime > '2016-06-06T06:06:06.6655Z'", created(not(before(tie)))},
		{"createdTime < '2016-06-06T06:06:06.6665Z'", created(not(after(tie)))},
		{"createdTime = '2016-06-06T06:06:06.6665Z'", func(timed) bool { return false }},
		{"createdTime != '2016-06-06T06:06:06.6665Z'", func(timed) bool { return true }},
		// With the other terms.
		{"createdTime >= '2014-01-01' and createdTime < '2018-01-01' and mimeType = '" + folder + "'",
			func(f timed) bool {
				return !f.created.Before(date(2014, 1, 1)) && f.created.Before(date(2018, 1, 1)) && f.mime == folder
			}},
		{"(createdTime < '2013-01-01' or modifiedTime > '2021-01-01') and trashed = false",
			func(f timed) bool { return f.created.Before(date(2013, 1, 1)) || f.modified.After(date(2021, 1, 1)) }},
		{"createdTime < '2013-01-01' or createdTime >= '2020-01-01'",
			func(f timed) bool { return f.created.Before(date(2013, 1, 1)) || !f.created.Before(date(2020, 1, 1)) }},
		{"not createdTime > '2015-01-01'", created(not(after(date(2015, 1, 1))))},
		{"'" + w.parents[1] + "' in parents and createdTime > '2015-01-01'",
			func(f timed) bool { return f.parent == w.parents[1] && f.created.After(date(2015, 1, 1)) }},
		{"createdTime > '2020-01-01' and createdTime < '2014-01-01'", func(timed) bool { return false }},
	}
	orders := []struct {
		orderBy string
		keys    []sortKey
	}{
		{"", []sortKey{{byCreated, false}}},
		{"createdTime", []sortKey{{byCreated, false}}},
		{"createdTime desc", []sortKey{{byCreated, true}}},
		{"modifiedTime", []sortKey{{byModified, false}}},
		{"modifiedTime desc", []sortKey{{byModified, true}}},
		{"modifiedTime desc,createdTime", []sortKey{{byModified, true}, {byCreated, false}}},
		{"createdTime asc, modifiedTime desc", []sortKey{{byCreated, false}, {byModified, true}}},
	}
	for i, tt := range tests {
		t.Run(tt.q, func(t *testing.T) {
			for j, o := range orders {
				if !everyTimeOrder && j != i%len(orders) {
					continue // each query in one order, each order in turn
				}
				want := expect(corpus, tt.match, o.keys...)
				got := listed(t, w.svc.Files.List().Q(tt.q).OrderBy(o.orderBy), 13)
				if !slices.Equal(got, want) {
					t.Errorf("orderBy %q: %d files\n%v\nwant %d\n%v", o.orderBy, len(got), got, len(want), want)
				}
			}
		})
	}
}

// TestRangesCoverTheCorpus lists the corpus in createdTime ranges, as a
// parallel full sync does, each in createdTime order, in small pages: the
// ranges together list every file once.
func TestRangesCoverTheCorpus(t *testing.T) {
	w := newTimedWorld(t)
	corpus := w.corpus(t)
	all := expect(corpus, func(timed) bool { return true }, sortKey{byCreated, false})
	var bounds []string // inner bounds, every year, one of them the tie
	for y := 2012; y < 2023; y++ {
		bounds = append(bounds, fmt.Sprintf("%d-01-01T00:00:00Z", y))
	}
	bounds = append(bounds, "2016-06-06T06:06:06.666Z")
	slices.Sort(bounds)
	var got []string
	for i := 0; i <= len(bounds); i++ {
		var terms []string
		if i > 0 {
			terms = append(terms, "createdTime >= '"+bounds[i-1]+"'")
		}
		if i < len(bounds) {
			terms = append(terms, "createdTime < '"+bounds[i]+"'")
		}
		got = append(got, listed(t, w.svc.Files.List().Q(strings.Join(terms, " and ")).OrderBy("createdTime"), 7)...)
	}
	if !slices.Equal(got, all) {
		t.Errorf("ranges list %d files, want %d\n%v\n%v", len(got), len(all), got, all)
	}
}

// With IgnoreCreatedTimeBounds, the createdTime comparisons it names match
// every file, as on a server that ignores them, and the rest of the query,
// modifiedTime's comparisons and orderBy are kept.
func TestIgnoredCreatedTimeBounds(t *testing.T) {
	w := newTimedWorld(t)
	corpus := w.corpus(t)
	all := expect(corpus, func(timed) bool { return true }, sortKey{byCreated, false})
	from, to := date(2015, 1, 1), date(2018, 1, 1)
	const q = "createdTime >= '2015-01-01T00:00:00Z' and createdTime < '2018-01-01T00:00:00Z'"
	for _, tc := range []struct {
		name   string
		ignore googlefake.TimeBounds
		match  func(timed) bool
	}{
		{"none", 0, func(f timed) bool { return !f.created.Before(from) && f.created.Before(to) }},
		{"lower", googlefake.LowerTimeBounds, func(f timed) bool { return f.created.Before(to) }},
		{"upper", googlefake.UpperTimeBounds, func(f timed) bool { return !f.created.Before(from) }},
		{"all", googlefake.AllTimeBounds, func(timed) bool { return true }},
	} {
		w.s.IgnoreCreatedTimeBounds(tc.ignore)
		want := expect(corpus, tc.match, sortKey{byCreated, false})
		if got := listed(t, w.svc.Files.List().Q(q).OrderBy("createdTime"), 50); !slices.Equal(got, want) {
			t.Errorf("%s ignored: %d files, want %d", tc.name, len(got), len(want))
		}
	}
	if got := listed(t, w.svc.Files.List().Q("createdTime = '2016-06-06T06:06:06.666Z'"), 50); !slices.Equal(got, all) {
		t.Errorf("every bound ignored: createdTime = lists %d files, want all %d", len(got), len(all))
	}
	byModified := expect(corpus, func(f timed) bool { return f.modified.Before(to) }, sortKey{byCreated, false})
	if got := listed(t, w.svc.Files.List().Q("modifiedTime < '2018-01-01T00:00:00Z'"), 50); !slices.Equal(got, byModified) {
		t.Errorf("modifiedTime < with createdTime bounds ignored: %d files, want %d", len(got), len(byModified))
	}
}

// TestTiesPageWithoutLoss lists files that share one createdTime in pages
// smaller than the tie: creation order ascending, its reverse descending.
func TestTiesPageWithoutLoss(t *testing.T) {
	s := newFake(t)
	at := date(2019, 9, 9)
	s.SetClock(func() time.Time { return at })
	var want []string
	for i := range 25 {
		name := fmt.Sprintf("tie %02d", i)
		s.CreateFolder(alice, "", name)
		want = append(want, name)
	}
	s.SetClock(func() time.Time { return at.Add(time.Millisecond) })
	s.CreateFolder(alice, "", "later")
	svc := driveAs(t, s, alice)
	tests := []struct {
		q, orderBy string
		want       []string
	}{
		{"", "createdTime", append(slices.Clone(want), "later")},
		{"", "createdTime desc", append([]string{"later"}, reversed(want)...)},
		{"createdTime = '2019-09-09T00:00:00Z'", "createdTime", want},
		{"createdTime <= '2019-09-09T00:00:00Z'", "createdTime desc", reversed(want)},
		{"createdTime = '2019-09-09'", "modifiedTime desc, createdTime desc", reversed(want)},
	}
	for _, tt := range tests {
		for _, size := range []int64{1, 4, 25, 100} {
			if got := listed(t, svc.Files.List().Q(tt.q).OrderBy(tt.orderBy), size); !slices.Equal(got, tt.want) {
				t.Errorf("%q by %q in pages of %d: %v", tt.q, tt.orderBy, size, got)
			}
		}
	}
}

func reversed(s []string) []string {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

func TestTimeErrors(t *testing.T) {
	s := newFake(t)
	for i := range 3 {
		s.CreateFolder(alice, "", fmt.Sprint("f", i))
	}
	svc := driveAs(t, s, alice)
	for _, q := range []string{
		"createdTime > '2012-13-01'", "createdTime > 'yesterday'", "createdTime > '2012-06-04T12:00'",
		"createdTime > '2012-06-04T25:00:00Z'", "createdTime = '2012-06-04T12:00:00+0800'",
		"modifiedTime < '2012-06-04 12:00:00'", "createdTime > ''", "createdTime > 2012",
		"createdTime contains '2012'", "createdTime >", "createdTime", "createdTime ( '2012-01-01'",
		"'2012-01-01' < createdTime", "createdTime >> '2012-01-01'", "name < 'x'", "trashed >= true",
		"viewedByMeTime > '2012-01-01'",
	} {
		t.Run(q, func(t *testing.T) {
			_, err := svc.Files.List().Q(q).Do()
			gerr := wantAPIError(t, err, 400, "invalid")
			if gerr.Message != "Invalid Value" || !strings.Contains(gerr.Body, `"location":"q"`) {
				t.Errorf("message %q, body %s", gerr.Message, gerr.Body)
			}
		})
	}

	tests := []struct {
		orderBy string
		code    int
		reason  string
	}{
		{"size", 400, "invalid"},
		{"createdTime up", 400, "invalid"},
		{"createdTime desc desc", 400, "invalid"},
		{"createdTime,", 400, "invalid"},
		{"name", 501, "notImplemented"},
		{"createdTime,folder", 501, "notImplemented"},
	}
	for _, tt := range tests {
		t.Run(tt.orderBy, func(t *testing.T) {
			_, err := svc.Files.List().OrderBy(tt.orderBy).Do()
			gerr := wantAPIError(t, err, tt.code, tt.reason)
			if !strings.Contains(gerr.Body, `"location":"orderBy"`) {
				t.Errorf("body %s", gerr.Body)
			}
		})
	}

	// A page token continues its own order only.
	first, err := svc.Files.List().PageSize(1).OrderBy("createdTime desc").Do()
	if err != nil || first.NextPageToken == "" {
		t.Fatal(first, err)
	}
	for _, orderBy := range []string{"", "createdTime", "modifiedTime desc"} {
		_, err := svc.Files.List().PageSize(1).OrderBy(orderBy).PageToken(first.NextPageToken).Do()
		gerr := wantAPIError(t, err, 400, "invalid")
		if !strings.Contains(gerr.Body, `"location":"pageToken"`) {
			t.Errorf("%q: body %s", orderBy, gerr.Body)
		}
	}
	if _, err := svc.Files.List().PageSize(1).OrderBy("createdTime  DESC").PageToken(first.NextPageToken).Do(); err != nil {
		t.Errorf("same order, written otherwise: %v", err)
	}
}

// TestModifiedTime checks what sets a file's modifiedTime: a rename, a
// change of parents and an edit of the content, not permissions, trash or
// the folder's children; and that its createdTime never moves.
func TestModifiedTime(t *testing.T) {
	s := newFake(t)
	now := date(2020, 2, 2)
	s.SetClock(func() time.Time { return now })
	other := s.CreateFolder(alice, "", "other")
	svc := driveAs(t, s, alice)
	tests := []struct {
		name  string
		do    func(id string)
		moves bool
	}{
		{"Rename", func(id string) { s.Rename(id, "renamed") }, true},
		{"Move", func(id string) { s.Move(id, other) }, true},
		{"AddParent", func(id string) { s.AddParent(id, other) }, true},
		{"ForceParents", func(id string) { s.ForceParents(id, other) }, true},
		{"Touch", s.Touch, true},
		{"Share", func(id string) { s.Share(id, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: bob}) }, false},
		{"Unshare", func(id string) {
			s.Unshare(id, s.Share(id, googlefake.Permission{Type: "anyone", Role: "reader"}))
		}, false},
		{"Trash", s.Trash, false},
		{"Untrash", func(id string) { s.Trash(id); s.Untrash(id) }, false},
		{"Modify", func(id string) { s.Modify(id, func(f *googlefake.File) { f.ResourceKey = "k" }) }, false},
		{"child created", func(id string) { s.CreateFolder(alice, id, "child") }, false},
		{"child moved in", func(id string) { s.Move(s.CreateFolder(alice, "", "stray"), id) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			made := now
			id := s.CreateFolder(alice, "", "subject")
			now = now.Add(time.Hour)
			start, err := svc.Changes.GetStartPageToken().Do()
			if err != nil {
				t.Fatal(err)
			}
			tt.do(id)
			f, err := svc.Files.Get(id).Fields("createdTime,modifiedTime").Do()
			if err != nil {
				t.Fatal(err)
			}
			want := made
			if tt.moves {
				want = now
			}
			if f.CreatedTime != made.Format("2006-01-02T15:04:05.000Z") || f.ModifiedTime != want.Format("2006-01-02T15:04:05.000Z") {
				t.Errorf("times %s %s; want created %s, modified %s", f.CreatedTime, f.ModifiedTime, made, want)
			}
			changes, err := svc.Changes.List(start.StartPageToken).Fields("changes(fileId)").Do()
			if tt.moves && (err != nil || !slices.ContainsFunc(changes.Changes, func(c *drive.Change) bool { return c.FileId == id })) {
				t.Errorf("no change logged for the file: %v", err)
			}
			now = now.Add(time.Hour)
		})
	}
}

// TestSetTimes checks times set by a test: on files.get, files.list and a
// shared drive, and SpreadTimes's spread.
func TestSetTimes(t *testing.T) {
	s := newFake(t)
	s.Seed(3)
	s.SetClock(func() time.Time { return time.Date(2021, 7, 7, 7, 7, 7, 777_999_999, time.UTC) })
	d := s.CreateSharedDrive("Team", alice)
	id := s.CreateFolder(alice, "", "f")
	svc := driveAs(t, s, alice)
	get := func(id string) (string, string) {
		t.Helper()
		f, err := svc.Files.Get(id).SupportsAllDrives(true).Fields("createdTime,modifiedTime").Do()
		if err != nil {
			t.Fatal(err)
		}
		return f.CreatedTime, f.ModifiedTime
	}
	driveCreated := func() string {
		t.Helper()
		got, err := svc.Drives.Get(d).Fields("createdTime").Do()
		if err != nil {
			t.Fatal(err)
		}
		return got.CreatedTime
	}
	if c, m := get(id); c != "2021-07-07T07:07:07.777Z" || m != c {
		t.Errorf("stamped %s %s", c, m)
	}
	if c, _ := get(d); c != "2021-07-07T07:07:07.777Z" || driveCreated() != c {
		t.Errorf("drive created %s, root %s", driveCreated(), c)
	}

	s.SetFileTimes(id, time.Date(2010, 1, 2, 3, 4, 5, 6_000_000, time.FixedZone("X", 3600)), time.Time{})
	if c, m := get(id); c != "2010-01-02T02:04:05.006Z" || m != "2021-07-07T07:07:07.777Z" {
		t.Errorf("after SetFileTimes: %s %s", c, m)
	}
	s.SetFileTimes(d, date(2011, 1, 1), date(2012, 1, 1))
	if c, m := get(d); c != "2011-01-01T00:00:00.000Z" || m != "2012-01-01T00:00:00.000Z" || driveCreated() != c {
		t.Errorf("drive after SetFileTimes: %s %s, drives.get %s", c, m, driveCreated())
	}

	for i := range 200 {
		s.CreateFolder(alice, id, fmt.Sprint("child ", i))
	}
	s.SpreadTimes(date(2000, 1, 1), date(2010, 1, 1))
	files := listAll(t, svc.Files.List().PageSize(1000).Fields("nextPageToken,files(name,createdTime,modifiedTime)"))
	modified := 0
	for i, f := range files {
		switch {
		case f.CreatedTime < "2000-01-01" || f.CreatedTime >= "2010-01-01" || f.ModifiedTime >= "2010-01-01":
			t.Errorf("%s: times %s %s, outside the spread", f.Name, f.CreatedTime, f.ModifiedTime)
		case f.ModifiedTime < f.CreatedTime:
			t.Errorf("%s modified %s before it was created %s", f.Name, f.ModifiedTime, f.CreatedTime)
		case i > 0 && f.CreatedTime <= files[i-1].CreatedTime:
			t.Errorf("%s created %s, not after %s", f.Name, f.CreatedTime, files[i-1].CreatedTime)
		case f.ModifiedTime > f.CreatedTime:
			modified++
		}
	}
	// Files made later were created later; about half were modified since.
	if files[0].Name != "f" || files[1].Name != "child 0" || modified < 60 || modified > 140 {
		t.Errorf("first %s, %s; %d of %d modified", files[0].Name, files[1].Name, modified, len(files))
	}
}

// TestIndexesFollowChanges makes files at random times, sets times,
// renames, touches and deletes at random, and checks after each round that
// the listings in time order, ranged or not, agree with the files' times.
func TestIndexesFollowChanges(t *testing.T) {
	s := newFake(t)
	s.Seed(11)
	rng := rand.New(rand.NewPCG(11, 12))
	at := func() time.Time { return date(2015, 1, 1).Add(time.Duration(rng.IntN(1000)) * time.Hour) }
	now := at()
	s.SetClock(func() time.Time { return now })
	w := &timedWorld{s: s, svc: driveAs(t, s, alice), seq: map[string]int{}}
	var live []string
	// Both indexes exist from the start: changes go through them.
	listAll(t, w.svc.Files.List().OrderBy("modifiedTime").Fields("files(id)"))
	for round := range 8 {
		for range 40 {
			now = at()
			switch op := rng.IntN(10); {
			case op < 4 || len(live) < 5:
				id := s.CreateFolder(alice, "", fmt.Sprintf("r%d-%d", round, len(w.seq)))
				w.seq[id] = len(w.seq)
				live = append(live, id)
			case op < 6:
				s.SetFileTimes(live[rng.IntN(len(live))], at(), at())
			case op < 7:
				s.Rename(live[rng.IntN(len(live))], fmt.Sprintf("r%d-renamed-%d", round, rng.IntN(1e6)))
			case op < 8:
				s.Touch(live[rng.IntN(len(live))])
			default:
				i := rng.IntN(len(live))
				s.Delete(live[i])
				delete(w.seq, live[i])
				live = slices.Delete(live, i, i+1)
			}
		}
		corpus := w.corpus(t)
		lo, hi := date(2015, 1, 10), date(2015, 1, 30)
		inRange := func(x time.Time) bool { return !x.Before(lo) && x.Before(hi) }
		tests := []struct {
			q, orderBy string
			match      func(timed) bool
			keys       []sortKey
		}{
			{"", "createdTime", func(timed) bool { return true }, []sortKey{{byCreated, false}}},
			{"", "modifiedTime desc", func(timed) bool { return true }, []sortKey{{byModified, true}}},
			{"createdTime >= '2015-01-10' and createdTime < '2015-01-30'", "createdTime desc",
				func(f timed) bool { return inRange(f.created) }, []sortKey{{byCreated, true}}},
			{"modifiedTime >= '2015-01-10' and modifiedTime < '2015-01-30'", "modifiedTime,createdTime desc",
				func(f timed) bool { return inRange(f.modified) }, []sortKey{{byModified, false}, {byCreated, true}}},
		}
		for _, tt := range tests {
			want := expect(corpus, tt.match, tt.keys...)
			if got := listed(t, w.svc.Files.List().Q(tt.q).OrderBy(tt.orderBy), 9); !slices.Equal(got, want) {
				t.Fatalf("round %d, %q by %q:\n%v\nwant\n%v", round, tt.q, tt.orderBy, got, want)
			}
		}
	}
}
