package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The daemon's garbage collector is read two ways. Its Prometheus /metrics
// (admin listener) has, when its Go collector exports the runtime's
// metrics, the collector's CPU (go_cpu_classes_gc_total_cpu_seconds_total)
// and the scannable heap (go_gc_scan_heap_bytes); the default Go collector
// exports neither. The harness therefore also starts the daemon with
// GODEBUG=gctrace=1,gcpacertrace=1, which makes the runtime log each
// collection: its CPU time, and the heap bytes it scanned. A figure comes
// from /metrics when it has it, else from the log; the notes say which.
const (
	metricGCCPU      = "go_cpu_classes_gc_total_cpu_seconds_total"
	metricProcessCPU = "process_cpu_seconds_total"
	metricScanHeap   = "go_gc_scan_heap_bytes"
)

// gcSample is the state of the daemon's collector at a moment.
type gcSample struct {
	metrics map[string]float64 // unlabelled series of /metrics; nil if unread
	cpu     time.Duration      // the process's CPU time, from /proc
	logSize int64              // the length of its log
}

// sampleGC reads the daemon's /metrics, CPU time and log length.
func (h *hosted) sampleGC(d *daemonProc) gcSample {
	s := gcSample{cpu: processCPU(d.pid())}
	if fi, err := os.Stat(d.stderr.Name()); err == nil {
		s.logSize = fi.Size()
	}
	if resp, err := http.Get("http://" + h.world.adminListen + "/metrics"); err == nil {
		if resp.StatusCode == http.StatusOK {
			s.metrics = parseMetrics(resp.Body)
		}
		resp.Body.Close()
	}
	return s
}

// parseMetrics reads Prometheus' text format: the value of each series
// without labels, and the names of all.
func parseMetrics(r io.Reader) map[string]float64 {
	out := map[string]float64{}
	lines := bufio.NewScanner(r)
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		line := lines.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if i := strings.IndexByte(name, '{'); i >= 0 {
			if _, seen := out[name[:i]]; !seen {
				out[name[:i]] = 0 // a labelled series: the name only
			}
			continue
		}
		if v, err := strconv.ParseFloat(strings.Fields(value)[0], 64); err == nil {
			out[name] = v
		}
	}
	return out
}

// processCPU is a process's CPU time (user and system) from /proc, in the
// kernel's ticks of 10 ms; 0 if unreadable.
func processCPU(pid int) time.Duration {
	return statTicks(statFields(pid))
}

// statTicks is the CPU time (user and system) in /proc/PID/stat's fields
// (statFields); 0 if they are too few.
func statTicks(f []string) time.Duration {
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// statFields are the fields of /proc/PID/stat after the command's name
// (the state first); nil if unreadable.
func statFields(pid int) []string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	// The command's name, in parentheses, may hold spaces: count from after it.
	return strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
}

// usage is what a process has used so far: its CPU time, as /proc/PID/stat
// counts it (ticks of 10 ms) and as the sum of its threads' run times (in
// nanoseconds, from /proc/PID/task/*/schedstat, when the kernel keeps
// them); and its minor page faults (a page the kernel mapped for it
// without reading the disk).
type usage struct {
	ticks, runTime time.Duration
	hasRunTime     bool
	faults         int64
}

// processUsage reads a process's usage from /proc.
func processUsage(pid int) usage {
	f := statFields(pid)
	u := usage{ticks: statTicks(f)}
	if len(f) > 7 {
		u.faults, _ = strconv.ParseInt(f[7], 10, 64)
	}
	u.runTime, u.hasRunTime = threadsRunTime(pid)
	return u
}

// threadsRunTime is the sum of the run times of a process's threads, from
// the first field of each /proc/PID/task/TID/schedstat; false when the
// kernel keeps none.
func threadsRunTime(pid int) (time.Duration, bool) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		return 0, false
	}
	var sum int64
	for _, t := range tasks {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			continue // a thread that ended meanwhile
		}
		f := strings.Fields(string(data))
		if len(f) == 0 {
			return 0, false
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, false
		}
		sum += ns
	}
	return time.Duration(sum), true
}

// cpuSince is the CPU time the process used from before to u, and whether
// it is to the nanosecond: the threads' run times, unless they fall a tick
// or more short of the ticks' count (a thread ended meanwhile, and its time
// went with it), in which case the ticks'.
func (u usage) cpuSince(before usage) (time.Duration, bool) {
	ticks := u.ticks - before.ticks
	if u.hasRunTime && before.hasRunTime {
		if run := u.runTime - before.runTime; run > ticks-10*time.Millisecond {
			return run, true
		}
	}
	return ticks, false
}

// gcWindow is what the collector did between two samples.
type gcWindow struct {
	// cpu is the daemon's CPU time; gcCPU the collector's part of it.
	cpu, gcCPU time.Duration
	// cycles is how many collections the log shows.
	cycles int
	// scans are the heap bytes each collection scanned (from the log); when
	// none ran in the window, the last one before it.
	scans []float64
	// scanHeap is the heap the collector scans: the exported metric at the
	// end, else the median of scans; -1 if neither is known.
	scanHeap float64
	// scanBefore: scans is the last collection before the window.
	scanBefore bool
	// fromMetrics tells which figures came from /metrics.
	cpuFromMetrics, scanFromMetrics bool
	// exported are the collector's series /metrics has.
	exported []string
}

// share is the collector's share of the daemon's CPU.
func (w gcWindow) share() float64 {
	if w.cpu <= 0 {
		return 0
	}
	return float64(w.gcCPU) / float64(w.cpu)
}

// The runtime's trace lines (GODEBUG gctrace and gcpacertrace).
var (
	gctraceLine = regexp.MustCompile(`^gc \d+ @[\d.]+s \d+%: [^,]* ms clock, ([\d.]+)\+([\d.]+)/([\d.]+)/([\d.]+)\+([\d.]+) ms cpu`)
	pacerLine   = regexp.MustCompile(`^pacer: \d+% CPU \(\d+ exp\.\) for (\d+)\+\d+\+\d+ B work`)
)

// gcBetween works out what the collector did between samples a and b of the
// daemon whose log is logPath.
func gcBetween(a, b gcSample, logPath string) gcWindow {
	w := gcWindow{cpu: b.cpu - a.cpu, scanHeap: -1}
	var traced time.Duration
	last := -1.0 // the heap the last collection before the window scanned
	if f, err := os.Open(logPath); err == nil {
		// The whole log up to the window's end: lines before it tell the
		// last collection's scan, in case none runs within.
		lines := bufio.NewScanner(io.NewSectionReader(f, 0, b.logSize))
		lines.Buffer(nil, 1<<20)
		var at int64
		for lines.Scan() {
			in := at >= a.logSize
			at += int64(len(lines.Bytes())) + 1
			if m := gctraceLine.FindStringSubmatch(lines.Text()); m != nil && in {
				w.cycles++
				for _, ms := range m[1:] {
					v, _ := strconv.ParseFloat(ms, 64)
					traced += time.Duration(v * float64(time.Millisecond))
				}
			} else if m := pacerLine.FindStringSubmatch(lines.Text()); m != nil {
				v, _ := strconv.ParseFloat(m[1], 64)
				if in {
					w.scans = append(w.scans, v)
				} else {
					last = v
				}
			}
		}
		_ = f.Close() // read only
	}
	if len(w.scans) == 0 && last >= 0 {
		w.scans, w.scanBefore = []float64{last}, true
	}
	w.gcCPU = traced
	for name := range b.metrics {
		if strings.HasPrefix(name, "go_gc_") || strings.HasPrefix(name, "go_cpu_classes_gc") {
			w.exported = append(w.exported, name)
		}
	}
	slices.Sort(w.exported)
	gcA, okA := a.metrics[metricGCCPU]
	gcB, okB := b.metrics[metricGCCPU]
	if okA && okB {
		w.cpuFromMetrics = true
		w.gcCPU = time.Duration((gcB - gcA) * float64(time.Second))
		if pa, ok := a.metrics[metricProcessCPU]; ok {
			w.cpu = time.Duration((b.metrics[metricProcessCPU] - pa) * float64(time.Second))
		}
	}
	if v, ok := b.metrics[metricScanHeap]; ok {
		w.scanFromMetrics, w.scanHeap = true, v
	} else if len(w.scans) > 0 {
		w.scanHeap = medianOf(w.scans)
	}
	return w
}

// mergeWindows adds up windows of one daemon.
func mergeWindows(ws []gcWindow) gcWindow {
	out := gcWindow{scanHeap: -1}
	var exported, before []float64
	for _, w := range ws {
		out.cpu += w.cpu
		out.gcCPU += w.gcCPU
		out.cycles += w.cycles
		if w.scanBefore {
			before = w.scans
		} else {
			out.scans = append(out.scans, w.scans...)
		}
		out.cpuFromMetrics = out.cpuFromMetrics || w.cpuFromMetrics
		out.exported = w.exported
		if w.scanFromMetrics {
			out.scanFromMetrics = true
			exported = append(exported, w.scanHeap)
		}
	}
	if len(out.scans) == 0 && before != nil {
		out.scans, out.scanBefore = before, true
	}
	switch {
	case len(exported) > 0:
		out.scanHeap = medianOf(exported)
	case len(out.scans) > 0:
		out.scanHeap = medianOf(out.scans)
	}
	return out
}

// describe says what the window holds and where each figure comes from.
func (w gcWindow) describe() []string {
	cpuFrom := "the runtime's gctrace in the daemon's log over its CPU time from /proc"
	if w.cpuFromMetrics {
		cpuFrom = metricGCCPU + " over " + metricProcessCPU
	}
	scanFrom := "the heap bytes each collection scanned, median, from gcpacertrace in the daemon's log"
	if w.scanBefore && w.cycles == 0 {
		scanFrom = "the heap bytes the last collection before the loads scanned, none running during them, from gcpacertrace in the daemon's log"
	}
	if w.scanFromMetrics {
		scanFrom = metricScanHeap + " after the load"
	}
	out := []string{
		fmt.Sprintf("the collector took %.2f s of the daemon's %.2f s of CPU (%.1f %%; %s), in %d collections",
			w.gcCPU.Seconds(), w.cpu.Seconds(), 100*w.share(), cpuFrom, w.cycles),
	}
	if w.scanHeap >= 0 {
		out = append(out, fmt.Sprintf("heap scanned %.1f MB (%s)", w.scanHeap/1e6, scanFrom))
	}
	exported := "none"
	if len(w.exported) > 0 {
		exported = strings.Join(w.exported, ", ")
	}
	return append(out, "the collector's series in /metrics: "+exported)
}

// medianOf returns the median of values, without reordering them.
func medianOf(values []float64) float64 {
	sorted := slices.Sorted(slices.Values(values))
	return sorted[len(sorted)/2]
}
