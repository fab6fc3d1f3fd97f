package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// comparison says how a measured value must relate to its limit.
type comparison int

const (
	info    comparison = iota // no limit: the value is for the record
	atMost                    // value ≤ limit
	under                     // value < limit
	atLeast                   // value ≥ limit
	exactly                   // value = limit
)

var comparisonSign = map[comparison]string{atMost: "≤", under: "<", atLeast: "≥", exactly: "="}

// unit formats values of one kind.
type unit struct {
	name   string
	format func(v float64) string
}

var (
	unitCalls   = unit{"calls", thousands}
	unitPages   = unit{"pages", thousands}
	unitSeconds = unit{"s", func(v float64) string { return fmt.Sprintf("%.2f s", v) }}
	unitMillis  = unit{"ms", func(v float64) string { return fmt.Sprintf("%.1f ms", v) }}
	unitMicros  = unit{"µs", func(v float64) string { return fmt.Sprintf("%.2f µs", v) }}
	unitMB      = unit{"MB", func(v float64) string { return fmt.Sprintf("%.1f MB", v/1e6) }}
	unitRPS     = unit{"req/s", func(v float64) string { return thousands(v) + " req/s" }}
	unitPercent = unit{"%", func(v float64) string { return fmt.Sprintf("%.1f %%", 100*v) }}
	unitBytes   = unit{"B", func(v float64) string { return thousands(v) + " B" }}
	unitRatio   = unit{"×", func(v float64) string { return fmt.Sprintf("%.3f", v) }}
)

// Sections group the rows, in this order.
const (
	sectionSync        = "full sync, My Drive library"
	sectionServe       = "serve"
	sectionAPI         = "API, 64 clients"
	sectionIncremental = "incremental sync by the daemon"
	sectionGrowth      = "serve, growth with the library"
	sectionDrives      = "shared drives"
	sectionPostgres    = "PostgreSQL index, replicas"
	sectionPush        = "push notifications"
	sectionPushPG      = "push notifications, PostgreSQL replicas"
	sectionDiscovery   = "shared drives found by themselves"
	sectionAuth        = "authentication"
)

var sectionOrder = []string{sectionSync, sectionServe, sectionAPI, sectionIncremental, sectionGrowth, sectionDrives, sectionPostgres, sectionPush, sectionPushPG, sectionDiscovery, sectionAuth}

// row is one figure measured, at one library size or at none.
type row struct {
	section, figure string
	// size is the library size the figure was measured at, 0 for a
	// figure of no size; a figure measured at several sizes has a row for
	// each.
	size  int
	value float64
	unit  unit
	cmp   comparison
	limit float64
	// rule says the limit the same way at every size, e.g. "≤ 1.05 ×
	// (⌈N/1000⌉+1)"; how how this row's limit was made, e.g. "1.05 × 101
	// fewest". Both optional.
	rule, how string
	// err, when set, says why the figure could not be measured.
	err string
}

// pass reports whether the row meets its limit (info rows always do).
func (r row) pass() bool {
	switch {
	case r.err != "":
		return false
	case r.cmp == atMost:
		return r.value <= r.limit
	case r.cmp == under:
		return r.value < r.limit
	case r.cmp == atLeast:
		return r.value >= r.limit
	case r.cmp == exactly:
		return r.value == r.limit
	}
	return true
}

// result is PASS, FAIL, ERROR or, for a row without a limit, "".
func (r row) result() string {
	switch {
	case r.err != "":
		return "ERROR"
	case r.cmp == info:
		return ""
	case r.pass():
		return "PASS"
	}
	return "FAIL"
}

// limitText is the row's limit, e.g. "≤ 106 (1.05 × 101 fewest)".
func (r row) limitText() string {
	if r.cmp == info {
		return "—"
	}
	s := comparisonSign[r.cmp] + " " + r.unit.format(r.limit)
	if r.how != "" {
		s += " (" + r.how + ")"
	}
	return s
}

// cells are the row's cells in the table of figures of no size.
func (r row) cells() []string {
	if r.err != "" {
		return []string{r.figure, "error: " + r.err, "—", "—", "ERROR"}
	}
	if r.cmp == info {
		return []string{r.figure, r.unit.format(r.value), "—", "—", "—"}
	}
	ratio := "—"
	if r.limit != 0 {
		ratio = fmt.Sprintf("%.2f", r.value/r.limit)
	}
	return []string{r.figure, r.unit.format(r.value), r.limitText(), ratio, r.result()}
}

// sizeCell is the row's cell in the table by size: the value, and the
// limit at that size with the result.
func (r row) sizeCell() string {
	if r.err != "" {
		return "ERROR: " + r.err
	}
	if r.cmp == info {
		return r.unit.format(r.value)
	}
	return fmt.Sprintf("%s %s %s %s", r.unit.format(r.value), comparisonSign[r.cmp], r.unit.format(r.limit), r.result())
}

// table collects the rows and the notes of a run.
type table struct {
	rows  []row
	notes []string
}

func (t *table) add(r row) { t.rows = append(t.rows, r) }

// note records a remark printed under the tables.
func (t *table) note(format string, args ...any) {
	t.notes = append(t.notes, fmt.Sprintf(format, args...))
}

// fail records a figure (or a group of them) that could not be measured,
// at a library size or at none.
func (t *table) fail(figure string, size int, err error) {
	t.add(row{section: "errors", figure: figure, size: size, err: strings.ReplaceAll(err.Error(), "\n", " ")})
}

func (t *table) allPass() bool {
	for _, r := range t.rows {
		if !r.pass() {
			return false
		}
	}
	return true
}

// bySize is the table of figures measured at each library size: a line per
// figure, a column per size.
type bySize struct {
	sizes []int
	lines []sizeLine
}

type sizeLine struct {
	section, figure, rule string
	cells                 map[int]row
}

// grid arranges the rows with a size by figure, sections in order and
// figures in the order first measured.
func (t *table) grid() bySize {
	var g bySize
	at := map[[2]string]int{}
	for _, sec := range append(slices.Clone(sectionOrder), "errors") {
		for _, r := range t.rows {
			if r.size == 0 || r.section != sec {
				continue
			}
			if !slices.Contains(g.sizes, r.size) {
				g.sizes = append(g.sizes, r.size)
			}
			key := [2]string{r.section, r.figure}
			i, ok := at[key]
			if !ok {
				i = len(g.lines)
				at[key] = i
				g.lines = append(g.lines, sizeLine{section: r.section, figure: r.figure, cells: map[int]row{}})
			}
			if r.rule != "" {
				g.lines[i].rule = r.rule
			}
			g.lines[i].cells[r.size] = r
		}
	}
	slices.Sort(g.sizes)
	return g
}

// header and lines return the table by size as cells.
func (g bySize) header() []string {
	h := []string{"figure", "limit"}
	for _, n := range g.sizes {
		h = append(h, thousands(float64(n))+" folders")
	}
	return h
}

func (g bySize) line(l sizeLine) []string {
	rule := l.rule
	if rule == "" {
		rule = "—"
	}
	out := []string{l.section + ": " + l.figure, rule}
	for _, n := range g.sizes {
		if r, ok := l.cells[n]; ok {
			out = append(out, r.sizeCell())
		} else {
			out = append(out, "—")
		}
	}
	return out
}

// others returns the rows of no size, sections in order.
func (t *table) others() []row {
	var out []row
	for _, sec := range append(slices.Clone(sectionOrder), "errors") {
		for _, r := range t.rows {
			if r.size == 0 && r.section == sec {
				out = append(out, r)
			}
		}
	}
	return out
}

var header = []string{"figure", "measured", "limit", "ratio", "result"}

func (t *table) printText(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if g := t.grid(); len(g.lines) > 0 {
		fmt.Fprintln(tw, strings.Join(g.header(), "\t"))
		for _, l := range g.lines {
			fmt.Fprintln(tw, strings.Join(g.line(l), "\t"))
		}
		fmt.Fprintln(tw)
	}
	if others := t.others(); len(others) > 0 {
		fmt.Fprintln(tw, strings.Join(header, "\t"))
		for _, r := range others {
			c := r.cells()
			c[0] = r.section + ": " + c[0]
			fmt.Fprintln(tw, strings.Join(c, "\t"))
		}
	}
	_ = tw.Flush() // to a strings.Builder or a terminal
	for _, n := range t.notes {
		fmt.Fprintln(w, "- "+n)
	}
}

// markdown returns the machine line, the tables and the notes in Markdown.
func (t *table) markdown(m machine, quick bool) string {
	var b strings.Builder
	b.WriteString(m.String())
	if quick {
		b.WriteString(" (-quick: scaled down)")
	}
	b.WriteString("\n")
	mdRow := func(cells []string) {
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	if g := t.grid(); len(g.lines) > 0 {
		b.WriteString("\n")
		mdRow(g.header())
		b.WriteString("|" + strings.Repeat("---|", len(g.header())) + "\n")
		for _, l := range g.lines {
			mdRow(g.line(l))
		}
	}
	if others := t.others(); len(others) > 0 {
		b.WriteString("\n")
		mdRow(slices.Clone(header))
		b.WriteString("|" + strings.Repeat("---|", len(header)) + "\n")
		for _, r := range others {
			c := r.cells()
			c[0] = r.section + ": " + c[0]
			mdRow(c)
		}
	}
	if len(t.notes) > 0 {
		b.WriteString("\n")
		for _, n := range t.notes {
			b.WriteString("- " + n + "\n")
		}
	}
	return b.String()
}

// thousands formats a value rounded to an integer with thousands separators.
func thousands(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// machine describes where the figures were measured.
type machine struct {
	cpus         int
	goVersion    string
	goos, goarch string
	cpuModel     string
	// freshPage is the CPU time a page of memory new to a process costs
	// (see freshPageCost): on some virtual machines it is many times a
	// physical machine's, and every figure of CPU that grows memory pays it.
	freshPage time.Duration
}

func currentMachine() machine {
	return machine{cpus: runtime.NumCPU(), goVersion: runtime.Version(), goos: runtime.GOOS,
		goarch: runtime.GOARCH, cpuModel: cpuModel(), freshPage: freshPageCost()}
}

func (m machine) String() string {
	return fmt.Sprintf("machine: %d CPUs (%s), %s, %s/%s; a page of fresh memory costs %.1f µs of CPU",
		m.cpus, m.cpuModel, m.goVersion, m.goos, m.goarch, float64(m.freshPage.Nanoseconds())/1e3)
}

// freshPageCost is the CPU time the harness spends on a page of memory the
// process did not have: the runtime gives back what it holds, then 16 MB
// are allocated and written a byte a page, each write a page fault (the
// kernel maps and zeroes a page).
func freshPageCost() time.Duration {
	debug.FreeOSMemory()
	const size = 16 << 20
	page := os.Getpagesize()
	start := selfCPU()
	buf := make([]byte, size)
	for i := 0; i < size; i += page {
		buf[i] = 1
	}
	spent := selfCPU() - start
	runtime.KeepAlive(buf)
	return spent / time.Duration(size/page)
}

// cpuModel returns the first "model name" of /proc/cpuinfo, "unknown CPU"
// when there is none.
func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if name, value, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) == "model name" {
			return strings.TrimSpace(value)
		}
	}
	return "unknown CPU"
}
