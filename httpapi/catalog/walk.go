package catalog

// childIter goes through a folder's children in order: an explicit list
// (from a delta), or a run of the base.
type childIter struct {
	list      []Ref
	i         int
	next, end uint32
}

// children returns an iterator of a folder's children.
func (l *Library) children(parent Ref) childIter {
	if d := l.delta; d != nil && (parent.d != nil || d.isDirty(parent.b)) {
		id := parent.d.idOr(l.base, parent.b)
		if list, ok := d.children[id]; ok {
			return childIter{list: list}
		}
	}
	if parent.b == none {
		return childIter{}
	}
	return childIter{next: parent.b + 1, end: parent.b + l.base.size[parent.b]}
}

// idOr returns f's ID, or base folder b's if f is nil.
func (f *folder) idOr(b *base, n uint32) string {
	if f != nil {
		return f.id
	}
	return unsafeString(b.ids.Bytes(n))
}

// next returns the iterator's next child.
func (l *Library) next(it *childIter) (Ref, bool) {
	if it.list != nil {
		if it.i == len(it.list) {
			return Ref{}, false
		}
		it.i++
		return it.list[it.i-1], true
	}
	if it.next >= it.end {
		return Ref{}, false
	}
	r := Ref{b: it.next}
	it.next += l.base.size[it.next]
	if d := l.delta; d != nil && d.isDirty(r.b) {
		r.d = d.folders[unsafeString(l.base.ids.Bytes(r.b))]
	}
	return r, true
}

// Children calls fn with each child of parent, in order, while fn returns
// true.
func (l *Library) Children(parent Ref, fn func(Ref) bool) {
	it := l.children(parent)
	for r, ok := l.next(&it); ok && fn(r); r, ok = l.next(&it) {
	}
}

// Walk visits the descendants of parent depth first, siblings in order.
// enter sees each folder reached, with its depth (0 for parent's children),
// and says whether to visit its children; leave, if not nil, sees each
// folder whose children were visited, after them.
func (l *Library) Walk(parent Ref, enter func(r Ref, depth int) bool, leave func(r Ref, depth int)) {
	type frame struct {
		it    childIter
		owner Ref
	}
	stack := []frame{{it: l.children(parent)}}
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		r, ok := l.next(&top.it)
		if !ok {
			done := stack[len(stack)-1].owner
			stack = stack[:len(stack)-1]
			if leave != nil && len(stack) > 0 {
				leave(done, len(stack)-1)
			}
			continue
		}
		if enter(r, len(stack)-1) {
			stack = append(stack, frame{it: l.children(r), owner: r})
		}
	}
}

// All calls fn with every folder of the library, the root first, parents
// before children, siblings in order, while fn returns true.
func (l *Library) All(fn func(Ref) bool) {
	if l.delta == nil { // the base is in that order
		for b := range uint32(l.base.len()) {
			if !fn(Ref{b: b}) {
				return
			}
		}
		return
	}
	root := l.Root()
	if !root.Valid() || !fn(root) {
		return
	}
	stopped := false
	l.Walk(root, func(r Ref, _ int) bool {
		stopped = stopped || !fn(r)
		return !stopped
	}, nil)
}
