package config

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

var (
	timeType     = reflect.TypeFor[time.Time]()
	durationType = reflect.TypeFor[time.Duration]()
)

// decode fills c from the YAML in data. It reports syntax errors, unknown keys
// and values of the wrong type, and returns false when the document could not
// be decoded faithfully and so is not worth validating.
func decode(data []byte, c *Config, ck *checker) bool {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		ck.report("", err.Error())
		return false
	}
	if len(doc.Content) == 0 {
		return true // an empty file: every default stands
	}
	root := doc.Content[0]
	w := walker{ck: ck, active: map[*yaml.Node]bool{}}
	w.walk(root, reflect.TypeFor[Config](), "")
	if w.broken {
		return false
	}
	if err := root.Decode(c); err != nil {
		ck.report("", err.Error())
		return false
	}
	return true
}

// walker checks a YAML node tree against the yaml tags of Config before it
// is decoded, so that an unknown key or a value of the wrong type is reported
// with its full path and line instead of being dropped.
type walker struct {
	ck     *checker
	broken bool                // a problem keeps the tree from decoding faithfully
	active map[*yaml.Node]bool // the aliases being followed, to stop cycles
}

// walk checks node n, found at path, against type t.
func (w *walker) walk(n *yaml.Node, t reflect.Type, path string) {
	switch {
	case n.Kind == yaml.AliasNode:
		w.alias(n, t, path)
	case isNull(n):
		// An absent value: the default stands (a pointer stays nil).
	case t.Kind() == reflect.Pointer:
		w.walk(n, t.Elem(), path)
	case t.Kind() == reflect.Map || (t.Kind() == reflect.Struct && t != timeType):
		w.mapping(n, t, path)
	case t.Kind() == reflect.Slice:
		w.sequence(n, t, path)
	case n.Kind != yaml.ScalarNode || !fits(n, t):
		w.mismatch(n, t, path)
	}
}

// alias walks the node an alias refers to.
func (w *walker) alias(n *yaml.Node, t reflect.Type, path string) {
	if w.active[n] {
		w.fail(path, fmt.Sprintf("alias *%s refers to a value that contains it (line %d)", n.Value, n.Line))
		return
	}
	w.active[n] = true
	w.walk(n.Alias, t, path)
	delete(w.active, n)
}

// mapping checks the keys of n, to be decoded into t (a struct or a map),
// following merge keys (<<) and reporting duplicate keys.
func (w *walker) mapping(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.MappingNode {
		w.mismatch(n, t, path)
		return
	}
	first := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := join(path, k.Value)
		switch {
		case k.Kind == yaml.ScalarNode && k.Value == "<<" && k.ShortTag() == "!!merge":
			w.merge(v, t, path)
		case k.Kind != yaml.ScalarNode || isNull(k):
			w.fail(path, fmt.Sprintf("expected a plain key, got %s (line %d)", describeNode(k), k.Line))
		case first[k.Value] > 0:
			w.fail(key, fmt.Sprintf("duplicate key (line %d); already set on line %d", k.Line, first[k.Value]))
		default:
			first[k.Value] = k.Line
			w.ck.lines[key] = k.Line
			w.entry(t, k, v, key)
		}
	}
}

// entry checks the value v of key k in a mapping decoded into t.
func (w *walker) entry(t reflect.Type, k, v *yaml.Node, key string) {
	if t.Kind() == reflect.Map {
		w.walk(v, t.Elem(), key)
		return
	}
	names, types := fieldsOf(t)
	if ft, ok := types[k.Value]; ok {
		w.walk(v, ft, key)
		return
	}
	msg := fmt.Sprintf("unknown key (line %d)", k.Line)
	if i := closest(k.Value, names); i >= 0 {
		msg += "; did you mean " + names[i] + "?"
	} else {
		msg += "; expected one of " + strings.Join(names, ", ")
	}
	w.ck.report(key, msg)
}

// merge checks the value of a merge key (<<) in the mapping at path, decoded
// into t: a mapping, or a list of mappings, whose keys join those of path.
func (w *walker) merge(v *yaml.Node, t reflect.Type, path string) {
	sources := []*yaml.Node{v}
	if v.Kind == yaml.SequenceNode {
		sources = v.Content
	}
	for _, s := range sources {
		if target(s).Kind != yaml.MappingNode {
			w.fail(join(path, "<<"), fmt.Sprintf("expected a mapping or a list of mappings to merge, got %s (line %d)", describeNode(s), s.Line))
			continue
		}
		w.walk(s, t, path)
	}
}

// sequence checks the elements of n, to be decoded into the slice type t.
func (w *walker) sequence(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.SequenceNode {
		w.mismatch(n, t, path)
		return
	}
	for i, e := range n.Content {
		key := index(path, i)
		w.ck.lines[key] = e.Line
		if isNull(target(e)) {
			w.mismatch(e, t.Elem(), key) // the decoder would drop it
			continue
		}
		w.walk(e, t.Elem(), key)
	}
}

// mismatch reports that n is not a value of type t.
func (w *walker) mismatch(n *yaml.Node, t reflect.Type, path string) {
	w.fail(path, fmt.Sprintf("expected %s, got %s (line %d)", describe(t), describeNode(n), n.Line))
}

// fail reports a problem that keeps the tree from decoding faithfully.
func (w *walker) fail(key, msg string) {
	w.broken = true
	w.ck.report(key, msg)
}

// fits reports whether scalar n decodes into type t without loss: integers
// must be written as integers and times in RFC 3339.
func fits(n *yaml.Node, t reflect.Type) bool {
	if n.Decode(reflect.New(t).Interface()) != nil {
		return false
	}
	switch {
	case t == timeType:
		_, err := time.Parse(time.RFC3339, n.Value)
		return err == nil
	case t.Kind() == reflect.Int:
		return n.ShortTag() == "!!int"
	}
	return true
}

// fieldsOf returns the keys of struct type t, in order, and their types.
func fieldsOf(t reflect.Type) ([]string, map[string]reflect.Type) {
	var names []string
	types := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		names = append(names, name)
		types[name] = f.Type
	}
	return names, types
}

// target returns the node an alias refers to, or n itself.
func target(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode {
		return n.Alias
	}
	return n
}

// isNull reports whether n is a null scalar (~, null or nothing at all).
func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// describe says what a value of type t looks like.
func describe(t reflect.Type) string {
	switch t {
	case durationType:
		return "a duration such as 30s or 1m30s"
	case timeType:
		return "an RFC 3339 time such as 2027-01-01T00:00:00Z"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int:
		return "an integer"
	case reflect.Float64:
		return "a number"
	case reflect.Slice:
		return "a list"
	}
	return "a mapping"
}

// describeNode says what n is, for messages.
func describeNode(n *yaml.Node) string {
	switch target(n).Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	if isNull(target(n)) {
		return "nothing (null)"
	}
	return fmt.Sprintf("%q", target(n).Value)
}

// closest returns the index of the name that word most likely misspells:
// equal but for case, or within a small edit distance; -1 if none is close.
func closest(word string, names []string) int {
	best, bestDist := -1, max(1, min(3, len(word)/4))+1
	for i, name := range names {
		if d := distance(strings.ToLower(word), strings.ToLower(name)); d < bestDist {
			best, bestDist = i, d
		}
	}
	return best
}

// distance returns the Levenshtein distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
