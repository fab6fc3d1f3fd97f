package syncer

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	drive "google.golang.org/api/drive/v3"
)

func TestPlaceInTree(t *testing.T) {
	t.Parallel()
	st, err := newStage(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	for _, x := range []struct {
		id         string
		restricted bool
		parents    []string
	}{
		{"root", false, nil},
		{"a", true, []string{"root"}},
		{"a1", false, []string{"a"}},
		{"b", false, []string{"root"}},
		// several parents: the one nearest the root wins, the first listed among equals.
		{"deep", false, []string{"a1", "b"}},
		{"twin", false, []string{"b", "a"}},
		// a cycle reachable from the root, and one that is not.
		{"c1", false, []string{"c2", "b"}},
		{"c2", false, []string{"c1"}},
		{"x1", false, []string{"x2"}},
		{"x2", false, []string{"x1"}},
		// a parent outside the library, and itself as parent.
		{"orphan", false, []string{"elsewhere"}},
		{"self", false, []string{"self", "a1"}},
	} {
		var flags uint8
		if x.restricted {
			flags = flagOwnRestricted
		}
		if _, _, err := st.add(&drive.File{Id: x.id, Name: x.id, Parents: x.parents}, flags); err != nil {
			t.Fatal(err)
		}
	}
	root, _ := st.ids.Lookup("root")
	odd := &oddities{}
	order := st.place(root, odd)
	got := map[string]string{}
	seen := map[uint32]bool{}
	var restricted []string
	for _, n := range order {
		f := st.folders.at(n)
		if f.parent != none && !seen[f.parent] {
			t.Errorf("%s comes before its parent", st.ids.String(n))
		}
		seen[n] = true
		got[st.ids.String(n)] = ""
		if f.parent != none {
			got[st.ids.String(n)] = st.ids.String(f.parent)
		}
		if f.flags&flagRestricted != 0 {
			restricted = append(restricted, st.ids.String(n))
		}
	}
	want := map[string]string{"root": "", "a": "root", "a1": "a", "b": "root", "deep": "b", "twin": "b", "c1": "b", "c2": "c1", "self": "a1"}
	if len(got) != len(want) {
		t.Errorf("placed %v, want %v", got, want)
	}
	for id, p := range want {
		if got[id] != p {
			t.Errorf("%s: parent %q, want %q", id, got[id], p)
		}
	}
	slices.Sort(restricted)
	if !slices.Equal(restricted, []string{"a", "a1", "self"}) {
		t.Errorf("restricted %v", restricted)
	}
	// deep (a1, b), twin (b, a) and c1 (c2, b) have a link not followed each.
	if n := odd.parentLinks.Load(); n != 3 {
		t.Errorf("%d parent links not followed, want 3", n)
	}
}

// A staged folder's record reads back as it was written, and one too long
// for the stage to address is refused rather than cut.
func TestStagedRecords(t *testing.T) {
	t.Parallel()
	st, err := newStage(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	names := []string{"first", strings.Repeat("é", 40_000), ""}
	for i, name := range names {
		f := &drive.File{Id: fmt.Sprint("f", i), Name: name, ResourceKey: fmt.Sprint("rk", i),
			AppProperties: map[string]string{folderDefinitionProperty: fmt.Sprint("def", i)}}
		if _, _, err := st.add(f, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.flush(); err != nil {
		t.Fatal(err)
	}
	for i, want := range names {
		n, _ := st.ids.Lookup(fmt.Sprint("f", i))
		name, rk, def, _, err := st.record(nil, n)
		if err != nil || name != want || rk != fmt.Sprint("rk", i) || def != fmt.Sprint("def", i) {
			t.Errorf("record %d: %.20q %q %q, %v", i, name, rk, def, err)
		}
	}
	if _, _, err := st.add(&drive.File{Id: "huge", Name: strings.Repeat("x", 1<<recordSizeBits)}, 0); err == nil {
		t.Error("a record of 16 MiB staged")
	}
}
