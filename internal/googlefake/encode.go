package googlefake

import (
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"google.golang.org/api/drive/v3"
)

// appendJSON writes a drive API value as JSON, as the client library's
// MarshalJSON methods do (every field omitted when empty unless named in
// ForceSendFields; ",string" integers quoted), keeping only the fields m
// selects, with keys in the order Drive sends them (see wireOrder). Walking the structs once with the selection is much cheaper than
// marshaling them whole and filtering the result.
func appendJSON(b []byte, v reflect.Value, m mask) []byte {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return append(b, "null"...)
		}
		return appendJSON(b, v.Elem(), m)
	case reflect.Struct:
		return appendStruct(b, v, m)
	case reflect.Slice:
		b = append(b, '[')
		for i := range v.Len() {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSON(b, v.Index(i), m)
		}
		return append(b, ']')
	case reflect.Map:
		return appendMap(b, v, m)
	case reflect.String:
		return appendString(b, v.String())
	case reflect.Bool:
		return strconv.AppendBool(b, v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.AppendInt(b, v.Int(), 10)
	}
	out, err := json.Marshal(v.Interface())
	if err != nil {
		panic(err)
	}
	return append(b, out...)
}

func appendStruct(b []byte, v reflect.Value, m mask) []byte {
	plan := planOf(v.Type())
	var forced reflect.Value
	if plan.force >= 0 {
		forced = v.Field(plan.force)
	}
	b = append(b, '{')
	first := true
	for _, f := range plan.selected(m) {
		fv := v.Field(f.index)
		if send, empty := included(fv); !send || empty && !isForced(forced, f.goName) {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendString(b, f.name)
		b = append(b, ':')
		if f.quoted {
			b = append(b, '"')
			b = appendJSON(b, fv, f.sub)
			b = append(b, '"')
		} else {
			b = appendJSON(b, fv, f.sub)
		}
	}
	return append(b, '}')
}

// isForced reports whether a ForceSendFields value names a field.
func isForced(force reflect.Value, goName string) bool {
	if !force.IsValid() {
		return false
	}
	for i := range force.Len() {
		if force.Index(i).String() == goName {
			return true
		}
	}
	return false
}

// included tells whether a field may be sent, and whether it is empty: nil
// pointers are never sent, other values when not empty or, empty, when
// ForceSendFields names them (the client library's rules).
func included(v reflect.Value) (send, empty bool) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return !v.IsNil(), false
	case reflect.Map, reflect.Slice, reflect.String:
		return true, v.Len() == 0
	case reflect.Struct:
		return true, false
	}
	return true, v.IsZero()
}

// appendMap writes a map with string keys, sorted, as encoding/json does.
func appendMap(b []byte, v reflect.Value, m mask) []byte {
	ks := v.MapKeys()
	slices.SortFunc(ks, func(x, y reflect.Value) int { return strings.Compare(x.String(), y.String()) })
	b = append(b, '{')
	first := true
	for _, k := range ks {
		sub, ok := m.child(k.String())
		if !ok {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendString(b, k.String())
		b = append(b, ':')
		b = appendJSON(b, v.MapIndex(k), sub)
	}
	return append(b, '}')
}

// appendString writes a JSON string.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		// Copy the run of bytes that need no escape at once.
		j := i
		for j < len(s) && s[j] >= 0x20 && s[j] < utf8.RuneSelf && s[j] != '"' && s[j] != '\\' {
			j++
		}
		b = append(b, s[i:j]...)
		if i = j; i == len(s) {
			break
		}
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		case c < utf8.RuneSelf:
			b = append(b, c)
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			b = utf8.AppendRune(b, r) // invalid bytes become U+FFFD
			i += size
			continue
		}
		i++
	}
	return append(b, '"')
}

// structPlan lists the JSON fields of a struct type.
type structPlan struct {
	fields []fieldPlan
	force  int // index of ForceSendFields, -1 if none
}

type fieldPlan struct {
	index        int
	name, goName string
	quoted       bool // ",string"
}

var plans sync.Map // reflect.Type → *structPlan

// selectedField is a field a selection keeps, with the selection below it.
type selectedField struct {
	fieldPlan
	sub mask
}

// selection is the fields of a struct a mask keeps, in order. It holds the
// mask, so that the mask's address, its key in selections, is not reused.
type selection struct {
	m      mask
	fields []selectedField
}

// selections caches what each mask keeps of each struct: a file resource
// has a hundred fields and a page a thousand files, and asking the mask
// about each field of each would cost more than encoding the ones kept.
// Masks come from fieldsParam, which makes one per selection and method,
// so this holds a few entries per selection used.
var selections sync.Map // selectionKey → *selection

type selectionKey struct {
	plan *structPlan
	mask uintptr // the mask map's address, 0 for nil (everything)
}

// selected returns the fields of the struct m keeps.
func (p *structPlan) selected(m mask) []selectedField {
	key := selectionKey{p, reflect.ValueOf(m).Pointer()}
	if s, ok := selections.Load(key); ok {
		return s.(*selection).fields
	}
	s := &selection{m: m}
	for _, f := range p.fields {
		if sub, ok := m.child(f.name); ok {
			s.fields = append(s.fields, selectedField{f, sub})
		}
	}
	selections.Store(key, s)
	return s.fields
}

// wireOrder is the order Drive writes the keys of some answers in, where it
// differs from the client library's struct (whose fields, and so its
// MarshalJSON, go alphabetically): a list's kind and page tokens come before
// its items. Keys not listed follow, in the struct's order.
var wireOrder = map[reflect.Type][]string{
	reflect.TypeFor[drive.FileList]():   {"kind", "nextPageToken", "incompleteSearch", "files"},
	reflect.TypeFor[drive.ChangeList](): {"kind", "nextPageToken", "newStartPageToken", "changes"},
}

func planOf(t reflect.Type) *structPlan {
	if p, ok := plans.Load(t); ok {
		return p.(*structPlan)
	}
	p := &structPlan{force: -1}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case f.Name == "ForceSendFields":
			p.force = i
		case f.IsExported() && name != "-" && name != "":
			p.fields = append(p.fields, fieldPlan{index: i, name: name, goName: f.Name,
				quoted: strings.Contains(opts, "string")})
		}
	}
	if order := wireOrder[t]; order != nil {
		rank := func(f fieldPlan) int {
			if i := slices.Index(order, f.name); i >= 0 {
				return i
			}
			return len(order)
		}
		slices.SortStableFunc(p.fields, func(a, b fieldPlan) int { return rank(a) - rank(b) })
	}
	plans.Store(t, p)
	return p
}
