package googlefake

import (
	"reflect"
	"strings"
)

// mask is a parsed partial-response selection (the fields parameter). Keys
// are field names, "*" for every field; a nil mask, as a whole or as a
// value, selects everything below.
type mask map[string]mask

// parseFields parses Google's fields syntax: comma-separated items, each a
// path of names joined by "/", optionally followed by a parenthesised
// sub-selection, e.g. "nextPageToken,files(id,parents,permissions/role)".
func parseFields(s string) (mask, error) {
	p := &fieldsParser{s: s}
	m, err := p.list()
	if err == nil && p.pos < len(s) {
		err = p.fail()
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

// fieldError is Google's complaint about a field selection.
type fieldError string

func (e fieldError) Error() string { return "Invalid field selection " + string(e) }

type fieldsParser struct {
	s   string
	pos int
}

func (p *fieldsParser) fail() error {
	rest := strings.TrimSpace(p.s[p.pos:])
	if rest == "" {
		rest = p.s
	}
	return fieldError(rest)
}

func (p *fieldsParser) list() (mask, error) {
	m := mask{}
	for {
		if err := p.item(m); err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.pos >= len(p.s) || p.s[p.pos] != ',' {
			return m, nil
		}
		p.pos++
	}
}

// item parses one path with its optional sub-selection into m.
func (p *fieldsParser) item(m mask) error {
	var path []string
	for {
		name := p.name()
		if name == "" {
			return p.fail()
		}
		path = append(path, name)
		if p.pos >= len(p.s) || p.s[p.pos] != '/' {
			break
		}
		p.pos++
	}
	var sub mask
	if p.pos < len(p.s) && p.s[p.pos] == '(' {
		p.pos++
		var err error
		if sub, err = p.list(); err != nil {
			return err
		}
		if p.pos >= len(p.s) || p.s[p.pos] != ')' {
			return p.fail()
		}
		p.pos++
	}
	for i := len(path) - 1; i > 0; i-- {
		sub = mask{path[i]: sub}
	}
	m.merge(path[0], sub)
	return nil
}

func (p *fieldsParser) name() string {
	p.skipSpace()
	start := p.pos
	for p.pos < len(p.s) && isNameByte(p.s[p.pos]) {
		p.pos++
	}
	return p.s[start:p.pos]
}

func (p *fieldsParser) skipSpace() {
	for p.pos < len(p.s) && p.s[p.pos] == ' ' {
		p.pos++
	}
}

func isNameByte(c byte) bool {
	return c == '*' || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// merge adds a selection of key to m; selecting everything wins.
func (m mask) merge(key string, sub mask) {
	old, ok := m[key]
	switch {
	case !ok:
		m[key] = sub
	case old == nil || sub == nil:
		m[key] = nil
	default:
		for k, v := range sub {
			old.merge(k, v)
		}
	}
}

// child returns the selection below name and whether name is selected.
func (m mask) child(name string) (mask, bool) {
	if m == nil {
		return nil, true
	}
	if sub, ok := m[name]; ok {
		return sub, true
	}
	sub, ok := m["*"]
	return sub, ok
}

// selects reports whether name is selected.
func (m mask) selects(name string) bool {
	_, ok := m.child(name)
	return ok
}

// validate checks that every selected name is a field of the JSON shape of
// t (a Drive or Directory struct type); maps and free-form values
// (interface fields) accept any name.
func (m mask) validate(t reflect.Type) error {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if m == nil || t.Kind() == reflect.Map || t.Kind() == reflect.Interface {
		return nil
	}
	for name, sub := range m {
		if name == "*" {
			continue
		}
		if t.Kind() != reflect.Struct {
			return fieldError(name)
		}
		ft, ok := jsonField(t, name)
		if !ok {
			return fieldError(name)
		}
		if err := sub.validate(ft); err != nil {
			return err
		}
	}
	return nil
}

// jsonField returns the type of the struct field whose JSON name is name.
func jsonField(t reflect.Type, name string) (reflect.Type, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); tag == name && f.IsExported() {
			return f.Type, true
		}
	}
	return nil, false
}
