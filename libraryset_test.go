package foldermirror_test

import (
	"fmt"
	"reflect"
	"testing"

	fm "github.com/foldermirror/foldermirror"
)

func TestLibrarySetDiscovered(t *testing.T) {
	configured := []fm.Library{
		{ID: "eng", Name: "Engineering", Domain: "example.com", StorageAccount: "s@example.com", RootFolderID: "root1"},
		{ID: "legal", Name: "Legal", Domain: "example.com", StorageAccount: "s@example.com", SharedDriveID: "0AlegalDrive"},
	}
	set := fm.NewLibrarySet(configured)
	var told []fm.LibrarySetChange
	set.Subscribe(func(c fm.LibrarySetChange) { told = append(told, c) })
	rule := fm.SharedDriveDiscovery{Domain: "example.com", StorageAccount: "s@example.com", FolderDefinitionID: "default"}

	a := rule.Library(fm.DiscoveredDrive{ID: "0Aa", Name: "A"})
	b := rule.Library(fm.DiscoveredDrive{ID: "0Ab", Name: "B"})
	legalAgain := rule.Library(fm.DiscoveredDrive{ID: "0AlegalDrive", Name: "Legal drive"})
	engAgain := rule.Library(fm.DiscoveredDrive{ID: "eng", Name: "A drive whose ID is a library's"})

	c := set.SetDiscovered("example.com", []fm.Library{b, a, legalAgain, engAgain})
	if want := (fm.LibrarySetChange{Added: []fm.Library{a, b}}); !reflect.DeepEqual(c, want) {
		t.Fatalf("first discovery: %+v, want %+v", c, want)
	}
	if got, want := set.IDs(), []string{"0Aa", "0Ab", "eng", "legal"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("IDs = %v, want %v", got, want)
	}
	if l, ok := set.Library("legal"); !ok || l.Name != "Legal" {
		t.Errorf("legal = %+v, %v: the configured library must win over the drive discovered", l, ok)
	}
	if !set.Discovered("0Aa") || set.Discovered("eng") || set.Discovered("nope") {
		t.Error("Discovered tells configured from discovered wrongly")
	}

	before := set.List()
	renamed := a
	renamed.Name = "A renamed"
	c = set.SetDiscovered("example.com", []fm.Library{renamed})
	if want := (fm.LibrarySetChange{Changed: []fm.Library{renamed}, Removed: []fm.Library{b}}); !reflect.DeepEqual(c, want) {
		t.Fatalf("second discovery: %+v, want %+v", c, want)
	}
	if len(before) != 4 || before[0].Name != "A" {
		t.Errorf("a list read before the change changed: %+v", before)
	}
	if c := set.SetDiscovered("example.com", []fm.Library{renamed}); !c.Empty() {
		t.Errorf("the same discovery again changed %+v", c)
	}
	if len(told) != 2 {
		t.Errorf("subscribers told %d times, want 2 (an empty change is not told)", len(told))
	}
	set.SetDiscovered("example.com", nil)
	if got := set.IDs(); !reflect.DeepEqual(got, []string{"eng", "legal"}) {
		t.Errorf("after every drive left: %v", got)
	}
}

func TestSharedDriveDiscoveryIncludes(t *testing.T) {
	tests := []struct {
		include, exclude []string
		name             string
		want             bool
	}{
		{nil, nil, "anything", true},
		{[]string{"*"}, nil, "anything", true},
		{[]string{"Team *"}, nil, "Team A", true},
		{[]string{"Team *"}, nil, "Other", false},
		{[]string{"*"}, []string{"*archive*"}, "2019 archive", false},
		{nil, []string{"Private"}, "Private", false},
		{nil, []string{"Private"}, "Public", true},
		{[]string{"Team *"}, []string{"Team B"}, "Team B", false},
		{[]string{"*"}, nil, "EMEA/Sales", true},
		{[]string{"EMEA/*"}, nil, "EMEA/Sales", true},
		{[]string{"EMEA?Sales"}, nil, "EMEA/Sales", true},
		{nil, []string{"*/Archive"}, "2019/Archive", false},
	}
	for _, tt := range tests {
		d := fm.SharedDriveDiscovery{Include: tt.include, Exclude: tt.exclude}
		if got := d.Includes(tt.name); got != tt.want {
			t.Errorf("include %q exclude %q: Includes(%q) = %v, want %v", tt.include, tt.exclude, tt.name, got, tt.want)
		}
	}
}

// A discovery that finds what was found before rebuilds nothing: with
// 10,000 drives, each tick's discovery would otherwise make a new set.
func TestLibrarySetUnchangedRebuildsNothing(t *testing.T) {
	rule := fm.SharedDriveDiscovery{Domain: "example.com", StorageAccount: "s@example.com"}
	libs := make([]fm.Library, 1000)
	for i := range libs {
		libs[i] = rule.Library(fm.DiscoveredDrive{ID: fmt.Sprintf("0A%04d", i), Name: fmt.Sprint("Drive ", i)})
	}
	set := fm.NewLibrarySet(nil)
	set.SetDiscovered("example.com", libs)
	allocs := testing.AllocsPerRun(10, func() {
		if c := set.SetDiscovered("example.com", libs); !c.Empty() {
			t.Fatalf("the same drives changed the set: %+v", c)
		}
	})
	if allocs > 1 { // the libraries kept, compared with those held
		t.Errorf("SetDiscovered of the drives held: %v allocations, want at most 1", allocs)
	}
}
