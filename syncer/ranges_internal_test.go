package syncer

import (
	"testing"
	"time"

	drive "google.golang.org/api/drive/v3"
)

func ms(s string) int64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UnixMilli()
}

func TestCeilSecond(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"2020-01-01T00:00:00Z", "2020-01-01T00:00:00Z"},
		{"2020-01-01T00:00:00.001Z", "2020-01-01T00:00:01Z"},
		{"2020-01-01T23:59:59.999Z", "2020-01-02T00:00:00Z"},
	} {
		if got := ceilSecond(ms(tc.in)); got != ms(tc.want) {
			t.Errorf("ceilSecond(%s) = %s, want %s", tc.in, time.UnixMilli(got).UTC(), tc.want)
		}
	}
}

func TestRangeQuery(t *testing.T) {
	from, to := ms("2019-03-04T05:06:07Z"), ms("2020-01-01T00:00:00Z")
	for _, tc := range []struct {
		from, to int64
		want     string
	}{
		{noLowerBound, noUpperBound, foldersQuery},
		{from, noUpperBound, foldersQuery + " and createdTime >= '2019-03-04T05:06:07Z'"},
		{noLowerBound, to, foldersQuery + " and createdTime < '2020-01-01T00:00:00Z'"},
		{from, to, foldersQuery + " and createdTime >= '2019-03-04T05:06:07Z' and createdTime < '2020-01-01T00:00:00Z'"},
	} {
		if got := rangeQuery(tc.from, tc.to); got != tc.want {
			t.Errorf("rangeQuery:\n got %s\nwant %s", got, tc.want)
		}
	}
}

func TestCreatedTimes(t *testing.T) {
	files := func(times ...string) []*drive.File {
		var out []*drive.File
		for _, c := range times {
			out = append(out, &drive.File{CreatedTime: c})
		}
		return out
	}
	a, b := "2020-01-01T00:00:00.000Z", "2020-01-01T00:00:00.500Z"
	for _, tc := range []struct {
		name    string
		files   []*drive.File
		after   int64
		listed  bool
		inOrder bool
	}{
		{"ascending, ties", files(a, a, b), 0, false, true},
		{"descending", files(b, a), 0, false, false},
		{"a range's first page starts anywhere", files(a, b), ms(b), false, true},
		{"a next page starts at or after the last", files(b, b), ms(b), true, true},
		{"a next page before the last", files(a, b), ms(b), true, false},
		{"a time that does not parse", files(a, "yesterday", b), 0, false, false},
	} {
		if times, inOrder := createdTimes(tc.files, tc.after, tc.listed); inOrder != tc.inOrder {
			t.Errorf("%s: in order %v (times %v), want %v", tc.name, inOrder, times, tc.inOrder)
		}
	}
}

// Ranges cut from a sample follow one another from no lower bound to no
// upper one, at whole seconds, with about as many of the sample each.
func TestSampledRanges(t *testing.T) {
	base := ms("2020-01-01T00:00:00Z")
	var sample []int64
	for i := range 1000 {
		sample = append(sample, base+int64(i)*86_400_000+123) // a day apart, off the second
	}
	for _, tc := range []struct {
		name   string
		sample []int64
		n      int
		want   int
	}{
		{"a thousand days", sample, 8, 8},
		{"one time", []int64{base, base, base}, 8, 2},
		{"no sample", nil, 8, 1},
	} {
		ranges := sampledRanges(tc.sample, tc.n)
		if len(ranges) != tc.want {
			t.Errorf("%s: %d ranges, want %d", tc.name, len(ranges), tc.want)
			continue
		}
		if ranges[0].from != noLowerBound || ranges[len(ranges)-1].limit != noUpperBound {
			t.Errorf("%s: ranges from %d to %d, want unbounded", tc.name, ranges[0].from, ranges[len(ranges)-1].limit)
		}
		for i, rg := range ranges {
			if i > 0 && rg.from != ranges[i-1].limit {
				t.Errorf("%s: range %d starts at %d, the one before ends at %d", tc.name, i, rg.from, ranges[i-1].limit)
			}
			if i > 0 && rg.from%1000 != 0 {
				t.Errorf("%s: range %d: %+v", tc.name, i, rg)
			}
			in := 0
			for _, s := range tc.sample {
				if s >= rg.from && s < rg.limit {
					in++
				}
			}
			if len(tc.sample) == 1000 && in != 125 {
				t.Errorf("%s: range %d holds %d of the sample, want 125", tc.name, i, in)
			}
		}
	}
}

// What is left of a range starts at its start, or past it: never at a
// folder listed below it, which a server that ignored the range's bounds
// would have given.
func TestUnreadStartsInTheRange(t *testing.T) {
	from, limit := ms("2020-01-01T00:00:00Z"), ms("2021-01-01T00:00:00Z")
	for _, tc := range []struct {
		name   string
		rg     timeRange
		wantLo int64
	}{
		{"nothing listed", timeRange{from: from, limit: limit}, from},
		{"listed inside", timeRange{from: from, limit: limit, listed: 10, cursor: from + 5000}, from + 5000},
		{"listed below its start", timeRange{from: from, limit: limit, listed: 10, cursor: ms("2016-01-01T00:00:00Z")}, from},
	} {
		lo, hi, ok := tc.rg.unread(limit)
		if !ok || lo != tc.wantLo || hi != limit {
			t.Errorf("%s: unread %s to %s (%v), want %s to %s", tc.name, time.UnixMilli(lo).UTC(), time.UnixMilli(hi).UTC(), ok,
				time.UnixMilli(tc.wantLo).UTC(), time.UnixMilli(limit).UTC())
		}
	}
}
