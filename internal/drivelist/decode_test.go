package drivelist

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	drive "google.golang.org/api/drive/v3"
)

// project keeps of a file list what the decoder reads: the decoder and
// encoding/json must agree on it.
func project(l *drive.FileList) *drive.FileList {
	out := &drive.FileList{NextPageToken: l.NextPageToken, IncompleteSearch: l.IncompleteSearch, Kind: l.Kind}
	if l.Files != nil {
		out.Files = []*drive.File{}
	}
	for _, f := range l.Files {
		var g *drive.File
		if f != nil {
			g = projectFile(f)
		}
		out.Files = append(out.Files, g)
	}
	return out
}

func projectFile(f *drive.File) *drive.File {
	g := &drive.File{Id: f.Id, Name: f.Name, MimeType: f.MimeType, Parents: f.Parents, Trashed: f.Trashed,
		ResourceKey: f.ResourceKey, AppProperties: f.AppProperties, CopyRequiresWriterPermission: f.CopyRequiresWriterPermission,
		WritersCanShare: f.WritersCanShare, HasAugmentedPermissions: f.HasAugmentedPermissions,
		InheritedPermissionsDisabled: f.InheritedPermissionsDisabled, CreatedTime: f.CreatedTime, ModifiedTime: f.ModifiedTime,
		DriveId: f.DriveId, Kind: f.Kind}
	if r := f.DownloadRestrictions; r != nil {
		g.DownloadRestrictions = &drive.DownloadRestrictionsMetadata{}
		if i := r.ItemDownloadRestriction; i != nil {
			g.DownloadRestrictions.ItemDownloadRestriction = &drive.DownloadRestriction{
				RestrictedForReaders: i.RestrictedForReaders, RestrictedForWriters: i.RestrictedForWriters}
		}
	}
	if f.Permissions != nil {
		g.Permissions = []*drive.Permission{}
	}
	for _, p := range f.Permissions {
		var q *drive.Permission
		if p != nil {
			q = &drive.Permission{Id: p.Id, Type: p.Type, Role: p.Role, EmailAddress: p.EmailAddress, Domain: p.Domain,
				DisplayName: p.DisplayName, PhotoLink: p.PhotoLink, AllowFileDiscovery: p.AllowFileDiscovery, Deleted: p.Deleted,
				PermissionDetails: p.PermissionDetails, Kind: p.Kind, View: p.View, ExpirationTime: p.ExpirationTime,
				PendingOwner: p.PendingOwner, InheritedPermissionsDisabled: p.InheritedPermissionsDisabled}
		}
		g.Permissions = append(g.Permissions, q)
	}
	return g
}

// agree decodes page with the decoder and with encoding/json (as the client
// library does) and fails unless the decoder either read it as
// encoding/json did or left it to encoding/json (ErrNotPlain). It returns
// the decoder's error. A page that is not valid JSON must fail.
func agree(t *testing.T, d *Decoder, page []byte) error {
	t.Helper()
	got, err := d.Decode(page)
	if !json.Valid(page) {
		if err == nil {
			t.Fatalf("Decode(%q) took a page that is not valid JSON", page)
		}
		return err
	}
	var want drive.FileList
	stdErr := json.Unmarshal(page, &want)
	if err != nil {
		if !errors.Is(err, ErrNotPlain) {
			t.Fatalf("Decode(%q): %v, not an ErrNotPlain", page, err)
		}
		return err
	}
	if stdErr != nil {
		t.Fatalf("Decode(%q) took a page encoding/json refuses (%v)", page, stdErr)
	}
	if g, w := project(got), project(&want); !reflect.DeepEqual(g, w) {
		gj, _ := json.Marshal(g)
		wj, _ := json.Marshal(w)
		t.Fatalf("Decode(%q):\n got %s\nwant %s", page, gj, wj)
	}
	return nil
}

const perm = `{"id":"p1","type":"user","role":"writer","emailAddress":"ann@example.com","displayName":"Ann",` +
	`"photoLink":"https://x/a","allowFileDiscovery":false,"deleted":false,"permissionDetails":[{"role":"writer","inherited":true,"permissionType":"file","inheritedFrom":"r"}]}`

// plainCases are pages the decoder must read itself.
var plainCases = map[string]string{
	"empty page":       `{"files":[]}`,
	"no files key":     `{"nextPageToken":"t"}`,
	"files null":       `{"files":null,"incompleteSearch":true}`,
	"null page":        `null`,
	"a folder":         `{"nextPageToken":"n","kind":"drive#fileList","files":[{"id":"a","name":"A","mimeType":"application/vnd.google-apps.folder","parents":["r"],"trashed":false,"permissions":[` + perm + `]}]}`,
	"escapes":          `{"files":[{"id":"a\u0062","name":"na\u00efve \"q\" \\ \n \ud83d\ude00 é","parents":["p\/q"]}]}`,
	"escaped key":      `{"files":[{"n\u0061me":"x"}]}`,
	"lone surrogate":   `{"files":[{"name":"\ud800"}]}`, // escapes are read as encoding/json reads them
	"unknown fields":   `{"files":[{"id":"a","extra":"123","more":{"x":[1,2,{"y":null}]},"x-y":1}],"other":true}`,
	"nulls":            `{"nextPageToken":null,"files":[{"id":null,"name":null,"parents":null,"trashed":null,"appProperties":null,"downloadRestrictions":null,"permissions":null}]}`,
	"empty lists":      `{"files":[{"id":"a","parents":[],"permissions":[],"appProperties":{}}]}`,
	"restrictions":     `{"files":[{"downloadRestrictions":{"itemDownloadRestriction":{"restrictedForReaders":true,"restrictedForWriters":false}}}]}`,
	"restriction null": `{"files":[{"downloadRestrictions":{"itemDownloadRestriction":null}}]}`,
	"restrictions of each kind": `{"files":[{"downloadRestrictions":{"itemDownloadRestriction":{"restrictedForReaders":false,"restrictedForWriters":true}}},` +
		`{"downloadRestrictions":{"itemDownloadRestriction":{"restrictedForReaders":true}}},{"downloadRestrictions":{}},` +
		`{"downloadRestrictions":{"itemDownloadRestriction":{}}},{"downloadRestrictions":{"itemDownloadRestriction":{"restrictedForWriters":true,"restrictedForReaders":true}}}]}`,
	"parents of several files": `{"files":[{"parents":["a","b"]},{"parents":[]},{"parents":["c"]},{"parents":null},{"parents":["d","e","f"]}]}`,
	"properties":               `{"files":[{"appProperties":{"folderDefinitionId":"d1","k":"v"}}]}`,
	"permission nulls":         `{"files":[{"permissions":[{"id":null,"permissionDetails":null,"deleted":null}]}]}`,
	"details empty":            `{"files":[{"permissions":[{"id":"p","permissionDetails":[]}]}]}`,
	"repeated lists":           `{"files":[{"id":"a","permissions":[` + perm + `]},{"id":"b","permissions":[` + perm + `]},{"id":"c","permissions":[` + perm + `,` + perm + `]}]}`,
	"whitespace":               " \n{ \"files\" : [ { \"id\" : \"a\" , \"permissions\" : [ " + perm + " ] } ] } \n",
	"every known field":        `{"files":[{"id":"a","name":"n","mimeType":"m","parents":["p","q"],"trashed":true,"resourceKey":"rk","copyRequiresWriterPermission":true,"writersCanShare":true,"hasAugmentedPermissions":true,"inheritedPermissionsDisabled":true,"createdTime":"2020-01-01T00:00:00.000Z","modifiedTime":"2021-01-01T00:00:00Z","driveId":"d","kind":"drive#file"}]}`,
	"permission fields":        `{"files":[{"permissions":[{"id":"p","type":"domain","role":"reader","domain":"example.com","allowFileDiscovery":true,"kind":"drive#permission","view":"published","expirationTime":"2030-01-01T00:00:00Z","pendingOwner":true,"inheritedPermissionsDisabled":true}]}]}`,
	"unknown in details":       `{"files":[{"permissions":[{"permissionDetails":[{"role":"reader","extra":[{}]}]}]}]}`,
}

// leftCases are pages the decoder leaves to encoding/json, which may read
// them or refuse them.
var leftCases = map[string]string{
	"case differs":          `{"files":[{"ID":"a"}]}`,
	"a field not asked for": `{"files":[{"id":"a","description":"d"}]}`,
	"its type wrong":        `{"files":[{"id":"a","description":{"x":1}}]}`,
	"number as string":      `{"files":[{"size":"123"}]}`,
	"number not as string":  `{"files":[{"size":123}]}`,
	"case differs at top":   `{"Files":[{"id":"a"}]}`,
	"underscore":            `{"files":[{"mime_type":"x"}]}`,
	"non-ASCII key":         `{"files":[{"ſize":"1","nameK":"x"}]}`,
	"name twice":            `{"files":[{"name":"a","name":"b"}]}`,
	"property twice":        `{"files":[{"appProperties":{"k":"a","k":"b"}}]}`,
	"restrictions twice":    `{"files":[{"downloadRestrictions":{"itemDownloadRestriction":{"restrictedForReaders":true},"itemDownloadRestriction":{"restrictedForWriters":true}}}]}`,
	"bool as string":        `{"files":[{"trashed":"true"}]}`,
	"string as number":      `{"files":[{"name":12}]}`,
	"null file":             `{"files":[null]}`,
	"null parent":           `{"files":[{"parents":["a",null]}]}`,
	"null permission":       `{"files":[{"permissions":[null]}]}`,
	"file not an object":    `{"files":["a"]}`,
	"files not an array":    `{"files":{}}`,
	"invalid UTF-8":         "{\"files\":[{\"name\":\"\xff\"}]}",
	"not an object":         `[]`,
	"permissions an object": `{"files":[{"permissions":{}}]}`,
}

func TestDecodeReadsWhatEncodingJSONReads(t *testing.T) {
	for name, page := range plainCases {
		t.Run(name, func(t *testing.T) {
			if err := agree(t, New(), []byte(page)); err != nil {
				t.Fatalf("Decode left a plain page to encoding/json: %v", err)
			}
		})
	}
}

func TestDecodeLeavesOddPagesToEncodingJSON(t *testing.T) {
	for name, page := range leftCases {
		t.Run(name, func(t *testing.T) {
			if err := agree(t, New(), []byte(page)); err == nil {
				t.Fatal("Decode read a page it should leave to encoding/json")
			}
		})
	}
}

// A decoder reads the keys it met in the order it met them without
// scanning them: a page it left to encoding/json, read again by the same
// decoder, is left again, and a plain page read again is read alike.
func TestDecodeReadsKeysInTheOrderMet(t *testing.T) {
	for _, cases := range []map[string]string{leftCases, plainCases} {
		for name, page := range cases {
			t.Run(name, func(t *testing.T) {
				d := New()
				first := agree(t, d, []byte(page))
				if second := agree(t, d, []byte(page)); (first == nil) != (second == nil) {
					t.Fatalf("read again: %v; the first time: %v", second, first)
				}
			})
		}
	}
}

// invalidPages are not JSON: Decode fails on them.
var invalidPages = []string{`{"files":[{"id":"a"`, `{"files":[]} {}`, `{"files":[{"id":"a\"}]}`, `{"files":[{"id":"a","permissions":[{"id":"\\\"}]}]}`,
	`{"files":[`, `{"files":[{"permissions":[[[`, `"`, `{"a`, `{`, `]`, `{"files":[{"name":tru}]}`}

func TestDecodeRefusesInvalidJSON(t *testing.T) {
	for _, page := range invalidPages {
		if _, err := New().Decode([]byte(page)); err == nil {
			t.Errorf("Decode(%q) took a page that is not valid JSON", page)
		}
	}
}

// A permission list met before is not read again, but the page around it
// is checked; a list that is not valid JSON is not kept.
func TestDecodeChecksPagesOfKnownLists(t *testing.T) {
	list := `[` + perm + `]`
	for name, tc := range map[string]struct{ first, second string }{
		"around a recent list":      {`{"files":[{"permissions":` + list + `}]}`, `{"files":[{"permissions":` + list + `} {"permissions":` + list + `}]}`},
		"around a list met earlier": {`{"files":[{"permissions":` + list + `}]}`, `{"files":[{"permissions":[]},{"permissions":[{"id":"x"}]},{"permissions":[{"id":"y"}]},{"permissions":[{"id":"z"}]},{"permissions":[{"id":"w"}]},{"permissions":[{"id":"v"}]},{"permissions":[{"id":"u"}]},{"permissions":[{"id":"t"}]},{"permissions":[{"id":"s"}]},{"permissions":` + list + `}],}`},
		"an invalid list":           {`{"files":[{"permissions":[{"id":"a" "type":"user"}]}]}`, `{"files":[{"permissions":[{"id":"a" "type":"user"}]}]}`},
	} {
		t.Run(name, func(t *testing.T) {
			d := New()
			first, _ := d.Decode([]byte(tc.first))
			if first == nil && json.Valid([]byte(tc.first)) {
				t.Fatalf("Decode(%q) failed", tc.first)
			}
			if _, err := d.Decode([]byte(tc.second)); !errors.Is(err, ErrInvalid) {
				t.Errorf("Decode(%q): %v; want ErrInvalid", tc.second, err)
			}
		})
	}
}

func TestDecodeSharesRepeatedPermissionLists(t *testing.T) {
	d := New()
	page := func(ids ...string) []byte {
		var files []string
		for _, id := range ids {
			files = append(files, fmt.Sprintf(`{"id":%q,"permissions":[%s]}`, id, perm))
		}
		return []byte(`{"files":[` + strings.Join(files, ",") + `]}`)
	}
	first, err := d.Decode(page("a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	second, err := d.Decode(page("c"))
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := first.Files[0].Permissions, first.Files[1].Permissions, second.Files[0].Permissions
	if &a[0] != &b[0] || &a[0] != &c[0] {
		t.Error("equal permission lists were decoded each time, not shared")
	}
	if a[0].EmailAddress != "ann@example.com" || !a[0].PermissionDetails[0].Inherited {
		t.Errorf("shared list decoded wrong: %+v", a[0])
	}
}

// Lists of their own that share permissions share their structs; a list of
// the same permissions in other bytes is the same list.
func TestDecodeSharesRepeatedPermissions(t *testing.T) {
	other := `{"id":"p2","type":"user","role":"reader","emailAddress":"bob@example.com"}`
	page := `{"files":[{"id":"a","permissions":[` + perm + `]},{"id":"b","permissions":[` + other + `,` + perm + `]},` +
		`{"id":"c","permissions":[ ` + other + ` , ` + perm + ` ]}]}`
	d := New()
	if err := agree(t, d, []byte(page)); err != nil {
		t.Fatal(err)
	}
	list, err := d.Decode([]byte(page))
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := list.Files[0].Permissions, list.Files[1].Permissions, list.Files[2].Permissions
	if a[0] != b[1] {
		t.Error("a permission of two lists was decoded twice, not shared")
	}
	if &b[0] != &c[0] {
		t.Error("lists of the same permissions, spaced differently, were not shared")
	}
}

// A list is known by the permissions it holds: when the decoder forgets the
// permissions it decoded, those it decodes next are not taken for them.
func TestDecodeTellsListsApartAfterForgetting(t *testing.T) {
	p := func(id string) string { return `{"id":"` + id + `"}` }
	files := []string{`{"permissions":[` + p("a") + `,` + p("b") + `]}`}
	for n := 2; n < maxPermissions; {
		var list []string
		for range min(70, maxPermissions-n) {
			list = append(list, p(fmt.Sprintf("f%d", n)))
			n++
		}
		files = append(files, `{"permissions":[`+strings.Join(list, ",")+`]}`)
	}
	files = append(files, `{"permissions":[`+p("c")+`,`+p("d")+`]}`)
	if len(files) >= maxLists {
		t.Fatalf("%d lists: the first would be forgotten too", len(files))
	}
	if err := agree(t, New(), []byte(`{"files":[`+strings.Join(files, ",")+`]}`)); err != nil {
		t.Fatal(err)
	}
}

// TestDecodeKeepsNoPageBytes checks that nothing decoded points into the
// page: a caller may reuse it.
func TestDecodeKeepsNoPageBytes(t *testing.T) {
	page := []byte(plainCases["a folder"])
	list, err := New().Decode(page)
	if err != nil {
		t.Fatal(err)
	}
	want := project(list)
	wantJSON, _ := json.Marshal(want)
	for i := range page {
		page[i] = 'x'
	}
	if got, _ := json.Marshal(project(list)); string(got) != string(wantJSON) {
		t.Errorf("the files changed with the page's bytes:\n got %s\nwant %s", got, wantJSON)
	}
}

// Files given back are the memory of the next page's, cleared: nothing of
// the first page shows in the second.
func TestDecodeReusesFiles(t *testing.T) {
	d := New()
	first, err := d.Decode([]byte(plainCases["every known field"]))
	if err != nil {
		t.Fatal(err)
	}
	was := first.Files[0]
	d.Reuse(first)
	page := []byte(`{"files":[{"id":"b"}]}`)
	second, err := d.Decode(page)
	if err != nil {
		t.Fatal(err)
	}
	if second.Files[0] != was {
		t.Error("the files given back were not used again")
	}
	var want drive.FileList
	if err := json.Unmarshal(page, &want); err != nil {
		t.Fatal(err)
	}
	if g, w := project(second), project(&want); !reflect.DeepEqual(g, w) {
		t.Errorf("the second page in the first's memory: got %+v, want %+v", g.Files[0], w.Files[0])
	}
}

func FuzzDecode(f *testing.F) {
	for _, page := range plainCases {
		f.Add([]byte(page))
	}
	for _, page := range leftCases {
		f.Add([]byte(page))
	}
	for _, page := range invalidPages {
		f.Add([]byte(page))
	}
	f.Add(benchPage(20, 4))
	f.Fuzz(func(t *testing.T, page []byte) {
		d := New()
		_ = agree(t, d, page)
		_ = agree(t, d, page) // again, with what the decoder kept of the first time
	})
}

// brokenPageInserts are the bytes TestDecodeTakesNoBrokenPage puts in pages.
const brokenPageInserts = ",:{}[]\"\\ n0t\x00\x1f"

// TestDecodeTakesNoBrokenPage breaks each plain page at every byte (the
// byte dropped, or a byte of JSON's syntax put before it) and checks each
// result with agree: the decoder reads it as encoding/json does, or leaves
// it, and never takes one that is not valid JSON. Before each byte it puts
// insertsAtEachByte of the bytes, in turn, so that every one is put at
// one byte in five of a page (everyday) or at every byte (-tags long).
func TestDecodeTakesNoBrokenPage(t *testing.T) {
	inserts := []byte(brokenPageInserts)
	for name, page := range plainCases {
		t.Run(name, func(t *testing.T) {
			for i := range len(page) + 1 {
				if i < len(page) {
					_ = agree(t, New(), []byte(page[:i]+page[i+1:]))
				}
				for k := range insertsAtEachByte {
					c := inserts[(i+k*len(inserts)/insertsAtEachByte)%len(inserts)]
					_ = agree(t, New(), []byte(page[:i]+string(c)+page[i:]))
				}
			}
		})
	}
}

// The lists of parents share a chunk: appending to one must not change
// the next file's.
func TestDecodeParentsHaveNoRoomToAppend(t *testing.T) {
	list, err := New().Decode([]byte(`{"files":[{"parents":["a"]},{"parents":["b"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = append(list.Files[0].Parents, "x")
	if got := list.Files[1].Parents; len(got) != 1 || got[0] != "b" {
		t.Errorf("the second file's parents are %q after appending to the first's", got)
	}
}
