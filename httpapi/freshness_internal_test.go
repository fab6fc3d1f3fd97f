package httpapi

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/httpapi/auth"
	"github.com/foldermirror/foldermirror/httpapi/catalog"
)

// digestETag is the ETag as the API has always made it, with a hash
// written piece by piece over a sorted copy of the principals: etag must
// keep giving every caller the tags its copies carry.
func digestETag(lv *libraryView, id *auth.Identity) string {
	h := sha256.New()
	var rev [8]byte
	binary.BigEndian.PutUint64(rev[:], lv.state().Revision)
	h.Write(rev[:])
	h.Write(lv.configTag)
	h.Write([]byte(lv.state().RootID))
	h.Write([]byte{0})
	principals := id.Principals()
	slices.Sort(principals)
	for _, p := range principals {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	if id.Admin {
		h.Write([]byte("admin:" + id.CodeDomain))
	}
	return `"` + hex.EncodeToString(h.Sum(nil)[:16]) + `"`
}

func TestETagIsTheDigestOfTheCallersView(t *testing.T) {
	lv := &libraryView{
		lib:       &catalog.Library{State: fm.LibraryState{Revision: 1<<40 + 7, RootID: "root"}},
		configTag: configTag(&fm.Library{ID: "lib", Name: "Lib", Domain: "example.com"}, &Domain{Name: "example.com"}),
	}
	for _, tc := range []struct {
		name string
		id   auth.Identity
	}{
		{"user with groups out of order", auth.Identity{Email: "zed@example.com", OrgDomain: "example.com",
			Groups: []string{"zz@example.com", "aa@example.com", "mm@example.com"}}},
		{"user of no organisation", auth.Identity{Email: "pat@partner.org"}},
		{"user whose principals pass the stack buffer", auth.Identity{Email: "long@example.com",
			Groups: []string{strings.Repeat("g", 300) + "@example.com", strings.Repeat("h", 300) + "@example.com"}}},
		{"admin security code", auth.Identity{Domain: "example.com", OrgDomain: "example.com", CodeDomain: "example.com", Admin: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := etag(lv, newCaller(&tc.id)), digestETag(lv, &tc.id); got != want {
				t.Errorf("etag %s, want %s", got, want)
			}
		})
	}
}

func TestLastModifiedFollowsTheSyncs(t *testing.T) {
	var st libState
	first := time.Date(2026, time.November, 20, 9, 30, 0, 0, time.FixedZone("CET", 3600))
	for _, tc := range []struct {
		name   string
		synced time.Time
		want   []string
	}{
		{"never synced", time.Time{}, nil},
		{"first sync", first, []string{"Fri, 20 Nov 2026 08:30:00 GMT"}},
		{"same sync again", first.UTC(), []string{"Fri, 20 Nov 2026 08:30:00 GMT"}},
		{"next sync", first.Add(90 * time.Second), []string{"Fri, 20 Nov 2026 08:31:30 GMT"}},
		{"never synced, after a sync", time.Time{}, nil},
	} {
		got := st.lastModified(tc.synced)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: Last-Modified %q, want %q", tc.name, got, tc.want)
		}
		if got != nil {
			if _, err := http.ParseTime(got[0]); err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
		}
	}
}

func TestMatches(t *testing.T) {
	const tag = `"0123abcd"`
	for _, tc := range []struct {
		header string
		want   bool
	}{
		{"", false},
		{tag, true},
		{"W/" + tag, true},
		{`"other", ` + tag, true},
		{` "other" ,W/` + tag + ` `, true},
		{"*", true},
		{`"other"`, false},
		{`"0123abcd`, false},
		{",,", false},
	} {
		if got := matches(tc.header, tag); got != tc.want {
			t.Errorf("matches(%q) = %v, want %v", tc.header, got, tc.want)
		}
	}
}
