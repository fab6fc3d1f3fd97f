package googlefake

import (
	"math"
	"strings"
	"time"
)

// span is an inclusive range of times in milliseconds since the epoch; it
// is empty when lo > hi.
type span struct{ lo, hi int64 }

// allTimes is the span of every time.
var allTimes = span{math.MinInt64, math.MaxInt64}

func (a span) empty() bool { return a.lo > a.hi }

func (a span) has(v int64) bool { return a.lo <= v && v <= a.hi }

// meet returns the times in both spans.
func (a span) meet(b span) span { return span{max(a.lo, b.lo), min(a.hi, b.hi)} }

// hull returns the smallest span holding both.
func (a span) hull(b span) span {
	switch {
	case a.empty():
		return b
	case b.empty():
		return a
	}
	return span{min(a.lo, b.lo), max(a.hi, b.hi)}
}

// timeTerm parses the rest of "createdTime OP 'T'" (or modifiedTime). File
// times have milliseconds, as Drive's: a time with a fraction of a
// millisecond lies between two of them, and no file has it.
func (p *queryParser) timeTerm(field timeField) (query, error) {
	if p.pos >= len(p.toks) || p.toks[p.pos].kind != tokOp {
		return query{}, errQuery
	}
	op := p.toks[p.pos].text
	p.pos++
	lit, ok := p.next(tokString)
	if !ok {
		return query{}, errQuery
	}
	t, err := parseQueryTime(lit)
	if err != nil {
		return query{}, err
	}
	floor := t.UnixMilli()
	ceil := floor
	if t.Nanosecond()%int(time.Millisecond) != 0 {
		ceil++
	}
	var sp span
	switch op {
	case "<":
		sp = span{math.MinInt64, ceil - 1}
	case "<=":
		sp = span{math.MinInt64, floor}
	case ">":
		sp = span{floor + 1, math.MaxInt64}
	case ">=":
		sp = span{ceil, math.MaxInt64}
	case "=", "!=":
		sp = span{ceil, floor} // empty between two milliseconds
	default:
		return query{}, errQuery
	}
	if field == createdTime && p.ignore.covers(op) {
		return leaf(func(*File, *computed) bool { return true }), nil
	}
	q := query{spans: everything}
	if op == "!=" {
		q.match = func(f *File, _ *computed) bool { return !sp.has(f.times[field]) }
		return q, nil
	}
	q.spans[field] = sp
	q.match = func(f *File, _ *computed) bool { return sp.has(f.times[field]) }
	return q, nil
}

// TimeBounds are createdTime comparisons of files.list's q that a server
// claiming to be Drive may ignore (IgnoreCreatedTimeBounds).
type TimeBounds uint8

// The comparisons IgnoreCreatedTimeBounds may ignore.
const (
	// LowerTimeBounds are createdTime > and >=.
	LowerTimeBounds TimeBounds = 1 << iota
	// UpperTimeBounds are createdTime < and <=.
	UpperTimeBounds
	// AllTimeBounds are every createdTime comparison, = and != included,
	// as the npm package google-drive-mock ignores them.
	AllTimeBounds = LowerTimeBounds | UpperTimeBounds
)

// covers reports whether b ignores the comparison op.
func (b TimeBounds) covers(op string) bool {
	switch op {
	case ">", ">=":
		return b&LowerTimeBounds != 0
	case "<", "<=":
		return b&UpperTimeBounds != 0
	}
	return b == AllTimeBounds
}

// IgnoreCreatedTimeBounds makes files.list take the createdTime comparisons
// of b in q as true for every file (none: 0), as Drive emulators and
// proxies that claim to be Drive do (the npm package google-drive-mock
// ignores them all): orderBy createdTime is still honoured, and the rest of
// the query too. modifiedTime comparisons are unchanged.
func (s *Server) IgnoreCreatedTimeBounds(b TimeBounds) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ignoreBounds = b
}

// queryTimeLayouts are the forms of a time in a query: RFC 3339 with Z or
// an offset; the same without either, in UTC, Drive's default time zone;
// and a date alone, its midnight in UTC. Fractional seconds are optional
// (time.Parse takes them after the seconds of any layout).
var queryTimeLayouts = []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02"}

// parseQueryTime reads a time literal of a query.
func parseQueryTime(v string) (time.Time, error) {
	v = strings.ToUpper(v) // RFC 3339 allows t and z
	for _, layout := range queryTimeLayouts {
		if t, err := time.ParseInLocation(layout, v, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errQuery
}
