package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/foldermirror/foldermirror/syncer"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progressView shows a sync's progress: a bar on a terminal, otherwise a
// line per phase and at most one a second within a phase.
type progressView struct {
	w       io.Writer
	library string
	tty     bool

	mu    sync.Mutex // progress comes from several goroutines
	phase string
	bar   *progressbar.ProgressBar
	last  time.Time
}

// plainLineEvery is how often a plain-text view prints within a phase.
const plainLineEvery = time.Second

func newProgressView(w io.Writer, library string) *progressView {
	f, ok := w.(*os.File)
	return &progressView{w: w, library: library, tty: ok && term.IsTerminal(int(f.Fd()))}
}

func (p *progressView) update(pr syncer.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pr.Phase == "done" {
		return // the summary line says it
	}
	changed := pr.Phase != p.phase
	p.phase = pr.Phase
	if p.tty {
		p.showBar(pr, changed)
		return
	}
	if changed || time.Since(p.last) >= plainLineEvery {
		p.last = time.Now()
		if pr.Total > 0 {
			fmt.Fprintf(p.w, "%s: %s: %d/%d\n", p.library, pr.Phase, pr.Done, pr.Total)
		} else {
			fmt.Fprintf(p.w, "%s: %s: %d folders\n", p.library, pr.Phase, pr.Done)
		}
	}
}

func (p *progressView) showBar(pr syncer.Progress, changed bool) {
	if changed {
		if p.bar != nil {
			_ = p.bar.Finish()
			fmt.Fprintln(p.w)
		}
		total := int64(pr.Total)
		if total == 0 {
			total = -1 // a spinner while the total is unknown
		}
		p.bar = progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionSetDescription(p.library+": "+pr.Phase),
			progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
		)
	}
	_ = p.bar.Set(pr.Done)
}

// finish ends the bar, if any.
func (p *progressView) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Finish()
		fmt.Fprintln(p.w)
		p.bar = nil
	}
}
