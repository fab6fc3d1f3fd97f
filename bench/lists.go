package main

import (
	"slices"
	"strings"

	"github.com/foldermirror/foldermirror/internal/googlefake"
)

// listSet counts the distinct permission lists of a world as it is built.
// A folder's list is its parent's with the grants set on it merged in, a
// principal's highest role winning, as Drive (and the fake) work out
// effective permissions; so each list is made from another and one grant,
// and a folder needs only the number of its list.
type listSet struct {
	lists [][]listEntry // by number; each sorted by principal
	byKey map[string]int32
	steps map[listStep]int32
	// used are the lists some folder has (the others are steps on the way
	// to a list of a folder with several grants of its own).
	used map[int32]bool
}

// listEntry is a principal's role in a list.
type listEntry struct {
	principal string
	rank      int
}

// listStep is a list with one grant merged in.
type listStep struct {
	from  int32
	entry listEntry
}

var roleRanks = map[string]int{"reader": 1, "commenter": 2, "writer": 3, "fileOrganizer": 4, "organizer": 5, "owner": 6}

func newListSet() *listSet {
	return &listSet{byKey: map[string]int32{}, steps: map[listStep]int32{}, used: map[int32]bool{}}
}

// with returns the number of list from (-1: the empty list) with the grant
// p merged in.
func (s *listSet) with(from int32, p googlefake.Permission) int32 {
	who := p.Type + ":" + strings.ToLower(p.EmailAddress+p.Domain)
	step := listStep{from, listEntry{who, roleRanks[p.Role]}}
	if id, ok := s.steps[step]; ok {
		return id
	}
	var list []listEntry
	if from >= 0 {
		list = slices.Clone(s.lists[from])
	}
	i, found := slices.BinarySearchFunc(list, who, func(e listEntry, who string) int { return strings.Compare(e.principal, who) })
	switch {
	case !found:
		list = slices.Insert(list, i, step.entry)
	case list[i].rank < step.entry.rank:
		list[i].rank = step.entry.rank
	}
	var key strings.Builder
	for _, e := range list {
		key.WriteString(e.principal)
		key.WriteByte(byte('0' + e.rank))
		key.WriteByte(';')
	}
	id, ok := s.byKey[key.String()]
	if !ok {
		id = int32(len(s.lists))
		s.lists = append(s.lists, list)
		s.byKey[key.String()] = id
	}
	s.steps[step] = id
	return id
}

// size is how many permissions a list has.
func (s *listSet) size(id int32) int { return len(s.lists[id]) }

// use notes that a folder has the list.
func (s *listSet) use(id int32) { s.used[id] = true }

// count is how many distinct lists the folders have.
func (s *listSet) count() int { return len(s.used) }
