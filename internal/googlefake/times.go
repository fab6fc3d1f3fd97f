package googlefake

import (
	"cmp"
	"iter"
	"math"
	"slices"
	"sort"
	"time"
)

// timeField names a file's time: its createdTime or its modifiedTime.
// Queries compare them, orders sort by them and an index keeps each.
type timeField int

const (
	createdTime timeField = iota
	modifiedTime
)

// formatMillis writes a time in milliseconds since the epoch as Drive
// does: RFC 3339 in UTC, with milliseconds.
func formatMillis(ms int64) string { return time.UnixMilli(ms).UTC().Format(timeFormat) }

// now returns the fake's time, in milliseconds since the epoch: Drive's
// times have milliseconds.
func (s *Server) now() int64 {
	if s.clock != nil {
		return s.clock().UnixMilli()
	}
	return time.Now().UnixMilli()
}

// SetClock makes the fake read the time from now when it stamps files: the
// createdTime and modifiedTime of the files created, and the modifiedTime of
// the files modified, from then on. SetClock(nil) restores the wall clock.
// Change log entries, channels and tokens keep the wall clock.
func (s *Server) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clock = now
}

// SetFileTimes sets a file's createdTime and modifiedTime, truncated to
// milliseconds (Drive's resolution); a zero time leaves that one as it
// is. It records no
// change: it makes the world as if the file had been created, or last
// modified, then. It panics on an unknown ID.
func (s *Server) SetFileTimes(fileID string, created, modified time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.mustFile(fileID)
	if !created.IsZero() {
		s.setTime(f, createdTime, created.UnixMilli())
	}
	if !modified.IsZero() {
		s.setTime(f, modifiedTime, modified.UnixMilli())
	}
	if d := s.drives[f.ID]; d != nil {
		d.res.CreatedTime = formatMillis(f.times[createdTime])
	}
}

// SpreadTimes spreads the createdTime of every file, roots included, over
// [from, to), in creation order: each file gets an equal share of the span
// and a time drawn within it, so that files made later were created later
// and no two files share a time unless the span is shorter than a
// millisecond a file. Half the files, drawn, keep their createdTime as
// modifiedTime (never modified since); the others get a modifiedTime drawn
// between their createdTime and to. Draws come from the fake's random
// source (see Seed). It records no change, and panics unless to is after
// from.
func (s *Server) SpreadTimes(from, to time.Time) {
	if !to.After(from) {
		panic("googlefake: SpreadTimes needs to after from")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	lo, hi := from.UnixMilli(), to.UnixMilli()
	files := slices.SortedFunc(slices.Values(s.byCreated.files), func(a, b *File) int { return cmp.Compare(a.seq, b.seq) })
	slot := float64(hi-lo) / float64(max(len(files), 1))
	for i, f := range files {
		start := lo + int64(float64(i)*slot)
		end := max(lo+int64(float64(i+1)*slot), start+1)
		created := start + s.rng.Int64N(end-start)
		modified := created
		if s.rng.IntN(2) == 1 && hi > created {
			modified += s.rng.Int64N(hi - created)
		}
		f.times = [2]int64{created, modified}
		if d := s.drives[f.ID]; d != nil {
			d.res.CreatedTime = formatMillis(created)
		}
	}
	s.byCreated.sort()
	s.byModified.sort()
}

// Touch records an edit of a file's content: its modifiedTime becomes the
// fake's time (see SetClock) and a change is logged, as Drive does when a
// file's content changes. It panics on an unknown ID.
func (s *Server) Touch(fileID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mutate(fileID, itemOnly, s.modified)
}

// modified records that f was modified now: its modifiedTime moves.
// Drive's modifiedTime is "the last time the file was modified by anyone";
// the fake counts a rename, a change of parents and an edit of the content
// (Touch), not a change of permissions, of the trashed state or of the
// children of a folder.
func (s *Server) modified(f *File) {
	s.setTime(f, modifiedTime, s.now())
}

// setTime sets one of a file's times, keeping its index in order.
func (s *Server) setTime(f *File, field timeField, ms int64) {
	x := s.index(field)
	x.remove(f)
	f.times[field] = ms
	x.add(f)
}

// index returns the index of a time.
func (s *Server) index(field timeField) *timeIndex {
	if field == createdTime {
		return &s.byCreated
	}
	return &s.byModified
}

// built returns the index of a time, made first if it was not.
func (s *Server) built(field timeField) *timeIndex {
	x := s.index(field)
	if !x.built {
		x.files = slices.Clone(s.byCreated.files)
		x.built = true
		x.sort()
		for _, f := range x.files {
			if f.DriveID != "" {
				x.drive(f.DriveID).files = append(x.drive(f.DriveID).files, f)
			}
		}
	}
	return x
}

// rehomed sets the drive of f, keeping the indexes' drives in step.
func (s *Server) rehomed(f *File, driveID string) {
	s.byCreated.remove(f)
	s.byModified.remove(f)
	f.DriveID = driveID
	s.byCreated.add(f)
	s.byModified.add(f)
}

// timeIndex holds the live files in the order of one of their times, ties
// in creation order, so that a listing in that order or within a range of
// that time starts with a binary search and reads no file outside its page
// and range. The createdTime index is kept from the start (it is the order
// of files.list); the modifiedTime index is made when first used (built),
// and kept from then on. Changes keep it in order with a binary search and
// a copy: appending, as files made in time order are, costs nothing.
//
// Each shared drive's files have an index of their own too (drives), so
// that a listing of one drive (corpora drive) reads none of the other
// drives' files: with thousands of drives, reading past the others' is
// what a listing would cost otherwise.
type timeIndex struct {
	field timeField
	files []*File
	built bool
	// drives are the indexes of each shared drive's files (nil in those).
	drives map[string]*timeIndex
}

// drive returns the index of a shared drive's files, made if need be.
func (x *timeIndex) drive(id string) *timeIndex {
	if x.drives == nil {
		x.drives = map[string]*timeIndex{}
	}
	d := x.drives[id]
	if d == nil {
		d = &timeIndex{field: x.field, built: true}
		x.drives[id] = d
	}
	return d
}

// of returns the index of the files of a shared drive (an empty one if it
// has none), or of every file if driveID is empty.
func (x *timeIndex) of(driveID string) *timeIndex {
	if driveID == "" {
		return x
	}
	if d := x.drives[driveID]; d != nil {
		return d
	}
	return &timeIndex{field: x.field, built: true}
}

// search returns the first place whose file is at or after time t and
// sequence seq.
func (x *timeIndex) search(t, seq int64) int {
	return sort.Search(len(x.files), func(i int) bool {
		f := x.files[i]
		v := f.times[x.field]
		return v > t || v == t && f.seq >= seq
	})
}

// add places a new file.
func (x *timeIndex) add(f *File) {
	if !x.built {
		return
	}
	x.place(f)
	if f.DriveID != "" {
		x.drive(f.DriveID).place(f)
	}
}

// place places a new file in x.files.
func (x *timeIndex) place(f *File) {
	if n := len(x.files); n == 0 || x.compare(x.files[n-1], f) < 0 {
		x.files = append(x.files, f)
		return
	}
	x.files = slices.Insert(x.files, x.search(f.times[x.field], f.seq), f)
}

// remove takes a file out, before its time changes.
func (x *timeIndex) remove(f *File) {
	if !x.built {
		return
	}
	x.take(f)
	if d := x.drives[f.DriveID]; d != nil {
		if d.take(f); len(d.files) == 0 {
			delete(x.drives, f.DriveID)
		}
	}
}

// take takes a file out of x.files.
func (x *timeIndex) take(f *File) {
	if i := x.search(f.times[x.field], f.seq); i < len(x.files) && x.files[i] == f {
		x.files = slices.Delete(x.files, i, i+1)
	}
}

// keep drops the files for which live is false.
func (x *timeIndex) keep(live func(*File) bool) {
	x.files = slices.DeleteFunc(x.files, func(f *File) bool { return !live(f) })
	for id, d := range x.drives {
		if d.keep(live); len(d.files) == 0 {
			delete(x.drives, id)
		}
	}
}

func (x *timeIndex) compare(a, b *File) int {
	return cmp.Or(cmp.Compare(a.times[x.field], b.times[x.field]), cmp.Compare(a.seq, b.seq))
}

func (x *timeIndex) sort() {
	if x.built {
		slices.SortFunc(x.files, x.compare)
		for _, d := range x.drives {
			d.sort()
		}
	}
}

// value returns the indexed time of the file at i.
func (x *timeIndex) value(i int) int64 { return x.files[i].times[x.field] }

// ascending yields the files of span sp from a cursor, in the order of the
// indexed time ascending, ties in creation order.
func (x *timeIndex) ascending(sp span, from cursor) iter.Seq[*File] {
	start := x.search(sp.lo, math.MinInt64)
	if from.set {
		seq := from.at.seq
		if !from.inclusive {
			seq++
		}
		start = max(start, x.search(from.at.times[x.field], seq))
	}
	return func(yield func(*File) bool) {
		for i := start; i < len(x.files) && x.value(i) <= sp.hi; i++ {
			if !yield(x.files[i]) {
				return
			}
		}
	}
}

// descending yields the files of span sp from a cursor, in the order of
// the indexed time descending, ties in reverse creation order.
func (x *timeIndex) descending(sp span, from cursor) iter.Seq[*File] {
	end := x.search(sp.hi, math.MaxInt64)
	if from.set {
		seq := from.at.seq
		if from.inclusive {
			seq++
		}
		end = min(end, x.search(from.at.times[x.field], seq))
	}
	return func(yield func(*File) bool) {
		for i := end - 1; i >= 0 && x.value(i) >= sp.lo; i-- {
			if !yield(x.files[i]) {
				return
			}
		}
	}
}

// grouped yields the files of span sp from a cursor in an order of several
// keys, the first of which is the indexed time: group by group of files
// with the same time, each group sorted by the other keys.
func (x *timeIndex) grouped(sp span, o listOrder, from cursor) iter.Seq[*File] {
	desc := o.keys[0].desc
	return func(yield func(*File) bool) {
		var group []*File
		// emit yields the files of x.files[a:b] the cursor admits, in order.
		emit := func(a, b int) bool {
			group = append(group[:0], x.files[a:b]...)
			slices.SortFunc(group, func(f, g *File) int { return o.compare(positionOf(f), positionOf(g)) })
			for _, f := range group {
				if from.admits(o, positionOf(f)) && !yield(f) {
					return false
				}
			}
			return true
		}
		if desc {
			end := x.search(sp.hi, math.MaxInt64)
			if from.set {
				end = min(end, x.search(from.at.times[x.field], math.MaxInt64))
			}
			for i := end - 1; i >= 0 && x.value(i) >= sp.lo; {
				j := i - 1
				for j >= 0 && x.value(j) == x.value(i) {
					j--
				}
				if !emit(j+1, i+1) {
					return
				}
				i = j
			}
			return
		}
		i := x.search(sp.lo, math.MinInt64)
		if from.set {
			i = max(i, x.search(from.at.times[x.field], math.MinInt64))
		}
		for i < len(x.files) && x.value(i) <= sp.hi {
			j := i + 1
			for j < len(x.files) && x.value(j) == x.value(i) {
				j++
			}
			if !emit(i, j) {
				return
			}
			i = j
		}
	}
}
