package httpapi

import (
	"slices"
	"strings"
	"sync/atomic"
	"weak"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/httpapi/catalog"
)

// A listing of a parent's direct children (operations 2 and 6 with
// onlyDirectChildren and no nameFilter) is written from a childList: what
// of each child's JSON is the same for every caller, made once for a
// revision of the library and shared by the callers that list the parent
// then. A request works out the caller's access for each permission set
// the children have, and writes each child it may list in three pieces:
// the opening of its role, its fields from fileId to name, and what
// follows for its role and flags (see parentJSON), rather than reading the
// child's fields from the catalog and writing them one by one.
//
// The lists are kept in a cache whose size is bounded, whatever the
// number of callers and libraries (childListsBytes), and only for parents
// that have many children (minListedChildren) but not too many
// (maxListBytes): a list of a few is cheap to write without one.

// Bounds of the child lists kept.
const (
	childListsBytes   = 8 << 20
	maxListBytes      = 1 << 20
	minListedChildren = 64
)

// childList is the JSON of a parent's children, in their order, that does
// not depend on the caller.
type childList struct {
	// parent is the parent's ID, and its fields escaped (see parentJSON).
	parent, escapedParent string
	// fields holds each child's fields from fileId's value to name's
	// value: child i's end at ends[i], and start where child i-1's end.
	fields []byte
	ends   []uint32
	// sets is each child's permission set, flags its part of the
	// combination that picks its permittedOperations (see opsIndex).
	sets  []uint32
	flags []uint8
	// keys is each child's resource key, escaped; nil if none has one.
	keys []string
}

// bytes is about the memory the list holds.
func (cl *childList) bytes() int {
	return cl.size() + cap(cl.fields) - len(cl.fields) + 4*(cap(cl.ends)-len(cl.ends)+cap(cl.sets)-len(cl.sets)) +
		cap(cl.flags) - len(cl.flags) + 16*(cap(cl.keys)-len(cl.keys))
}

// size is the bytes the list's contents take, without its slices' room
// to grow.
func (cl *childList) size() int {
	n := 128 + len(cl.parent) + len(cl.escapedParent) + len(cl.fields) + 4*len(cl.ends) + 4*len(cl.sets) + len(cl.flags) + 16*len(cl.keys)
	for _, k := range cl.keys {
		n += len(k)
	}
	return n
}

// childListKey is what a childList is made of: a Library (which the key
// does not keep from being collected), the JSON of the library's
// definition, and a parent's ID. Neither a key kept nor its list holds
// the Library's strings (which View returns without copying), so that a
// list of a past revision keeps none of its catalog's memory.
type childListKey struct {
	lib    weak.Pointer[catalog.Library]
	json   *libraryJSON
	parent string
}

// childLists keeps child lists, up to about maxBytes (see generations):
// lists in use stay, those of past revisions go. One list is made at a
// time, so that the memory of lists being made is bounded too: a request
// that would make another writes its listing without one.
type childLists struct {
	lists    *generations[childListKey, *childList]
	maxBytes int
	making   atomic.Bool
}

func newChildLists(maxBytes int) *childLists {
	return &childLists{lists: newGenerations(maxBytes, listBytes), maxBytes: maxBytes}
}

// listBytes is about the memory a list kept takes (nil: a parent with too
// many children).
func listBytes(k childListKey, cl *childList) int {
	n := 64 + len(k.parent)
	if cl != nil {
		n += cl.bytes()
	}
	return n
}

// get returns the list of parent's children in lv, made if need be; nil
// if it is not kept (too few children or too many, or another list being
// made).
func (cls *childLists) get(lv *libraryView, parent catalog.Ref) *childList {
	n := 0
	lv.lib.Children(parent, func(catalog.Ref) bool { n++; return n < minListedChildren })
	if n < minListedChildren {
		return nil
	}
	id := lv.lib.View(parent).ID
	k := childListKey{lib: weak.Make(lv.lib), json: lv.json, parent: id}
	if cl, ok := cls.lists.get(k); ok {
		return cl
	}
	if !cls.making.CompareAndSwap(false, true) {
		return nil
	}
	defer cls.making.Store(false)
	cl := makeChildList(lv, parent, id, min(maxListBytes, cls.maxBytes/2))
	k.parent = strings.Clone(id)
	cls.lists.put(k, cl)
	return cl
}

// makeChildList makes the list of the children of parent, a folder of lv
// whose ID is id; nil if it would hold more than maxBytes.
func makeChildList(lv *libraryView, parent catalog.Ref, id string, maxBytes int) *childList {
	cl := &childList{parent: strings.Clone(id), escapedParent: jsonContents(id)}
	var v catalog.View
	lv.lib.Children(parent, func(r catalog.Ref) bool {
		lv.lib.Load(r, &v)
		b := cl.fields
		if v.EscapedID {
			b = appendFields(b, lv, &v, jsonContents(v.ID))
		} else {
			b = appendFields(b, lv, &v, v.ID)
		}
		cl.fields = b
		cl.ends = append(cl.ends, uint32(len(b)))
		cl.sets = append(cl.sets, v.Set)
		cl.flags = append(cl.flags, uint8(folderCombination(&v)))
		if v.ResourceKey != "" && cl.keys == nil {
			cl.keys = make([]string, len(cl.ends)-1, cap(cl.ends))
		}
		if cl.keys != nil {
			cl.keys = append(cl.keys, strings.Clone(v.ResourceKey))
		}
		return cl.size() <= maxBytes
	})
	if cl.size() > maxBytes {
		return nil
	}
	cl.fields, cl.ends, cl.sets, cl.flags, cl.keys = fitted(cl.fields), fitted(cl.ends), fitted(cl.sets), fitted(cl.flags), fitted(cl.keys)
	return cl
}

// fitted returns s, copied to a slice of its length if growing left it an
// eighth or more of slack, so that a list kept holds about its size.
func fitted[S ~[]E, E any](s S) S {
	if slack := cap(s) - len(s); slack > 0 && slack >= len(s)/8 {
		return slices.Clone(s)
	}
	return s
}

// writeChildren writes the children of cl that the caller of memo may
// list.
func (s *folderStream) writeChildren(lv *libraryView, cl *childList, memo *accessMemo) {
	s.parent.reset(lv, cl.parent, cl.escapedParent)
	start := uint32(0)
	for i, end := range cl.ends {
		if s.failed() {
			return
		}
		fields := cl.fields[start:end]
		start = end
		a := memo.ofSet(cl.sets[i])
		if !a.listable {
			continue
		}
		b := *s.buf
		if !s.first[0] {
			b = append(b, ',')
		}
		s.first[0] = false
		b = append(b, openEditable[b2i(a.role >= fm.RoleWriter)]...)
		b = append(b, fields...)
		tail, key := s.parent.tailOf(lv, roleClass(a.role)|int(cl.flags[i]))
		if cl.keys == nil || cl.keys[i] == "" {
			b = append(b, tail...)
		} else {
			b = append(b, tail[:key]...)
			b = append(b, cl.keys[i]...)
			b = append(b, tail[key:]...)
		}
		*s.buf = append(b, "]}"...)
		s.spill()
	}
}
