package googlefake

import (
	"cmp"
	"net/http"
	"strconv"
	"strings"
)

// listOrder is a files.list order (the orderBy parameter): keys, then
// creation order for ties, in the direction of the last key, so that
// "createdTime desc" lists exactly the reverse of "createdTime". Drive does
// not document how it breaks ties; creation order is the fake's own order,
// and makes a page token a time and a sequence number.
type listOrder struct {
	keys []orderKey // at least one
	// spec is the order written canonically: a page token holds it, and
	// continues that order alone.
	spec string
}

type orderKey struct {
	field timeField
	desc  bool
}

// defaultOrder is the order without orderBy: createdTime, ties in creation
// order. Files stamped by the fake's clock were created in creation order,
// so this is creation order unless a test set times (SetFileTimes,
// SpreadTimes, a clock that goes back).
var defaultOrder = listOrder{keys: []orderKey{{field: createdTime}}, spec: "createdTime"}

// orderFields are the orderBy keys the fake sorts by.
var orderFields = map[string]timeField{"createdTime": createdTime, "modifiedTime": modifiedTime}

// unsortedKeys are the orderBy keys Drive documents that the fake does not
// sort by: it answers them 501, not Drive's 400 for unknown keys.
var unsortedKeys = map[string]bool{
	"folder": true, "modifiedByMeTime": true, "name": true, "name_natural": true, "quotaBytesUsed": true,
	"recency": true, "sharedWithMeTime": true, "starred": true, "viewedByMeTime": true,
}

// orderParam reads orderBy: comma-separated keys, each optionally followed
// by asc or desc. Unknown keys are refused as Drive refuses them: 400
// "Invalid Value", location orderBy.
func orderParam(v string) (listOrder, *apiError) {
	if strings.TrimSpace(v) == "" {
		return defaultOrder, nil
	}
	var o listOrder
	var spec []string
	for item := range strings.SplitSeq(v, ",") {
		words := strings.Fields(item)
		if len(words) == 0 || len(words) > 2 {
			return listOrder{}, invalidParam("orderBy")
		}
		field, ok := orderFields[words[0]]
		switch {
		case !ok && unsortedKeys[words[0]]:
			return listOrder{}, newAPIError(http.StatusNotImplemented, "notImplemented",
				"googlefake does not sort by "+words[0], "orderBy")
		case !ok:
			return listOrder{}, invalidParam("orderBy")
		}
		k := orderKey{field: field}
		if len(words) == 2 {
			switch strings.ToLower(words[1]) {
			case "asc":
			case "desc":
				k.desc = true
			default:
				return listOrder{}, invalidParam("orderBy")
			}
		}
		o.keys = append(o.keys, k)
		if k.desc {
			words[0] += " desc"
		}
		spec = append(spec, words[0])
	}
	o.spec = strings.Join(spec, ",")
	return o, nil
}

// position is a file's place in any order: its times and its sequence.
type position struct {
	times [2]int64
	seq   int64
}

func positionOf(f *File) position { return position{f.times, f.seq} }

// compare orders two positions.
func (o listOrder) compare(a, b position) int {
	for _, k := range o.keys {
		if c := cmp.Compare(a.times[k.field], b.times[k.field]); c != 0 {
			return flip(c, k.desc)
		}
	}
	return flip(cmp.Compare(a.seq, b.seq), o.keys[len(o.keys)-1].desc)
}

func flip(c int, desc bool) int {
	if desc {
		return -c
	}
	return c
}

// cursor is where a page starts: after (or, inclusive, at) a position; set
// false for the first page.
type cursor struct {
	at             position
	set, inclusive bool
}

// admits reports whether a file at p comes on or after the cursor.
func (c cursor) admits(o listOrder, p position) bool {
	if !c.set {
		return true
	}
	d := o.compare(p, c.at)
	return d > 0 || d == 0 && c.inclusive
}

// token makes the page token continuing this order after p.
func (o listOrder) token(p position) string {
	return encodePageToken("files", o.spec+"|"+strconv.FormatInt(p.times[createdTime], 10)+"|"+
		strconv.FormatInt(p.times[modifiedTime], 10)+"|"+strconv.FormatInt(p.seq, 10))
}

// cursorParam reads pageToken: the position a page of this order starts
// after. A token of another order is refused, as a token of another
// listing.
func (o listOrder) cursorParam(token string) (cursor, *apiError) {
	if token == "" {
		return cursor{}, nil
	}
	pos, ok := decodePageToken("files", token)
	parts := strings.Split(pos, "|")
	if !ok || len(parts) != 4 || parts[0] != o.spec {
		return cursor{}, invalidParam("pageToken")
	}
	var n [3]int64
	for i, p := range parts[1:] {
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return cursor{}, invalidParam("pageToken")
		}
		n[i] = v
	}
	return cursor{at: position{times: [2]int64{n[0], n[1]}, seq: n[2]}, set: true}, nil
}
