package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"
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
	unitSeconds = unit{"s", func(v float64) string { return fmt.Sprintf("%.2f s", v) }}
	unitMillis  = unit{"ms", func(v float64) string { return fmt.Sprintf("%.1f ms", v) }}
	unitMicros  = unit{"µs", func(v float64) string { return fmt.Sprintf("%.2f µs", v) }}
	unitMB      = unit{"MB", func(v float64) string { return fmt.Sprintf("%.1f MB", v/1e6) }}
	unitRPS     = unit{"req/s", func(v float64) string { return thousands(v) + " req/s" }}
)

// row is one line of the table.
type row struct {
	figure string
	value  float64
	unit   unit
	cmp    comparison
	limit  float64
	// how says how the limit was made, e.g. "1.2 × 101"; optional.
	how string
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

func (r row) cells() []string {
	if r.err != "" {
		return []string{r.figure, "error: " + r.err, "—", "—", "ERROR"}
	}
	if r.cmp == info {
		return []string{r.figure, r.unit.format(r.value), "—", "—", "—"}
	}
	limit := comparisonSign[r.cmp] + " " + r.unit.format(r.limit)
	if r.how != "" {
		limit += " (" + r.how + ")"
	}
	ratio := "—"
	if r.limit != 0 {
		ratio = fmt.Sprintf("%.2f", r.value/r.limit)
	}
	result := "FAIL"
	if r.pass() {
		result = "PASS"
	}
	return []string{r.figure, r.unit.format(r.value), limit, ratio, result}
}

// table collects the rows and the notes of a run.
type table struct {
	rows  []row
	notes []string
}

func (t *table) add(r row) { t.rows = append(t.rows, r) }

// note records a remark printed under the table.
func (t *table) note(format string, args ...any) {
	t.notes = append(t.notes, fmt.Sprintf(format, args...))
}

// fail records a group of figures that could not be measured.
func (t *table) fail(figure string, err error) {
	t.add(row{figure: figure, err: strings.ReplaceAll(err.Error(), "\n", " ")})
}

func (t *table) allPass() bool {
	for _, r := range t.rows {
		if !r.pass() {
			return false
		}
	}
	return true
}

var header = []string{"figure", "measured", "limit", "ratio", "result"}

func (t *table) printText(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range t.rows {
		fmt.Fprintln(tw, strings.Join(r.cells(), "\t"))
	}
	tw.Flush()
	for _, n := range t.notes {
		fmt.Fprintln(w, "- "+n)
	}
}

// markdown returns the machine line, the table and the notes in Markdown.
func (t *table) markdown(m machine, quick bool) string {
	var b strings.Builder
	b.WriteString(m.String())
	if quick {
		b.WriteString(" (-quick: scaled down)")
	}
	b.WriteString("\n\n| " + strings.Join(header, " | ") + " |\n|")
	b.WriteString(strings.Repeat("---|", len(header)) + "\n")
	for _, r := range t.rows {
		cells := r.cells()
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
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
}

func currentMachine() machine {
	return machine{cpus: runtime.NumCPU(), goVersion: runtime.Version(), goos: runtime.GOOS,
		goarch: runtime.GOARCH, cpuModel: cpuModel()}
}

func (m machine) String() string {
	return fmt.Sprintf("machine: %d CPUs (%s), %s, %s/%s", m.cpus, m.cpuModel, m.goVersion, m.goos, m.goarch)
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
