package googlefake

import (
	"errors"
	"slices"
	"strings"
	"unicode"
)

// pred is a compiled files.list query: does the file match?
type pred func(f *File, c *computed) bool

// query is a compiled files.list query and, when it can only match files
// with one of some parents ("'A' in parents or 'B' in parents", and that
// and anything), those parents: a listing then looks at their children
// alone, not at every file, as an index would.
type query struct {
	match   pred
	parents []string
	narrow  bool // parents is the whole set of candidates' parents
	// spans holds, by timeField, the range of that time outside which the
	// query matches nothing: a listing in that time's order reads that
	// range of its index alone.
	spans [2]span
}

// everything is a query's spans when it says nothing of times.
var everything = [2]span{allTimes, allTimes}

// leaf returns the query of a term that says nothing of times.
func leaf(match pred) query { return query{match: match, spans: everything} }

var errQuery = errors.New("invalid query")

// compileQuery compiles the subset of Drive's q language the fake supports:
//
//	mimeType = 'X'   mimeType != 'X'
//	name = 'X'       name != 'X'      name contains 'X'
//	trashed = true|false             trashed != true|false
//	'ID' in parents  ('root' is the acting user's My Drive root)
//	createdTime OP 'T'  modifiedTime OP 'T'  (OP one of < <= > >= = !=)
//
// combined with and, or, not and parentheses; string literals use \' and \\
// escapes. name contains matches, case-insensitively, the start of a word of
// the name, as Drive's prefix matching does. Times are RFC 3339 date-times,
// UTC unless they name an offset, fractional seconds optional, or dates
// alone (midnight UTC), as Drive takes them (see parseQueryTime). An empty
// query matches every file. The createdTime comparisons of ignore match
// every file (see IgnoreCreatedTimeBounds).
func compileQuery(q, root string, ignore TimeBounds) (query, error) {
	toks, err := tokenize(q)
	if err != nil {
		return query{}, err
	}
	if len(toks) == 0 {
		return leaf(func(*File, *computed) bool { return true }), nil
	}
	p := &queryParser{toks: toks, root: root, ignore: ignore}
	x, err := p.or()
	if err == nil && p.pos < len(toks) {
		err = errQuery
	}
	return x, err
}

type tokenKind int

const (
	tokWord tokenKind = iota
	tokString
	tokOp // "=", "!=", "<", "<=", ">", ">=", "(", ")"
)

type token struct {
	kind tokenKind
	text string
}

func tokenize(q string) ([]token, error) {
	var toks []token
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '(' || c == ')' || c == '=':
			toks = append(toks, token{tokOp, q[i : i+1]})
			i++
		case strings.HasPrefix(q[i:], "!=") || strings.HasPrefix(q[i:], "<=") || strings.HasPrefix(q[i:], ">="):
			toks = append(toks, token{tokOp, q[i : i+2]})
			i += 2
		case c == '<' || c == '>':
			toks = append(toks, token{tokOp, q[i : i+1]})
			i++
		case c == '\'':
			s, n, err := stringLiteral(q[i:])
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{tokString, s})
			i += n
		case isWordByte(c):
			j := i
			for j < len(q) && isWordByte(q[j]) {
				j++
			}
			toks = append(toks, token{tokWord, q[i:j]})
			i = j
		default:
			return nil, errQuery
		}
	}
	return toks, nil
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// stringLiteral reads a quoted literal at the start of s; it returns the
// value and the length consumed.
func stringLiteral(s string) (string, int, error) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\'':
			return b.String(), i + 1, nil
		case '\\':
			if i+1 >= len(s) || s[i+1] != '\'' && s[i+1] != '\\' {
				return "", 0, errQuery
			}
			i++
		}
		b.WriteByte(s[i])
	}
	return "", 0, errQuery
}

type queryParser struct {
	toks   []token
	pos    int
	root   string
	ignore TimeBounds // createdTime comparisons taken as true
}

// keyword consumes the next token if it is the word w (case-insensitive).
func (p *queryParser) keyword(w string) bool {
	if p.pos < len(p.toks) && p.toks[p.pos].kind == tokWord && strings.EqualFold(p.toks[p.pos].text, w) {
		p.pos++
		return true
	}
	return false
}

// next consumes and returns the next token if it is of kind k.
func (p *queryParser) next(k tokenKind) (string, bool) {
	if p.pos < len(p.toks) && p.toks[p.pos].kind == k {
		p.pos++
		return p.toks[p.pos-1].text, true
	}
	return "", false
}

func (p *queryParser) op(text string) bool {
	if p.pos < len(p.toks) && p.toks[p.pos] == (token{tokOp, text}) {
		p.pos++
		return true
	}
	return false
}

func (p *queryParser) or() (query, error) {
	return p.binary(p.and, "or", func(x, y query) query {
		return query{
			match:   func(f *File, c *computed) bool { return x.match(f, c) || y.match(f, c) },
			parents: append(slices.Clip(x.parents), y.parents...), narrow: x.narrow && y.narrow,
			spans: [2]span{x.spans[0].hull(y.spans[0]), x.spans[1].hull(y.spans[1])},
		}
	})
}

func (p *queryParser) and() (query, error) {
	return p.binary(p.unary, "and", func(x, y query) query {
		q := query{
			match:   func(f *File, c *computed) bool { return x.match(f, c) && y.match(f, c) },
			parents: y.parents, narrow: y.narrow,
			spans: [2]span{x.spans[0].meet(y.spans[0]), x.spans[1].meet(y.spans[1])},
		}
		if x.narrow {
			q.parents, q.narrow = x.parents, true
		}
		return q
	})
}

// binary parses operand (word operand)*, left-associative; combine makes
// the query of two operands joined by word.
func (p *queryParser) binary(operand func() (query, error), word string, combine func(x, y query) query) (query, error) {
	x, err := operand()
	for err == nil && p.keyword(word) {
		var y query
		if y, err = operand(); err == nil {
			x = combine(x, y)
		}
	}
	return x, err
}

func (p *queryParser) unary() (query, error) {
	if p.keyword("not") {
		x, err := p.unary()
		return leaf(func(f *File, c *computed) bool { return !x.match(f, c) }), err
	}
	if p.op("(") {
		x, err := p.or()
		if err == nil && !p.op(")") {
			err = errQuery
		}
		return x, err
	}
	return p.term()
}

func (p *queryParser) term() (query, error) {
	if id, ok := p.next(tokString); ok {
		return p.inParents(id)
	}
	field, ok := p.next(tokWord)
	if !ok {
		return query{}, errQuery
	}
	var match pred
	var err error
	switch field {
	case "mimeType":
		match, err = p.compare(func(f *File) string { return f.MimeType }, false)
	case "name":
		match, err = p.compare(func(f *File) string { return f.Name }, true)
	case "trashed":
		match, err = p.trashed()
	case "createdTime":
		return p.timeTerm(createdTime)
	case "modifiedTime":
		return p.timeTerm(modifiedTime)
	default:
		err = errQuery
	}
	return leaf(match), err
}

// inParents parses the rest of "'ID' in parents".
func (p *queryParser) inParents(id string) (query, error) {
	if !p.keyword("in") || !p.keyword("parents") {
		return query{}, errQuery
	}
	if id == "root" {
		id = p.root
	}
	return query{
		match:   func(f *File, _ *computed) bool { return slices.Contains(f.Parents, id) },
		parents: []string{id}, narrow: true, spans: everything,
	}, nil
}

// compare parses "= 'X'", "!= 'X'" or, when allowed, "contains 'X'".
func (p *queryParser) compare(get func(*File) string, containsOK bool) (pred, error) {
	switch {
	case p.op("="):
		v, ok := p.next(tokString)
		return func(f *File, _ *computed) bool { return get(f) == v }, check(ok)
	case p.op("!="):
		v, ok := p.next(tokString)
		return func(f *File, _ *computed) bool { return get(f) != v }, check(ok)
	case containsOK && p.keyword("contains"):
		v, ok := p.next(tokString)
		return func(f *File, _ *computed) bool { return wordPrefix(get(f), v) }, check(ok)
	}
	return nil, errQuery
}

// trashed parses "= true|false" or "!= true|false".
func (p *queryParser) trashed() (pred, error) {
	negate := p.op("!=")
	if !negate && !p.op("=") {
		return nil, errQuery
	}
	var want bool
	switch {
	case p.keyword("true"):
		want = true
	case p.keyword("false"):
	default:
		return nil, errQuery
	}
	return func(_ *File, c *computed) bool { return c.trashed == want != negate }, nil
}

func check(ok bool) error {
	if !ok {
		return errQuery
	}
	return nil
}

// wordPrefix reports whether prefix starts a word of name, ignoring case.
func wordPrefix(name, prefix string) bool {
	name, prefix = strings.ToLower(name), strings.ToLower(prefix)
	atStart := true
	for i, r := range name {
		if atStart && strings.HasPrefix(name[i:], prefix) {
			return true
		}
		atStart = !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}
	return prefix == ""
}
