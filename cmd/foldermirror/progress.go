package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/foldermirror/foldermirror/syncer"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progressView shows a sync's progress: a spinner with counts on a
// terminal, otherwise a line when a phase starts and at most one a second.
// Phases may run at once (a shared drive's permissions are read while its
// folders are listed): each line says all of them.
type progressView struct {
	w   io.Writer
	job string
	tty bool

	mu     sync.Mutex // progress comes from several goroutines
	phases []string
	counts map[string]syncer.Progress
	bar    *progressbar.ProgressBar
	last   time.Time
}

// plainLineEvery is how often a plain-text view prints.
const plainLineEvery = time.Second

func newProgressView(w io.Writer, job string) *progressView {
	f, ok := w.(*os.File)
	return &progressView{w: w, job: job, tty: ok && term.IsTerminal(int(f.Fd())), counts: map[string]syncer.Progress{}}
}

func (p *progressView) update(pr syncer.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pr.Phase == "done" {
		return // the summary line says it
	}
	_, known := p.counts[pr.Phase]
	if !known {
		p.phases = append(p.phases, pr.Phase)
	}
	p.counts[pr.Phase] = pr
	if p.tty {
		p.showBar()
		return
	}
	if !known || time.Since(p.last) >= plainLineEvery {
		p.last = time.Now()
		fmt.Fprintf(p.w, "%s: %s\n", p.job, p.describe())
	}
}

// describe says where each phase is: "listing: 3000 folders, permissions: 120/500".
func (p *progressView) describe() string {
	parts := make([]string, 0, len(p.phases))
	for _, ph := range p.phases {
		c := p.counts[ph]
		if c.Total > 0 {
			parts = append(parts, fmt.Sprintf("%s: %d/%d", ph, c.Done, c.Total))
		} else {
			parts = append(parts, fmt.Sprintf("%s: %d folders", ph, c.Done))
		}
	}
	return strings.Join(parts, ", ")
}

func (p *progressView) showBar() {
	if p.bar == nil {
		p.bar = progressbar.NewOptions64(-1,
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionSpinnerType(14),
			progressbar.OptionThrottle(100*time.Millisecond),
		)
	}
	p.bar.Describe(p.job + ": " + p.describe())
	_ = p.bar.Add(1)
}

// finish ends the spinner, if any.
func (p *progressView) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Finish()
		fmt.Fprintln(p.w)
		p.bar = nil
	}
}
