package googlefake

import (
	"iter"
	"net/http"
	"sort"
	"strconv"
	"time"

	"google.golang.org/api/drive/v3"
)

// changeLog is the global log of changes. Page tokens are entry sequence
// numbers: token T stands for "the changes from entry T on".
type changeLog struct {
	entries  []changeEntry
	next     int64            // sequence number of the next entry
	minValid int64            // the oldest page token still accepted
	history  map[string][]int // file or drive ID → indexes of its entries
	// byDrive and userFeed index the entries of the feeds that cover part
	// of the log, so that reading one costs its own entries, not the
	// log's: a shared drive's (its items' and its own, by drive ID), and a
	// user's without shared drive items (My Drive items and drives' own).
	byDrive  map[string][]int
	userFeed []int
}

// changeEntry says that a file (or, when drive is set, a shared drive) may
// have changed as listed, and remembers its state before the change.
type changeEntry struct {
	seq     int64
	id      string
	driveID string // the drive the entry belongs to, "" for My Drive
	drive   bool
	time    time.Time
	before  *computed // nil: did not exist
}

func newChangeLog() changeLog {
	return changeLog{next: 1, minValid: 1, history: map[string][]int{}, byDrive: map[string][]int{}}
}

func (l *changeLog) add(e changeEntry) {
	e.seq, e.time = l.next, time.Now()
	l.next++
	at := len(l.entries)
	l.history[e.id] = append(l.history[e.id], at)
	if e.driveID != "" {
		l.byDrive[e.driveID] = append(l.byDrive[e.driveID], at)
	}
	if (feedScope{}).holds(&e) {
		l.userFeed = append(l.userFeed, at)
	}
	l.entries = append(l.entries, e)
}

// feedScope is which entries of the log a changes feed covers.
type feedScope struct {
	// driveID: a shared drive's log, its items' entries and its own.
	driveID string
	// allItems: a user's log with the items of every shared drive;
	// without it, My Drive items only. A user's log also has the drives'
	// own entries (change tells the drives it is a member of apart).
	allItems bool
}

// holds reports whether the feed covers entry e.
func (f feedScope) holds(e *changeEntry) bool {
	switch {
	case f.driveID != "":
		return e.driveID == f.driveID
	case e.drive, f.allItems:
		return true
	}
	return e.driveID == ""
}

// feed yields the positions of the entries of a feed from sequence number
// from on, in log order: from the feed's index when it has one.
func (l *changeLog) feed(f feedScope, from int64) iter.Seq[int] {
	return func(yield func(int) bool) {
		if f.driveID == "" && f.allItems {
			for i := sort.Search(len(l.entries), func(i int) bool { return l.entries[i].seq >= from }); i < len(l.entries); i++ {
				if !yield(i) {
					return
				}
			}
			return
		}
		index := l.userFeed
		if f.driveID != "" {
			index = l.byDrive[f.driveID]
		}
		start := sort.Search(len(index), func(k int) bool { return l.entries[index[k]].seq >= from })
		for _, i := range index[start:] {
			if !yield(i) {
				return
			}
		}
	}
}

// parse returns the position a page token stands for, if still valid.
func (l *changeLog) parse(token string) (int64, bool) {
	t, err := strconv.ParseInt(token, 10, 64)
	return t, err == nil && t >= l.minValid && t <= l.next
}

// ExpireChangeTokens makes every change page token issued so far invalid, as
// when Drive no longer accepts a stored token: changes.list then answers
// 400 reason "invalid", location "pageToken", and the client must start
// over with a fresh getStartPageToken.
func (s *Server) ExpireChangeTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log.next++
	s.log.minValid = s.log.next
	s.log.entries = nil
	clear(s.log.history)
	clear(s.log.byDrive)
	s.log.userFeed = nil
	s.kickChannels() // the log moved: channels look again (and find nothing)
}

// startPageToken is changes.getStartPageToken.
func (s *Server) startPageToken(c *call) (any, *apiError) {
	if id := c.q.Get("driveId"); id != "" {
		if _, aerr := s.memberDrive(c.v, id); aerr != nil {
			return nil, aerr
		}
	}
	return &drive.StartPageToken{Kind: "drive#startPageToken", StartPageToken: strconv.FormatInt(s.log.next, 10)}, nil
}

// changesRequest is a changes.list request, parsed.
type changesRequest struct {
	v              *viewer
	from           int64
	scope          feedScope
	includeRemoved bool
	fileMask       mask
	driveMask      mask
}

// changesList is changes.list. It reports, per file, its latest entry in
// scope from the token on, in log order: with the file when the viewer can
// list it now (trashed or not), as removed when the viewer could list it
// before one of those entries but cannot now (or it is gone), else not at
// all. Without driveId it is the user's change log: My Drive items (and,
// with includeItemsFromAllDrives and not restrictToMyDrive, shared drive
// items), and the "drive" changes of the shared drives the user is (or was,
// before the change: then as removed) a member of, as Drive documents: the
// user added to or removed from a drive, the drive renamed, its members
// changed. With driveId, that drive's items and "drive" changes.
func (s *Server) changesList(c *call) (any, *apiError) {
	req, aerr := s.parseChanges(c)
	if aerr != nil {
		return nil, aerr
	}
	size, aerr := intParam(c.q, "pageSize", 100)
	if aerr != nil {
		return nil, aerr
	}
	inDrive, aerr := driveSpace(c.q)
	if aerr != nil {
		return nil, aerr
	}
	out := &drive.ChangeList{Kind: "drive#changeList", Changes: []*drive.Change{}, ForceSendFields: []string{"Changes"}}
	if !inDrive {
		out.NewStartPageToken = strconv.FormatInt(s.log.next, 10)
		return out, nil
	}
	for i := range s.log.feed(req.scope, req.from) {
		e := &s.log.entries[i]
		if s.log.laterInScope(i, req.scope) {
			continue
		}
		ch := s.change(req, e)
		if ch == nil {
			continue
		}
		if len(out.Changes) == size {
			out.NextPageToken = strconv.FormatInt(e.seq, 10)
			return out, nil
		}
		out.Changes = append(out.Changes, ch)
	}
	out.NewStartPageToken = strconv.FormatInt(s.log.next, 10)
	return out, nil
}

// parseChanges reads the parameters of changes.list.
func (s *Server) parseChanges(c *call) (*changesRequest, *apiError) {
	token := c.q.Get("pageToken")
	if token == "" {
		return nil, newAPIError(http.StatusBadRequest, "required", "Required parameter: pageToken", "pageToken")
	}
	from, ok := s.log.parse(token)
	if !ok {
		return nil, invalidParam("pageToken")
	}
	driveID := c.q.Get("driveId")
	includeAll, aerr := allDrivesParam(c.q, driveID != "")
	if aerr != nil {
		return nil, aerr
	}
	myDriveOnly, aerr := boolParam(c.q, "restrictToMyDrive")
	if aerr != nil {
		return nil, aerr
	}
	includeRemoved := true
	if c.q.Get("includeRemoved") != "" {
		if includeRemoved, aerr = boolParam(c.q, "includeRemoved"); aerr != nil {
			return nil, aerr
		}
	}
	if driveID != "" {
		if _, aerr := s.memberDrive(c.v, driveID); aerr != nil {
			return nil, aerr
		}
	}
	changeMask, _ := c.fields.child("changes")
	fileMask, _ := changeMask.child("file")
	driveMask, _ := changeMask.child("drive")
	return &changesRequest{
		v: c.v, from: from, includeRemoved: includeRemoved, fileMask: fileMask, driveMask: driveMask,
		scope: feedScope{driveID: driveID, allItems: driveID == "" && includeAll && !myDriveOnly},
	}, nil
}

// laterInScope reports whether the item of entry i has a later entry in scope.
func (l *changeLog) laterInScope(i int, scope feedScope) bool {
	h := l.history[l.entries[i].id]
	for j := len(h) - 1; j >= 0 && h[j] > i; j-- {
		if scope.holds(&l.entries[h[j]]) {
			return true
		}
	}
	return false
}

// change returns what the viewer is told about entry e's item, or nil.
func (s *Server) change(req *changesRequest, e *changeEntry) *drive.Change {
	ch := &drive.Change{Kind: "drive#change", ChangeType: "file", Time: e.time.UTC().Format(timeFormat),
		DriveId: e.driveID, ForceSendFields: []string{"Removed"}}
	visible := req.v.canList
	if e.drive {
		ch.ChangeType, visible = "drive", req.v.canAccess
		if d, aerr := s.memberDrive(req.v, e.id); aerr == nil {
			ch.Drive = d.json(req.v, req.driveMask)
			return ch
		}
	} else {
		ch.FileId = e.id
		if f := s.files[e.id]; f != nil && req.scope.holds(&changeEntry{driveID: f.DriveID}) && req.v.canList(s.state(f)) {
			ch.DriveId = f.DriveID
			ch.File = s.fileJSON(req.v, f, s.state(f), req.fileMask)
			return ch
		}
	}
	if req.includeRemoved && s.log.everVisible(e.id, req, visible) {
		ch.Removed = true
		return ch
	}
	return nil
}

// everVisible reports whether the viewer could see an item before any of
// its in-scope entries from the request's token on.
func (l *changeLog) everVisible(id string, req *changesRequest, visible func(*computed) bool) bool {
	h := l.history[id]
	for j := len(h) - 1; j >= 0 && l.entries[h[j]].seq >= req.from; j-- {
		e := &l.entries[h[j]]
		if req.scope.holds(e) && e.before != nil && visible(e.before) {
			return true
		}
	}
	return false
}
