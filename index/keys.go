package index

import (
	"strings"
	"unicode/utf8"
)

// maxSortBytes bounds the name part of a children key (bbolt keys are at most
// 32 KiB, Drive names may be longer). Siblings whose names agree on that many
// bytes are put in order in memory when read.
const maxSortBytes = 512

// sortName is a name as siblings are ordered by: lower-cased with Go's
// strings.ToLower (Unicode simple case folding).
func sortName(name string) string { return strings.ToLower(name) }

// sortPart is the bounded name part of a children key.
func sortPart(name string) string {
	s := sortName(name)
	if len(s) <= maxSortBytes {
		return s
	}
	cut := maxSortBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// childrenPrefix is the prefix of the children keys of a parent.
func childrenPrefix(parentID string) []byte {
	return append([]byte(parentID), 0)
}

// childKey is parentID 0x00 sortPart(name) 0x00 childID.
func childKey(parentID, name, childID string) []byte {
	sp := sortPart(name)
	k := make([]byte, 0, len(parentID)+len(sp)+len(childID)+2)
	k = append(k, parentID...)
	k = append(k, 0)
	k = append(k, sp...)
	k = append(k, 0)
	return append(k, childID...)
}

// keySortPart returns the name part of a children key given its prefix and
// its value (the child's ID).
func keySortPart(key, prefix, childID []byte) []byte {
	end := len(key) - len(childID) - 1
	if end < len(prefix) {
		return nil
	}
	return key[len(prefix):end]
}
