package drivelist

import (
	"bytes"
	"fmt"
)

// scanner reads the tokens of a JSON text that encoding/json's Valid
// accepted: it finds where each value ends, and checks only what tells
// one kind of value from another. On any other text it may return an
// error or wrong values, but it never reads past the text or loops.
type scanner struct {
	b []byte
	i int
}

// peek returns the first byte of the next token, 0 at the end.
func (s *scanner) peek() byte {
	for s.i < len(s.b) {
		switch c := s.b[s.i]; c {
		case ' ', '\t', '\n', '\r', ',', ':':
			s.i++ // separators: valid JSON has them where they belong
		default:
			return c
		}
	}
	return 0
}

// next reads the one-byte token c ({, }, [ or ]).
func (s *scanner) next(c byte) error {
	if s.peek() != c {
		return fmt.Errorf("%w: %q where %q was expected", ErrNotPlain, s.peek(), c)
	}
	s.i++
	return nil
}

// quoted reads a string and returns it as written, quotes included, and
// whether it holds an escape.
func (s *scanner) quoted() ([]byte, bool, error) {
	if s.peek() != '"' {
		return nil, false, fmt.Errorf("%w: %q where a string was expected", ErrNotPlain, s.peek())
	}
	start := s.i
	escaped := false
	for j := start + 1; ; {
		k := bytes.IndexByte(s.b[j:], '"')
		if k < 0 {
			return nil, false, fmt.Errorf("%w: a string does not end", ErrNotPlain)
		}
		end := j + k
		if backslashes(s.b[start+1:end])%2 == 0 {
			s.i = end + 1
			escaped = escaped || bytes.IndexByte(s.b[start+1:end], '\\') >= 0
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

// literal reads true, false, null or a number and returns it.
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

// skip reads any value and returns it as written.
func (s *scanner) skip() ([]byte, error) {
	start := s.peek()
	from := s.i
	switch start {
	case '"':
		b, _, err := s.quoted()
		return b, err
	case '{', '[':
	case 0, '}', ']':
		return nil, fmt.Errorf("%w: a value is missing", ErrNotPlain)
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
	return nil, fmt.Errorf("%w: a value does not end", ErrNotPlain)
}
