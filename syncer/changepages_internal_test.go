package syncer

import (
	"encoding/json"
	"testing"

	"github.com/foldermirror/foldermirror/internal/drivelist"
	drive "google.golang.org/api/drive/v3"
)

// agreeOnChanges decodes page with decodeChanges and with encoding/json
// (as the client library does) and fails unless decodeChanges read it as
// encoding/json did, or left it (an error: googleclient then checks it, and
// has the client library read it). A page that is not valid JSON must be
// left. It returns decodeChanges's error.
func agreeOnChanges(t *testing.T, dec *drivelist.Decoder, page []byte) error {
	t.Helper()
	got, err := dec.DecodeChanges(page)
	if err != nil {
		return err
	}
	if !json.Valid(page) {
		t.Fatalf("decodeChanges(%q) took a page that is not valid JSON", page)
	}
	var want drive.ChangeList
	if err := json.Unmarshal(page, &want); err != nil {
		t.Fatalf("decodeChanges(%q) took a page encoding/json refuses (%v)", page, err)
	}
	if g, w := marshal(t, got), marshal(t, &want); g != w {
		t.Fatalf("decodeChanges(%q):\n got %s\nwant %s", page, g, w)
	}
	for i, ch := range got.Changes {
		if (ch.File == nil) != (want.Changes[i].File == nil) {
			t.Fatalf("decodeChanges(%q): change %d has file %v; encoding/json's, %v", page, i, ch.File, want.Changes[i].File)
		}
	}
	return nil
}

func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const changedFile = `{"id":"f1","name":"A \"b\" é","mimeType":"application/vnd.google-apps.folder","parents":["r"],"trashed":false,` +
	`"copyRequiresWriterPermission":true,"downloadRestrictions":{"itemDownloadRestriction":{"restrictedForReaders":false}},` +
	`"appProperties":{"folderDefinitionId":"d"},"permissions":[{"id":"p1","type":"user","role":"writer","emailAddress":"ann@example.com",` +
	`"deleted":false,"permissionDetails":[{"role":"writer","inherited":true}]}]}`

// plainChanges are pages decodeChanges reads itself.
var plainChanges = map[string]string{
	"last page":          `{"newStartPageToken":"42","changes":[]}`,
	"a page of more":     `{"nextPageToken":"7","kind":"drive#changeList","changes":[{"kind":"drive#change","changeType":"file","fileId":"f1","removed":false,"file":` + changedFile + `}]}`,
	"removed":            `{"newStartPageToken":"9","changes":[{"changeType":"file","fileId":"f2","removed":true}]}`,
	"file null":          `{"newStartPageToken":"9","changes":[{"changeType":"file","fileId":"f2","file":null}]}`,
	"files in order":     `{"newStartPageToken":"9","changes":[{"fileId":"a","file":` + changedFile + `},{"fileId":"b","removed":true},{"fileId":"c","file":{"id":"c","parents":["a"]}}]}`,
	"a drive's ID":       `{"newStartPageToken":"9","changes":[{"changeType":"file","fileId":"f","driveId":"d","file":{"id":"f","driveId":"d"}}]}`,
	"whitespace":         " {\n \"newStartPageToken\" : \"9\" , \"changes\" : [ { \"fileId\" : \"f\" , \"file\" : " + changedFile + " } ] }\n",
	"escaped value":      `{"newStartPageToken":"a\u0062","changes":[{"fileId":"f\"1\""}]}`,
	"a drive":            `{"newStartPageToken":"9","changes":[{"changeType":"drive","driveId":"d","drive":{"id":"d","name":"D","restrictions":{"copyRequiresWriterPermission":true}}}]}`,
	"drive null":         `{"newStartPageToken":"9","changes":[{"changeType":"drive","driveId":"d","removed":true,"drive":null}]}`,
	"unknown in file":    `{"newStartPageToken":"9","changes":[{"fileId":"f","file":{"id":"f","extra":[1,{"x":null}]}}]}`,
	"unknown key":        `{"newStartPageToken":"9","changes":[{"fileId":"f","time":"2020-01-01T00:00:00Z"}]}`,
	"unknown key at top": `{"newStartPageToken":"9","changes":[],"extra":1}`,
	"escaped name":       `{"newStartPageToken":"9","changes":[{"file\u0049d":"f"}]}`,
	"changes null":       `{"newStartPageToken":"9","changes":null}`,
	"field null":         `{"newStartPageToken":"9","changes":[{"fileId":null}]}`,
}

// leftChanges are pages decodeChanges leaves to encoding/json, which may
// read them or refuse them.
var leftChanges = map[string]string{
	"a drive's field odd":  `{"newStartPageToken":"9","changes":[{"drive":{"id":1}}]}`,
	"drive not an object":  `{"newStartPageToken":"9","changes":[{"drive":[]}]}`,
	"case differs":         `{"newStartPageToken":"9","changes":[{"FileId":"f"}]}`,
	"case differs at top":  `{"NewStartPageToken":"9","changes":[]}`,
	"name twice":           `{"newStartPageToken":"9","changes":[{"fileId":"a","fileId":"b"}]}`,
	"file twice":           `{"newStartPageToken":"9","changes":[{"file":{"id":"a"},"file":null}]}`,
	"removed as a string":  `{"newStartPageToken":"9","changes":[{"removed":"true"}]}`,
	"token as a number":    `{"newStartPageToken":9,"changes":[]}`,
	"file not an object":   `{"newStartPageToken":"9","changes":[{"file":"f"}]}`,
	"change not an object": `{"newStartPageToken":"9","changes":[null]}`,
	"case differs in file": `{"newStartPageToken":"9","changes":[{"file":{"ID":"f"}}]}`,
	"invalid UTF-8":        "{\"newStartPageToken\":\"9\",\"changes\":[{\"fileId\":\"\xff\"}]}",
	"not an object":        `[]`,
}

func TestDecodeChangesReadsWhatEncodingJSONReads(t *testing.T) {
	for name, page := range plainChanges {
		t.Run(name, func(t *testing.T) {
			if err := agreeOnChanges(t, drivelist.New(), []byte(page)); err != nil {
				t.Fatalf("decodeChanges left a plain page to encoding/json: %v", err)
			}
		})
	}
}

func TestDecodeChangesLeavesOddPagesToEncodingJSON(t *testing.T) {
	for name, page := range leftChanges {
		t.Run(name, func(t *testing.T) {
			if err := agreeOnChanges(t, drivelist.New(), []byte(page)); err == nil {
				t.Fatal("decodeChanges read a page it should leave to encoding/json")
			}
		})
	}
}

// invalidChanges are not JSON.
var invalidChanges = []string{`{"changes":[{"file":{"id":"a"`, `{"changes":[]} {}`, `{"changes":[{"fileId":"a\"}]}`,
	`{"changes":[{"file":{"id":"a","permissions":[{"id":"\\\"}]}}]}`, `{"changes":[`, `{"changes":[{"file":{"permissions":[[[`,
	`"`, `{"a`, `{`, `]`, `{"changes":[{"removed":tru}]}`, `{"changes":[{"file":{"id":"a",}}]}`, `{"changes":[{"drive":{"id":"d"]}}]}`}

func TestDecodeChangesRefusesInvalidJSON(t *testing.T) {
	for _, page := range invalidChanges {
		if _, err := drivelist.New().DecodeChanges([]byte(page)); err == nil {
			t.Errorf("decodeChanges took %q, which is not JSON", page)
		}
	}
}

// TestChangePagesHandOverWhatTheyRead: the client library is given a page
// without changes, and take returns the page read in its place; a page
// left to the client library is the library's.
func TestChangePagesHandOverWhatTheyRead(t *testing.T) {
	c := newChangePages()
	rest, err := c.decode([]byte(plainChanges["a page of more"]))
	if err != nil {
		t.Fatal(err)
	}
	var lib drive.ChangeList
	if err := json.Unmarshal(rest, &lib); err != nil || len(lib.Changes) != 0 || lib.NextPageToken != "7" {
		t.Fatalf("the client library is given %s (%v)", rest, err)
	}
	got := c.take(&lib)
	if len(got.Changes) != 1 || got.Changes[0].File == nil || got.Changes[0].File.Name != `A "b" é` {
		t.Errorf("take returned %s", marshal(t, got))
	}
	if _, err := c.decode([]byte(leftChanges["case differs"])); err == nil {
		t.Fatal("a page with a key in another case was read")
	}
	var whole drive.ChangeList
	if err := json.Unmarshal([]byte(leftChanges["case differs"]), &whole); err != nil {
		t.Fatal(err)
	}
	if got := c.take(&whole); got != &whole || c.left != 1 {
		t.Errorf("a page left to the client library: take returned %s, %d pages left", marshal(t, got), c.left)
	}
}

func FuzzDecodeChanges(f *testing.F) {
	for _, page := range plainChanges {
		f.Add([]byte(page))
	}
	for _, page := range leftChanges {
		f.Add([]byte(page))
	}
	for _, page := range invalidChanges {
		f.Add([]byte(page))
	}
	f.Fuzz(func(t *testing.T, page []byte) {
		dec := drivelist.New()
		_ = agreeOnChanges(t, dec, page)
		_ = agreeOnChanges(t, dec, page) // again, with what the decoder kept of the first time
	})
}
