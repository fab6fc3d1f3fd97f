package catalog

// Diff calls added with the ID of each folder next holds and prev does not,
// and removed with that of each folder prev holds and next does not, each
// once; a nil Library holds no folder. Two Libraries of one base (one made
// from the other by changes) are compared by their deltas alone, in the
// time of those; others, folder by folder.
func Diff(prev, next *Library, added, removed func(id string)) {
	switch {
	case prev == nil && next == nil:
	case prev == nil:
		next.eachID(added)
	case next == nil:
		prev.eachID(removed)
	case prev.base == next.base:
		diffDeltas(prev, next, added, removed)
	default:
		next.eachID(func(id string) {
			if !prev.holds(id) {
				added(id)
			}
		})
		prev.eachID(func(id string) {
			if !next.holds(id) {
				removed(id)
			}
		})
	}
}

// diffDeltas is Diff of two Libraries of one base: only the folders one of
// their deltas knows of may differ.
func diffDeltas(prev, next *Library, added, removed func(id string)) {
	compare := func(id string) {
		switch had, has := prev.holds(id), next.holds(id); {
		case has && !had:
			added(id)
		case had && !has:
			removed(id)
		}
	}
	// A delta's folders and removed IDs never share an ID: each ID is
	// compared once.
	next.delta.eachKnown(compare)
	prev.delta.eachKnown(func(id string) {
		if !next.delta.knows(id) {
			compare(id)
		}
	})
}

// holds tells whether the library has a folder of that ID.
func (l *Library) holds(id string) bool {
	_, ok := l.Lookup(id)
	return ok
}

// eachID calls fn with the ID of each folder of the library.
func (l *Library) eachID(fn func(id string)) {
	d := l.delta
	for n := range uint32(l.base.len()) {
		id := unsafeString(l.base.ids.Bytes(n))
		if d == nil || !d.isDirty(n) || !d.removed[id] {
			fn(id)
		}
	}
	if d == nil {
		return
	}
	for id := range d.folders {
		if _, inBase := l.base.ids.Lookup(id); !inBase {
			fn(id)
		}
	}
}

// eachKnown calls fn with each ID the delta knows of: written or removed.
func (d *delta) eachKnown(fn func(id string)) {
	if d == nil {
		return
	}
	for id := range d.folders {
		fn(id)
	}
	for id := range d.removed {
		fn(id)
	}
}

// knows tells whether the delta wrote or removed the folder of that ID.
func (d *delta) knows(id string) bool {
	if d == nil {
		return false
	}
	_, written := d.folders[id]
	return written || d.removed[id]
}
