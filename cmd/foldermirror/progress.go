package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/config"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"
)

// progressDisplay shows the progress of sync jobs on w. On a terminal,
// each running job has its own line, redrawn in place: a bar where the
// total is known (permissions, writing), counts where it is not (listing,
// changes). Elsewhere, plain lines: one when a phase starts, and at most
// one a second per job.
type progressDisplay struct {
	w       io.Writer
	listing func(job string) string // what listing a job's folders reads
	bars    *mpb.Progress           // nil off a terminal

	mu     sync.Mutex
	jobs   map[string]*jobProgress
	closed bool
}

// plainLineEvery is how often a job's plain-text progress prints.
const plainLineEvery = time.Second

// newProgressDisplay returns a display on w; listing says what a job's
// listing reads ("the shared drive"), for its label.
func newProgressDisplay(w io.Writer, listing func(job string) string) *progressDisplay {
	d := &progressDisplay{w: w, listing: listing, jobs: map[string]*jobProgress{}}
	if isTerminal(w) {
		d.bars = mpb.New(mpb.WithOutput(w), mpb.WithRefreshRate(100*time.Millisecond))
	}
	return d
}

// isTerminal tells whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// listingOf returns what listing a job's folders reads: a shared drive, or
// the storage account's whole Drive (of which the library is a part).
func listingOf(cfg *config.Config) func(job string) string {
	return func(job string) string {
		switch lib := cfg.Library(job); {
		case lib == nil:
			return "the folders"
		case lib.IsSharedDrive():
			return "the shared drive"
		default:
			return "the whole Drive of " + lib.StorageAccount
		}
	}
}

// job returns the progress of a job, made on first use.
func (d *progressDisplay) job(name string) *jobProgress {
	d.mu.Lock()
	defer d.mu.Unlock()
	j, ok := d.jobs[name]
	if !ok {
		j = &jobProgress{name: name, listing: d.listing(name), counts: map[string]fm.Progress{}}
		d.jobs[name] = j
	}
	return j
}

// update shows a job's progress; it may be called from several goroutines.
func (d *progressDisplay) update(job string, pr fm.Progress) {
	if pr.Phase == "done" {
		return // the job's outcome says it
	}
	j := d.job(job)
	started := j.record(pr)
	if d.bars == nil {
		j.printPlain(d.w, started)
		return
	}
	j.once.Do(func() { j.bar = d.newBar(j) })
}

// newBar adds a job's line: its name, what it is doing, a bar when the
// total is known, and the counts of that bar.
func (d *progressDisplay) newBar(j *jobProgress) *mpb.Bar {
	bar := mpb.BarStyle().Build()
	filler := mpb.BarFillerFunc(func(w io.Writer, stat decor.Statistics) error {
		p, ok := j.barPhase()
		if !ok {
			return nil // counts only
		}
		stat.Current, stat.Total = int64(p.Done), int64(p.Total)
		return bar.Fill(w, stat)
	})
	b, err := d.bars.Add(0, filler,
		mpb.PrependDecorators(
			decor.Name(j.name, decor.WCSyncSpaceR),
			decor.Any(func(decor.Statistics) string { return j.label() }),
		),
		mpb.AppendDecorators(decor.Any(func(decor.Statistics) string { return j.barCounts() })),
	)
	if err != nil {
		return nil // the display is closed: no more lines
	}
	return b
}

// done ends a job's line; println then says how it went.
func (d *progressDisplay) done(job string) {
	d.mu.Lock()
	j := d.jobs[job]
	delete(d.jobs, job)
	d.mu.Unlock()
	if j != nil {
		j.once.Do(func() {}) // no line from now on
		if j.bar != nil {
			j.bar.Abort(true)
		}
	}
}

// println prints a line on out, above the running jobs' lines when out is
// the terminal they are drawn on.
func (d *progressDisplay) println(out io.Writer, line string) {
	if d.bars != nil && isTerminal(out) {
		fmt.Fprintln(d, line)
		return
	}
	fmt.Fprintln(out, line)
}

// Write writes p above the running jobs' lines on a terminal (logs go
// there), or to w.
func (d *progressDisplay) Write(p []byte) (int, error) {
	if d.bars != nil {
		if n, err := d.bars.Write(p); !errors.Is(err, mpb.ErrDone) {
			return n, err
		}
	}
	return d.w.Write(p)
}

// close ends every line and waits until the terminal shows it.
func (d *progressDisplay) close() {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.closed = true
	names := make([]string, 0, len(d.jobs))
	for name := range d.jobs {
		names = append(names, name)
	}
	d.mu.Unlock()
	for _, name := range names {
		d.done(name)
	}
	if d.bars != nil {
		d.bars.Wait()
	}
}

// jobProgress is where a job's phases are. Phases may run at once (a
// shared drive's permissions are read while its folders are listed).
type jobProgress struct {
	name    string
	listing string // what listing reads

	once sync.Once // makes bar
	bar  *mpb.Bar

	mu     sync.Mutex
	phases []string // in the order they started
	counts map[string]fm.Progress
	last   time.Time // of the last plain line
}

// record keeps a progress report and tells whether its phase is new.
func (j *jobProgress) record(pr fm.Progress) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	_, known := j.counts[pr.Phase]
	if !known {
		j.phases = append(j.phases, pr.Phase)
	}
	j.counts[pr.Phase] = pr
	return !known
}

// printPlain prints a line saying every current phase, when a phase has
// started or a second has passed since the last line.
func (j *jobProgress) printPlain(w io.Writer, started bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !started && time.Since(j.last) < plainLineEvery {
		return
	}
	j.last = time.Now()
	parts := make([]string, 0, len(j.phases))
	for _, ph := range j.current() {
		parts = append(parts, j.describe(ph, true))
	}
	fmt.Fprintf(w, "%s: %s\n", j.name, strings.Join(parts, ", "))
}

// current returns the phases to show: every one so far until writing
// starts, which ends the others. Call with j.mu held.
func (j *jobProgress) current() []string {
	if _, ok := j.counts["writing"]; ok {
		return []string{"writing"}
	}
	return j.phases
}

// describe says where a phase is, counts included or not. Writing says
// how many folders it writes until it has written some. Call with j.mu
// held.
func (j *jobProgress) describe(phase string, counts bool) string {
	c := j.counts[phase]
	switch {
	case phase == "listing":
		return fmt.Sprintf("listing %s: %s", j.listing, count(c.Done, "folder"))
	case phase == "changes":
		return fmt.Sprintf("reading changes: %d", c.Done)
	case !counts:
		return phase
	case phase == "writing" && c.Done == 0:
		return "writing: " + count(c.Total, "folder")
	case c.Total > 0:
		return fmt.Sprintf("%s: %s", phase, doneOf(phase, c))
	}
	return fmt.Sprintf("%s: %d", phase, c.Done)
}

// doneOf returns "done/total" of a phase, and the unit of writing's:
// "3/10 folders".
func doneOf(phase string, p fm.Progress) string {
	if phase == "writing" {
		return fmt.Sprintf("%d/%d %s", p.Done, p.Total, noun(p.Total, "folder"))
	}
	return fmt.Sprintf("%d/%d", p.Done, p.Total)
}

// barPhase returns the progress of the phase the bar shows: the last
// current one whose total is known.
func (j *jobProgress) barPhase() (fm.Progress, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	_, p, ok := j.barPhaseLocked()
	return p, ok
}

func (j *jobProgress) barPhaseLocked() (string, fm.Progress, bool) {
	cur := j.current()
	for i := len(cur) - 1; i >= 0; i-- {
		if p := j.counts[cur[i]]; p.Total > 0 {
			return cur[i], p, true
		}
	}
	return "", fm.Progress{}, false
}

// label says the current phases on a terminal line, the bar's last, its
// counts after the bar.
func (j *jobProgress) label() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	inBar, _, _ := j.barPhaseLocked()
	var parts []string
	for _, ph := range j.current() {
		if ph != inBar {
			parts = append(parts, j.describe(ph, true))
		}
	}
	if inBar != "" {
		parts = append(parts, j.describe(inBar, false))
	}
	return strings.Join(parts, ", ")
}

// barCounts returns "done/total" of the bar's phase, or "".
func (j *jobProgress) barCounts() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	phase, p, ok := j.barPhaseLocked()
	if !ok {
		return ""
	}
	return doneOf(phase, p)
}
