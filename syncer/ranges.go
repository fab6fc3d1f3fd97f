package syncer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/foldermirror/foldermirror/googleclient"
	"golang.org/x/sync/errgroup"
	drive "google.golang.org/api/drive/v3"
)

// Listing in createdTime ranges.
//
// One files.list listing reads a page after another: its wall time cannot
// go below its pages times Drive's latency. A folder's createdTime never
// changes, so ranges of it cut a library's folders into parts no folder
// leaves while they are read: listed side by side, they give every folder
// once, whatever happens meanwhile, and the changes token, taken before the
// listing, brings what changed.
//
// The listing starts as one range, read in createdTime order. Once its
// first page shows there is more, one call asks for the newest folder's
// createdTime, and each idle lister (storage.concurrency of them) takes the
// later half of what is left of the range with the most folders still to
// list: an estimate, from how densely each range's folders came so far. The
// cut is a whole second, past the last folder its range listed; that
// range's lister stops at the first folder at or past it. A range costs
// about two calls more than its share of pages: its last page is partial,
// and a cut range's lister read a page ahead it does not use. A library
// whose folders share one second is one range, listed as before.
//
// Drive documents that it may ignore orderBy for users with about a million
// files. Every page is checked: a folder older than the one listed before it
// in its range means the order is not kept. When the library's first page
// shows it, its times are taken for a sample of the library's: the library
// is listed in rangesPerLister × storage.concurrency ranges holding as many
// of the sample each, bounded by the query alone, each read whole (the
// first page is read again in them). When a later page shows it, no range
// is cut any more, and each lister reads its range to the end of its query,
// past its cut (the folders listed twice are kept once), but for the
// ranges whose query lies inside that of another still listed (which
// dropped none of its folders yet): they stop. Either way the listing is
// exact, and at worst as slow as one listing.
//
// Servers that claim to be Drive may not honour what a query asks (the npm
// package google-drive-mock ignores createdTime comparisons but keeps
// orderBy): every folder listed is checked against its range's query, from
// its start to its end when its listing began. A folder outside them means
// the server ignored them, and would give every range the whole library,
// from its oldest folder: the ranges fall back to one sequential listing.
// No range is cut any more; the range with no bound, if still listed, reads
// to its end (its folders so far all kept, as it never reached its cut);
// else it is listed anew; every other range stops at its next page. The
// sync's result and the log say so. What is left of a range starts at its
// start or past it, never at a folder listed below it.
//
// A listing that gets nowhere stops with an error: past idleFactor times
// the pages of a sequential listing of the folders listed so far, plus two
// a range and one a lister, of pages that gave no folder not listed before
// (a server whose nextPageToken leads back). maxRanges bounds the ranges a
// listing takes.

// splitFolders is the fewest folders a range must have left to list
// (estimated) to be cut: each half keeps a few pages. Tests lower it.
var splitFolders = 8 * listPageSize

// pagesInUse is how many pages the ranges' listers decode and stage at
// once, whatever their number: a decoded page takes several MB, and two
// keep two cores busy. Each lister has its next page read ahead meanwhile.
const pagesInUse = 2

// rangeListFields are listFields with the createdTime the ranges need.
const rangeListFields = "nextPageToken,files(" + fileFields + ",createdTime)"

// Bounds of a range without a bound on that side.
const (
	noLowerBound = math.MinInt64
	noUpperBound = math.MaxInt64
)

// errRangeDone stops a range's listing at its cut.
var errRangeDone = errors.New("range listed up to its cut")

// timeRange is a range of createdTime, in milliseconds, being listed.
type timeRange struct {
	from       int64 // the first createdTime of the range: its query's lower bound
	limit      int64 // its end (excluded), lowered when it is cut: later folders are another range's
	queryLimit int64 // its end when its listing started: its query's upper bound
	first      int64 // the createdTime of the first folder listed
	cursor     int64 // the createdTime of the last folder listed
	listed     int
	density    float64 // folders a millisecond: the range's own, or the one it was cut from
	done       bool    // its listing gave its last page, or stopped
	stop       bool    // another listing gives its folders: it stops at its next page
}

// rangeLister lists a library's folders in createdTime ranges.
type rangeLister struct {
	r     *reader
	page  func([]*drive.File) error
	gate  *googleclient.PageGate
	group *errgroup.Group
	ctx   context.Context

	mu      sync.Mutex
	wake    *sync.Cond
	active  []*timeRange
	waiting []*timeRange // to be listed, not yet taken
	newest  int64        // the newest folder's createdTime, noLowerBound until probed
	probed  bool         // the probe is asked for
	ordered bool         // every page so far came in createdTime order
	ranges  int          // ranges taken
	// fallback says why the ranges gave way to one sequential listing,
	// "" while they did not; strayQuery and strayTime, which query's
	// page held a folder created when, for the log.
	fallback   string
	strayQuery string
	strayTime  int64
}

// boundsIgnored is why the ranges fall back to one sequential listing.
const boundsIgnored = "the server ignored the createdTime bounds of a query"

// listRanges lists the library's folders, handing each page's folders to
// page, and notes how many ranges it listed and, if they fell back to one
// sequential listing, why. page must be safe for concurrent calls: the
// ranges' listers call it at once, from several goroutines. An error it
// returns stops the listing.
func (r *reader) listRanges(ctx context.Context, page func([]*drive.File) error) error {
	l := &rangeLister{r: r, page: page, gate: googleclient.NewPageGate(pagesInUse), newest: noLowerBound, ordered: true}
	l.wake = sync.NewCond(&l.mu)
	l.group, l.ctx = errgroup.WithContext(ctx)
	l.waiting = []*timeRange{{from: noLowerBound, limit: noUpperBound}}
	stop := context.AfterFunc(l.ctx, l.wakeAll)
	defer stop()
	for range max(1, r.concurrency) {
		l.group.Go(l.work)
	}
	err := l.group.Wait()
	if !l.ordered {
		r.logger.Warn("Drive did not list folders in createdTime order; each range was listed whole", "library", r.lib.ID, "ranges", l.ranges)
	}
	if l.fallback != "" {
		r.logger.Warn("createdTime ranges fell back to one sequential listing", "library", r.lib.ID, "reason", l.fallback,
			"query", l.strayQuery, "folderCreated", strayTime(l.strayTime), "ranges", l.ranges)
	}
	r.ranges, r.fallback = l.ranges, l.fallback
	return err
}

// strayTime writes the createdTime of a folder found outside its range.
func strayTime(ms int64) string {
	if ms == noLowerBound {
		return "not a time"
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
}

func (l *rangeLister) wakeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.wake.Broadcast()
}

// work lists ranges until none is left to list or cut.
func (l *rangeLister) work() error {
	for {
		rg := l.next()
		if rg == nil {
			return nil
		}
		err := l.list(rg)
		l.finish(rg)
		if err != nil {
			return err
		}
	}
}

// next waits for a range to list: a waiting one, or one cut from a range
// being listed. It returns nil when there is none left, or the listing
// failed.
func (l *rangeLister) next() *timeRange {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.ctx.Err() == nil {
		var rg *timeRange
		if n := len(l.waiting); n > 0 {
			rg, l.waiting = l.waiting[n-1], l.waiting[:n-1]
		} else {
			rg = l.cut()
		}
		if rg != nil {
			rg.queryLimit = rg.limit
			l.active = append(l.active, rg)
			l.ranges++
			l.r.listing.ranges.Store(int64(l.ranges))
			return rg
		}
		if len(l.active) == 0 {
			return nil
		}
		l.wake.Wait()
	}
	return nil
}

// finish takes a range off the ones being listed.
func (l *rangeLister) finish(rg *timeRange) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.active = slices.DeleteFunc(l.active, func(a *timeRange) bool { return a == rg })
	l.wake.Broadcast()
}

// cut cuts the range with the most folders left to list in two, if it has
// enough, and returns the later part; nil if none can be cut, or the
// ranges are as many as maxRanges allows.
func (l *rangeLister) cut() *timeRange {
	if !l.ordered || l.fallback != "" || l.newest == noLowerBound || int64(l.ranges) >= l.maxRanges() {
		return nil
	}
	var best *timeRange
	var bestLeft float64
	var lo, hi int64
	for _, rg := range l.active {
		from, to, ok := rg.unread(l.newest)
		if left := rg.density * float64(to-from); ok && left > bestLeft {
			best, bestLeft, lo, hi = rg, left, from, to
		}
	}
	if best == nil || bestLeft < float64(splitFolders) {
		return nil
	}
	at := ceilSecond(lo + (hi-lo)/2)
	if at <= lo || at >= best.limit {
		return nil
	}
	later := &timeRange{from: at, limit: best.limit, density: best.density}
	best.limit = at
	return later
}

// maxRanges is the most ranges a listing may take: the ranges of a sample,
// and two more for each page of the folders listed so far. Ranges the
// estimates would cut past it hold little.
func (l *rangeLister) maxRanges() int64 {
	return int64(rangesPerLister*l.r.concurrency) + 2*(l.r.listing.folders.Load()/int64(listPageSize)+1)
}

// unread returns the part of the range left to list, as far as the newest
// folder: from its last folder listed (or its start) to its cut (or the
// newest folder), never below its start. ok is false while that is
// unknown: the first range has no start until its first page comes.
func (rg *timeRange) unread(newest int64) (from, to int64, ok bool) {
	from = rg.from
	if rg.listed > 0 {
		from = max(rg.from, rg.cursor)
	}
	to = rg.limit
	if to == noUpperBound {
		to = max(newest+1, from)
	}
	return from, to, from != noLowerBound
}

// ceilSecond returns the first whole second at or after ms.
func ceilSecond(ms int64) int64 {
	s := time.UnixMilli(ms).Truncate(time.Second).UnixMilli()
	if s < ms {
		s += 1000
	}
	return s
}

// list lists one range, in createdTime order, up to its cut.
func (l *rangeLister) list(rg *timeRange) error {
	q := rangeQuery(rg.from, rg.queryLimit) // a later cut stops it early
	call := l.r.listCall(q).OrderBy("createdTime").Fields(rangeListFields)
	ctx, done := l.gate.Hold(l.ctx)
	defer done()
	err := l.r.pages(ctx, call, true, func(list *drive.FileList) error {
		keep, more, probe := l.take(rg, list)
		if probe {
			l.group.Go(l.probeNewest)
		}
		err := l.page(folders(keep))
		done()
		if err != nil {
			return err
		}
		if !more {
			return errRangeDone
		}
		return nil
	})
	if errors.Is(err, errRangeDone) {
		err = nil
	}
	l.r.logger.Debug("createdTime range listed", "library", l.r.lib.ID, "query", q, "folders", rg.listed, "err", err)
	return err
}

// take notes a page of a range and returns the files in it up to the
// range's cut, whether the listing goes on, and whether to probe for the
// newest folder now.
func (l *rangeLister) take(rg *timeRange, list *drive.FileList) (keep []*drive.File, more, probe bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	defer l.wake.Broadcast()
	keep, more = l.admit(rg, list)
	rg.done = !more
	probe = l.ordered && l.fallback == "" && more && !l.probed
	l.probed = l.probed || probe
	return keep, more, probe
}

// admit checks a page of a range and returns the files in it up to the
// range's cut, and whether the listing goes on. A page of a range stopped
// is checked too: the server ignoring the bounds is worth saying.
func (l *rangeLister) admit(rg *timeRange, list *drive.FileList) (keep []*drive.File, more bool) {
	times, inOrder := createdTimes(list.Files, rg.cursor, rg.listed > 0)
	if stray, ok := rg.stray(len(list.Files), times); ok {
		l.fallBack(rg, stray)
		return nil, false
	}
	if rg.stop {
		return nil, false
	}
	more = list.NextPageToken != ""
	if !inOrder && l.ordered && l.unordered(rg, times, more) {
		return nil, false
	}
	keep = list.Files
	if l.ordered {
		if cut, past := slices.BinarySearch(times, rg.limit); past || cut < len(times) {
			keep, more = list.Files[:cut], false
		}
	}
	rg.note(times, len(list.Files))
	return keep, more
}

// unordered handles the first page of the listing that comes out of
// createdTime order: a page of rg, whose createdTimes are times, with
// another page to come if more. The listing stops counting on the order.
// If this is the library's first page, its times are taken as a sample of
// the library's: the ranges are cut from them at once, each to be listed
// whole, and rg stops (this page's folders come again in those ranges).
// Otherwise each range whose query lies inside that of another still
// listed stops (stopNested). It reports whether rg stops at this page.
func (l *rangeLister) unordered(rg *timeRange, times []int64, more bool) bool {
	l.ordered = false
	if l.fallback == "" && rg.from == noLowerBound && rg.limit == noUpperBound && rg.listed == 0 && more {
		l.waiting = sampledRanges(times, rangesPerLister*l.r.concurrency)
		return true
	}
	l.stopNested()
	return rg.stop
}

// note notes the createdTimes of a page of n files of the range.
func (rg *timeRange) note(times []int64, n int) {
	if len(times) > 0 {
		if rg.listed == 0 {
			rg.first, rg.cursor = times[0], times[0]
		}
		rg.cursor = max(rg.cursor, times[len(times)-1])
	}
	rg.listed += n
	if rg.cursor > rg.first && rg.listed >= listPageSize {
		rg.density = float64(rg.listed) / float64(rg.cursor-rg.first)
	} else if rg.listed >= listPageSize {
		rg.density = float64(rg.listed) // all in one millisecond so far
	}
}

// stray returns the createdTime of a file of a page of n files of the
// range that lies outside its query's bounds, if one does (noLowerBound
// for a time that does not parse, when the range has bounds).
func (rg *timeRange) stray(n int, times []int64) (int64, bool) {
	if len(times) < n && (rg.from != noLowerBound || rg.queryLimit != noUpperBound) {
		return noLowerBound, true
	}
	for _, t := range times {
		if t < rg.from || t >= rg.queryLimit {
			return t, true
		}
	}
	return 0, false
}

// fallBack gives up the ranges for one sequential listing of the library:
// rg's page held a folder created at stray, outside its query's bounds. A
// server that ignores them lists the whole library for every range, from
// its oldest folder. The range with no bound goes on to its end if it is
// still listed; else it is listed anew. Every other range stops at its
// next page, and none is cut any more.
func (l *rangeLister) fallBack(rg *timeRange, stray int64) {
	if l.fallback != "" {
		return
	}
	l.fallback, l.strayQuery, l.strayTime = boundsIgnored, rangeQuery(rg.from, rg.queryLimit), stray
	l.waiting = nil
	var whole *timeRange
	for _, a := range l.active {
		if !a.done && !a.stop && a.from == noLowerBound && a.queryLimit == noUpperBound {
			whole = a
		} else {
			a.stop = true
		}
	}
	if whole != nil {
		whole.limit = noUpperBound
		return
	}
	l.waiting = []*timeRange{{from: noLowerBound, limit: noUpperBound}}
}

// stopNested stops, once the order is found not kept, each range whose
// query lies inside the query of another still listed: that one now reads
// its query to the end (it dropped none of its folders yet, as it never
// reached its cut), this range's folders with it. The queries of the
// ranges still listed then do not overlap: cut from one another, they nest
// or are apart.
func (l *rangeLister) stopNested() {
	for _, inner := range l.active {
		for _, outer := range l.active {
			if outer != inner && !outer.done && outer.from <= inner.from && inner.queryLimit <= outer.queryLimit {
				inner.stop = true
			}
		}
	}
}

// createdTimes returns the createdTime of each file, in milliseconds, and
// whether they come in order: no file is older than one before it in
// files, nor, when listed (the range listed folders before this page),
// older than after, the createdTime of the latest of those. A time that
// does not parse counts as out of order.
func createdTimes(files []*drive.File, after int64, listed bool) ([]int64, bool) {
	times := make([]int64, 0, len(files))
	inOrder := true
	for _, f := range files {
		t, err := time.Parse(time.RFC3339Nano, f.CreatedTime)
		if err != nil {
			inOrder = false
			continue
		}
		ms := t.UnixMilli()
		if (listed || len(times) > 0) && ms < after {
			inOrder = false
		}
		times = append(times, ms)
		after = max(after, ms)
	}
	return times, inOrder
}

// rangesPerLister is how many ranges of a sample each lister gets, when
// ranges cannot be cut while they are listed: ranges the sample made
// uneven then weigh less.
const rangesPerLister = 4

// sampledRanges cuts all times into n ranges (or fewer) holding as many of
// the sample times each, at whole seconds.
func sampledRanges(times []int64, n int) []*timeRange {
	slices.Sort(times)
	var cuts []int64
	for i := 1; i < n; i++ {
		q := i * len(times) / n // the first time of range i: cut just past the one before
		if q == 0 {
			continue
		}
		at := ceilSecond(times[q-1] + 1)
		if len(cuts) == 0 || at > cuts[len(cuts)-1] {
			cuts = append(cuts, at)
		}
	}
	ranges := make([]*timeRange, 0, len(cuts)+1)
	from := int64(noLowerBound)
	for _, to := range append(cuts, noUpperBound) {
		ranges = append(ranges, &timeRange{from: from, limit: to})
		from = to
	}
	return ranges
}

// probeNewest asks Drive for the newest folder's createdTime, which bounds
// the latest range.
func (l *rangeLister) probeNewest() error {
	list, err := l.r.listCall(foldersQuery).OrderBy("createdTime desc").PageSize(1).Fields("files(createdTime)").Context(l.ctx).Do()
	if err != nil {
		return fmt.Errorf("find the newest folder: %w", err)
	}
	newest := int64(noLowerBound + 1)
	if len(list.Files) > 0 {
		t, err := time.Parse(time.RFC3339Nano, list.Files[0].CreatedTime)
		if err == nil {
			newest = t.UnixMilli()
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.newest = newest
	l.wake.Broadcast()
	return nil
}

// rangeQuery is the query of the folders created from from (inclusive) to
// to (exclusive).
func rangeQuery(from, to int64) string {
	q := foldersQuery
	if from != noLowerBound {
		q += " and createdTime >= '" + queryTime(from) + "'"
	}
	if to != noUpperBound {
		q += " and createdTime < '" + queryTime(to) + "'"
	}
	return q
}

// queryTime writes a time of a query: RFC 3339, UTC, in whole seconds (the
// ranges' bounds are whole seconds).
func queryTime(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05Z") }
