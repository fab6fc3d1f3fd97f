package catalog

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"unicode/utf8"
)

// A base keeps each folder's fields in its arena, in a compact record: its
// name, then, when the name needs escaping in JSON, a 1 and its escaped
// form (else a 0), then its resource key and definition ID, escaped. Each
// string is a uvarint length and its bytes.

// appendRecord appends a folder's record to arena; resourceKey and
// definitionID are escaped already.
func appendRecord(arena []byte, name, resourceKey, definitionID string) []byte {
	arena = appendString(arena, name)
	if plain(name) {
		arena = append(arena, 0)
	} else {
		arena = append(arena, 1)
		arena = appendString(arena, escape(name))
	}
	arena = appendString(arena, resourceKey)
	return appendString(arena, definitionID)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decodeRecord reads a record at the start of b; the strings share b.
func decodeRecord(b []byte) (name, escapedName, resourceKey, definitionID string) {
	name, b = nextString(b)
	escapedName = name
	if b[0] == 1 {
		escapedName, b = nextString(b[1:])
	} else {
		b = b[1:]
	}
	resourceKey, b = nextString(b)
	definitionID, _ = nextString(b)
	return name, escapedName, resourceKey, definitionID
}

func nextString(b []byte) (string, []byte) {
	if n := int(b[0]); n < 0x80 { // a length of one byte, as most are
		return unsafeString(b[1 : 1+n]), b[1+n:]
	}
	n, k := binary.Uvarint(b)
	end := k + int(n)
	return unsafeString(b[k:end]), b[end:]
}

// plain tells whether s is its own escaped form: nothing in it needs
// escaping in a JSON string.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			return plainUTF8(s[i:])
		}
	}
	return true
}

// plainUTF8 is plain for a string with bytes past ASCII: valid UTF-8
// without U+2028 or U+2029, which encoding/json escapes.
func plainUTF8(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == '"' || r == '\\' || r == utf8.RuneError || r == '\u2028' || r == '\u2029' {
			return false
		}
	}
	return true
}

// escape returns s escaped as encoding/json writes a string's contents
// (without escaping HTML, as the API's answers are written).
func escape(s string) string {
	if plain(s) {
		return s
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string: cannot fail
	out := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	return string(out[1 : len(out)-1])
}
