package drivelist

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// scanner reads the tokens of a JSON text and checks, as it goes, the
// syntax of what it reads: whitespace, the commas and colons between
// values (the decoder's object and array loops ask for them), literals
// and strings without escapes. A string with escapes is left to its
// caller, which reads it with encoding/json; a value skipped whole (skip)
// is checked only for where it ends. On any text it never reads past the
// text or loops.
type scanner struct {
	b []byte
	i int
}

// peek skips whitespace and returns the first byte of the next token, 0 at
// the end (see atEnd: a NUL byte is no token either).
func (s *scanner) peek() byte {
	for s.i < len(s.b) {
		switch c := s.b[s.i]; c {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return c
		}
	}
	return 0
}

// atEnd reports whether nothing but whitespace is left.
func (s *scanner) atEnd() bool {
	s.peek()
	return s.i == len(s.b)
}

// next reads the one-byte token c ({ or [) that begins a value the decoder
// expects; another value there is valid JSON the decoder does not take.
func (s *scanner) next(c byte) error {
	if s.peek() != c {
		return fmt.Errorf("%w: %q where %q was expected", ErrNotPlain, s.peek(), c)
	}
	s.i++
	return nil
}

// colon reads the colon after an object's key.
func (s *scanner) colon() error {
	if s.peek() != ':' {
		return fmt.Errorf("%w: %q after a key", ErrInvalid, s.peek())
	}
	s.i++
	return s.value()
}

// more reads what follows a member of an object (end is '}') or an
// element of an array (end is ']'): a comma (true: another follows) or end
// (false).
func (s *scanner) more(end byte) (bool, error) {
	switch s.peek() {
	case ',':
		s.i++
		if end == ']' {
			return true, s.value()
		}
		if s.peek() != '"' {
			return false, fmt.Errorf("%w: %q where a key was expected", ErrInvalid, s.peek())
		}
		return true, nil
	case end:
		s.i++
		return false, nil
	}
	return false, fmt.Errorf("%w: %q after a value", ErrInvalid, s.peek())
}

// value checks that a value begins next.
func (s *scanner) value() error {
	switch c := s.peek(); {
	case c == '{' || c == '[' || c == '"' || c == '-' || c == 't' || c == 'f' || c == 'n' || '0' <= c && c <= '9':
		return nil
	default:
		return fmt.Errorf("%w: %q where a value was expected", ErrInvalid, c)
	}
}

// quoted reads a string and returns it as written, quotes included, and
// whether it holds an escape. A string without escapes is checked: it may
// hold no control character.
func (s *scanner) quoted() ([]byte, bool, error) {
	if s.peek() != '"' {
		return nil, false, fmt.Errorf("%w: %q where a string was expected", ErrNotPlain, s.peek())
	}
	start := s.i
	escaped := false
	for j := start + 1; ; {
		k := bytes.IndexByte(s.b[j:], '"')
		if k < 0 {
			return nil, false, fmt.Errorf("%w: a string does not end", ErrInvalid)
		}
		end := j + k
		if backslashes(s.b[start+1:end])%2 == 0 {
			s.i = end + 1
			inner := s.b[start+1 : end]
			if escaped = escaped || bytes.IndexByte(inner, '\\') >= 0; !escaped && hasControl(inner) {
				return nil, false, fmt.Errorf("%w: a control character in a string", ErrInvalid)
			}
			return s.b[start:s.i], escaped, nil
		}
		escaped, j = true, end+1
	}
}

// backslashes counts the backslashes that end b.
func backslashes(b []byte) int {
	n := 0
	for n < len(b) && b[len(b)-1-n] == '\\' {
		n++
	}
	return n
}

// hasControl reports whether b holds a byte below 0x20, which JSON allows
// in a string only escaped; eight bytes at a time.
func hasControl(b []byte) bool {
	const highs, spaces = 0x8080808080808080, 0x2020202020202020
	for len(b) >= 8 {
		// A byte below 0x20 borrows in x-spaces without having its high bit
		// set; bytes at or above 0x80 are masked out by &^x.
		if x := binary.LittleEndian.Uint64(b); (x-spaces)&^x&highs != 0 {
			return true
		}
		b = b[8:]
	}
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// literal reads true, false, null or a number and returns it as written:
// the bytes up to the next delimiter, which its caller checks.
func (s *scanner) literal() []byte {
	start := s.i
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ',', ']', '}', ' ', '\t', '\n', '\r':
			return s.b[start:s.i]
		}
		s.i++
	}
	return s.b[start:s.i]
}

// word reads the literal w if it is next, whole.
func (s *scanner) word(w string) bool {
	from := s.i
	if string(s.literal()) == w {
		return true
	}
	s.i = from
	return false
}

// skip reads any value and returns it as written; it finds where the
// value ends, and checks nothing else of it.
func (s *scanner) skip() ([]byte, error) {
	start := s.peek()
	from := s.i
	switch start {
	case '"':
		b, _, err := s.quoted()
		return b, err
	case '{', '[':
	case 0, '}', ']':
		return nil, fmt.Errorf("%w: a value is missing", ErrInvalid)
	default:
		return s.literal(), nil
	}
	depth := 0
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '"':
			if _, _, err := s.quoted(); err != nil {
				return nil, err
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				s.i++
				return s.b[from:s.i], nil
			}
		}
		s.i++
	}
	return nil, fmt.Errorf("%w: a value does not end", ErrInvalid)
}
