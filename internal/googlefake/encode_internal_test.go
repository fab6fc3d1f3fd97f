package googlefake

import (
	"encoding/json"
	"reflect"
	"testing"

	"google.golang.org/api/drive/v3"
)

// TestAppendJSONMatchesTheClientLibrary checks the fast encoder against the
// client library's own MarshalJSON (white-box: appendJSON is unexported).
func TestAppendJSONMatchesTheClientLibrary(t *testing.T) {
	values := []any{
		&drive.FileList{Kind: "drive#fileList", Files: []*drive.File{}, ForceSendFields: []string{"Files", "IncompleteSearch"}},
		&drive.File{
			Id: "1x", Name: "quote \" backslash \\ tab \t nul \x00 <html> é 日本 \u2028", Size: 1 << 40,
			Parents: []string{"a", "b"}, AppProperties: map[string]string{"z": "1", "a": "2"},
			Trashed: false, OwnedByMe: true, ForceSendFields: []string{"Trashed", "Permissions"},
			Capabilities: &drive.FileCapabilities{CanShare: true},
			Permissions: []*drive.Permission{{Id: "p", PermissionDetails: []*drive.PermissionPermissionDetails{
				{Inherited: false, ForceSendFields: []string{"Inherited"}},
			}}},
		},
		&drive.ChangeList{Changes: []*drive.Change{{Removed: true, Drive: &drive.Drive{Name: "d"}}}, NewStartPageToken: "7"},
	}
	for _, v := range values {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got := appendJSON(nil, reflect.ValueOf(v), nil)
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("invalid JSON %s: %v", got, err)
		}
		_ = json.Unmarshal(want, &w)
		if !reflect.DeepEqual(g, w) {
			t.Errorf("appendJSON\n got %s\nwant %s", got, want)
		}
	}
}

func TestAppendJSONKeepsTheSelection(t *testing.T) {
	m, err := parseFields("nextPageToken,files(id,appProperties/a,permissions(role))")
	if err != nil {
		t.Fatal(err)
	}
	v := &drive.FileList{NextPageToken: "t", Kind: "k", Files: []*drive.File{{
		Id: "1", Name: "n", AppProperties: map[string]string{"a": "1", "b": "2"},
		Permissions: []*drive.Permission{{Id: "p", Role: "reader"}},
	}}}
	const want = `{"files":[{"appProperties":{"a":"1"},"id":"1","permissions":[{"role":"reader"}]}],"nextPageToken":"t"}`
	var g any
	_ = json.Unmarshal(appendJSON(nil, reflect.ValueOf(v), m), &g)
	if got, _ := json.Marshal(g); string(got) != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

// TestListsPutKindAndTokensFirst checks the key order of files.list and
// changes.list answers: Drive sends kind and the page tokens before the items.
func TestListsPutKindAndTokensFirst(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{&drive.FileList{Kind: "drive#fileList", NextPageToken: "t", Files: []*drive.File{{Id: "1"}},
			ForceSendFields: []string{"Files", "IncompleteSearch"}},
			`{"kind":"drive#fileList","nextPageToken":"t","incompleteSearch":false,"files":[{"id":"1"}]}`},
		{&drive.ChangeList{Kind: "drive#changeList", NextPageToken: "5", Changes: []*drive.Change{{FileId: "1"}}},
			`{"kind":"drive#changeList","nextPageToken":"5","changes":[{"fileId":"1"}]}`},
		{&drive.ChangeList{Kind: "drive#changeList", NewStartPageToken: "7", Changes: []*drive.Change{},
			ForceSendFields: []string{"Changes"}},
			`{"kind":"drive#changeList","newStartPageToken":"7","changes":[]}`},
	} {
		if got := string(appendJSON(nil, reflect.ValueOf(c.v), nil)); got != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
}
