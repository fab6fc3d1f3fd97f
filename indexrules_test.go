package foldermirror_test

import (
	"reflect"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
)

// stateField says what a field of LibraryState is to the index rules.
type stateField int

const (
	syncOwn    stateField = iota // kept for syncs: readers see no change
	visible                      // readers see it: a change grows the revision
	maintained                   // the index's to set: a writer's is ignored
)

// stateFields classifies every field of LibraryState: a field added to it
// fails the tests until it is classified here.
var stateFields = map[string]stateField{
	"ID":                       maintained,
	"RootID":                   visible,
	"DriveID":                  visible,
	"SharingRequiresOrganizer": visible,
	"StartPageToken":           syncOwn,
	"LastFullSync":             syncOwn,
	"LastIncrementalSync":      syncOwn,
	"Folders":                  maintained,
	"Permissions":              maintained,
	"Revision":                 maintained,
}

var baseState = fm.LibraryState{ID: "lib", RootID: "root", DriveID: "d1", StartPageToken: "7",
	LastFullSync: time.Unix(1700000000, 0).UTC(), Folders: 3, Permissions: 5, Revision: 4}

// changed returns s with the named field set to another value.
func changed(t *testing.T, s fm.LibraryState, name string) fm.LibraryState {
	t.Helper()
	f := reflect.ValueOf(&s).Elem().FieldByName(name)
	switch v := f.Addr().Interface().(type) {
	case *string:
		*v += "-other"
	case *bool:
		*v = !*v
	case *int:
		*v += 10
	case *uint64:
		*v += 10
	case *time.Time:
		*v = v.Add(time.Hour)
	default:
		t.Fatalf("field %s: no way to change a %s", name, f.Type())
	}
	return s
}

// eachField runs fn on every field of LibraryState, failing for one not in
// stateFields.
func eachField(t *testing.T, fn func(t *testing.T, name string, kind stateField)) {
	t.Helper()
	typ := reflect.TypeFor[fm.LibraryState]()
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		t.Run(name, func(t *testing.T) {
			kind, ok := stateFields[name]
			if !ok {
				t.Fatalf("LibraryState.%s: say in stateFields whether readers see it or the index maintains it", name)
			}
			fn(t, name, kind)
		})
	}
}

func TestVisibleChange(t *testing.T) {
	eachField(t, func(t *testing.T, name string, kind stateField) {
		next := changed(t, baseState, name)
		if got := baseState.VisibleChange(next); got != (kind == visible) {
			t.Errorf("a change of %s is visible: %v, want %v", name, got, kind == visible)
		}
		if got := next.VisibleChange(baseState); got != (kind == visible) {
			t.Errorf("a change of %s back is visible: %v, want %v", name, got, kind == visible)
		}
	})
	if baseState.VisibleChange(baseState) {
		t.Error("an unchanged state is a visible change")
	}
}

func TestAdopt(t *testing.T) {
	eachField(t, func(t *testing.T, name string, kind stateField) {
		w := changed(t, baseState, name)
		got := reflect.ValueOf(baseState.Adopt(w)).FieldByName(name).Interface()
		want := reflect.ValueOf(w).FieldByName(name).Interface()
		if kind == maintained {
			want = reflect.ValueOf(baseState).FieldByName(name).Interface()
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s adopted: %v, want %v", name, got, want)
		}
	})
}

func TestNextRevision(t *testing.T) {
	with := func(fn func(*fm.LibraryState)) fm.LibraryState {
		s := baseState
		fn(&s)
		return s
	}
	tests := []struct {
		name        string
		prev        fm.LibraryState
		next        fm.LibraryState
		treeChanged bool
		want        uint64
	}{
		{"nothing changed", baseState, baseState, false, 4},
		{"counts only", baseState, with(func(s *fm.LibraryState) { s.Folders, s.Permissions = 9, 99 }), false, 4},
		{"token and sync times only", baseState, with(func(s *fm.LibraryState) {
			s.StartPageToken, s.LastFullSync, s.LastIncrementalSync = "8", time.Now(), time.Now()
		}), false, 4},
		{"a revision of the writer's", baseState, with(func(s *fm.LibraryState) { s.Revision = 99 }), false, 4},
		{"the tree", baseState, baseState, true, 5},
		{"the sharing restriction", baseState, with(func(s *fm.LibraryState) { s.SharingRequiresOrganizer = true }), false, 5},
		{"another root", baseState, with(func(s *fm.LibraryState) { s.RootID = "b" }), false, 5},
		{"another drive", baseState, with(func(s *fm.LibraryState) { s.DriveID = "" }), false, 5},
		{"the tree and the root: once", baseState, with(func(s *fm.LibraryState) { s.RootID, s.Revision = "b", 99 }), true, 5},
		{"a first tree", fm.LibraryState{}, baseState, true, fm.FirstRevision},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.prev.NextRevision(tt.next, tt.treeChanged); got != tt.want {
				t.Errorf("revision %d, want %d", got, tt.want)
			}
		})
	}
}

func TestSameView(t *testing.T) {
	eachField(t, func(t *testing.T, name string, _ stateField) {
		want := name != "Revision" && name != "RootID"
		if got := baseState.SameView(changed(t, baseState, name)); got != want {
			t.Errorf("same view after a change of %s: %v, want %v", name, got, want)
		}
	})
}

func TestFreshLog(t *testing.T) {
	l := fm.FreshLog(7)
	if l != (fm.ChangeLog{LogStart: 8}) {
		t.Errorf("fresh log at 7: %+v, want empty from 8", l)
	}
	if c := l.Catchup(6, 7); c != fm.CatchupReread {
		t.Errorf("a reader at 6 after the log starts afresh at 7: %v, want a reread", c)
	}
	if c := l.Catchup(7, 7); c != fm.CatchupNone {
		t.Errorf("a reader at 7 with a fresh log at 7: %v, want nothing to read", c)
	}
}

func TestCatchup(t *testing.T) {
	log := fm.ChangeLog{LogStart: 5, LogEntries: 10}
	tests := []struct {
		since uint64
		want  fm.Catchup
	}{
		{0, fm.CatchupReread},
		{3, fm.CatchupReread}, // revision 4's changes are gone
		{4, fm.CatchupLog},    // the log holds 5 on
		{8, fm.CatchupLog},
		{9, fm.CatchupNone},
		{12, fm.CatchupNone}, // a reader ahead (another replica's) reads nothing
	}
	for _, tt := range tests {
		if got := log.Catchup(tt.since, 9); got != tt.want {
			t.Errorf("since %d, log from 5, at 9: %v, want %v", tt.since, got, tt.want)
		}
	}
}

func TestOverfull(t *testing.T) {
	for entries, want := range map[uint64]bool{0: false, fm.PrunedLogSize: false, fm.MaxLogEntries: false, fm.MaxLogEntries + 1: true} {
		if got := (fm.ChangeLog{LogStart: 1, LogEntries: entries}).Overfull(); got != want {
			t.Errorf("%d entries: overfull %v, want %v", entries, got, want)
		}
	}
	if fm.PrunedLogSize >= fm.MaxLogEntries || fm.PrunedLogSize <= 0 {
		t.Errorf("a log is pruned to %d entries, bound %d: pruning must free some", fm.PrunedLogSize, fm.MaxLogEntries)
	}
}

func TestPrunedLog(t *testing.T) {
	revs := func(pairs ...uint64) []fm.LogRevision {
		var out []fm.LogRevision
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, fm.LogRevision{Revision: pairs[i], Entries: pairs[i+1]})
		}
		return out
	}
	tests := []struct {
		name        string
		keep        uint64
		newestFirst []fm.LogRevision
		want        fm.ChangeLog
	}{
		{"empty log", 5, nil, fm.ChangeLog{LogStart: 11}},
		{"all fit", 10, revs(10, 2, 8, 3, 2, 5), fm.ChangeLog{LogStart: 2, LogEntries: 10}},
		{"the oldest go", 5, revs(10, 2, 8, 3, 2, 5), fm.ChangeLog{LogStart: 8, LogEntries: 5}},
		{"whole revisions: one that does not fit goes, and all older", 6, revs(10, 2, 8, 5, 2, 1), fm.ChangeLog{LogStart: 10, LogEntries: 2}},
		{"the newest does not fit", 1, revs(10, 2, 8, 3), fm.ChangeLog{LogStart: 11}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fm.PrunedLog(10, tt.keep, tt.newestFirst); got != tt.want {
				t.Errorf("pruned to %d: %+v, want %+v", tt.keep, got, tt.want)
			}
		})
	}
}

// A log past its bound, of a folder a revision, is pruned to PrunedLogSize
// exactly, its newest revisions kept.
func TestPruningPastTheBound(t *testing.T) {
	const revision = fm.MaxLogEntries + 1
	newestFirst := make([]fm.LogRevision, 0, revision)
	for r := uint64(revision); r >= 1; r-- {
		newestFirst = append(newestFirst, fm.LogRevision{Revision: r, Entries: 1})
	}
	if !(fm.ChangeLog{LogStart: 1, LogEntries: revision}).Overfull() {
		t.Fatalf("a log of %d entries is not overfull", revision)
	}
	got := fm.PrunedLog(revision, fm.PrunedLogSize, newestFirst)
	if want := (fm.ChangeLog{LogStart: revision - fm.PrunedLogSize + 1, LogEntries: fm.PrunedLogSize}); got != want {
		t.Errorf("pruned: %+v, want %+v", got, want)
	}
	if got.Overfull() {
		t.Errorf("pruned log still overfull: %+v", got)
	}
}

func TestChangeSetFits(t *testing.T) {
	for folders, want := range map[int]bool{0: true, fm.MaxChangeSet: true, fm.MaxChangeSet + 1: false} {
		if got := fm.ChangeSetFits(folders); got != want {
			t.Errorf("%d folders fit a ChangeSet: %v, want %v", folders, got, want)
		}
	}
}

func TestKeepsLog(t *testing.T) {
	moved := baseState
	moved.RootID = "other"
	tokened := baseState
	tokened.StartPageToken, tokened.SharingRequiresOrganizer = "99", true
	tests := []struct {
		name  string
		next  fm.LibraryState
		drift fm.Drift
		want  bool
	}{
		{"no drift", baseState, fm.Drift{}, true},
		{"a small drift", baseState, fm.Drift{Added: 1, Removed: 2, Changed: 3}, true},
		{"a drift of the most logged", baseState, fm.Drift{Added: fm.MaxLoggedDrift - 2, Removed: 1, Changed: 1}, true},
		{"a drift of one more", baseState, fm.Drift{Added: fm.MaxLoggedDrift - 2, Removed: 2, Changed: 1}, false},
		{"removed ones count", baseState, fm.Drift{Removed: fm.MaxLoggedDrift + 1}, false},
		{"another root", moved, fm.Drift{}, false},
		{"other fields", tokened, fm.Drift{Changed: 1}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fm.KeepsLog(baseState, tt.next, tt.drift); got != tt.want {
				t.Errorf("keeps the log: %v, want %v", got, tt.want)
			}
			if root := baseState.RootID == tt.next.RootID; root && tt.drift.Loggable() != tt.want {
				t.Errorf("drift %+v loggable: %v, want %v", tt.drift, tt.drift.Loggable(), tt.want)
			}
		})
	}
}
