package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/goxio/goxio/stats"
)

// The report loop: take a snapshot every interval, turn it into totals or
// per-second rates, print it in the chosen view or format.

// procView is one process's data for one cycle, after -s filtering and
// deltas.
type procView struct {
	pid  int
	name string
	snap *stats.Snapshot
}

// filtered returns snap with only the sockets -s selects.
func filtered(o *options, snap *stats.Snapshot) *stats.Snapshot {
	if o.sockets == nil {
		return snap
	}
	out := *snap
	out.Sockets = nil
	for _, s := range snap.Sockets {
		if o.sockets.has(s.FD) {
			out.Sockets = append(out.Sockets, s)
		}
	}
	return &out
}

// sleep waits d or until a signal; it reports whether to go on.
func sleep(d time.Duration, stop <-chan os.Signal) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-stop:
		return false
	}
}

// loop prints o.cycles reports (0: until interrupted or the process ends).
func loop(o *options, t *target, stdout io.Writer, stderr *os.File, stop <-chan os.Signal) int {
	var prev *stats.Snapshot
	if o.details == detailsDeltas {
		s, err := t.seg.Snapshot()
		if err != nil {
			fmt.Fprintf(stderr, "goxio_stats: process %d: %v\n", t.pid, err)
			return 1
		}
		prev = s
		if !sleep(o.interval, stop) {
			return 0
		}
	}
	p := newTextPrinter(o, stdout)
	if !o.json && !o.prometheus && o.view != viewGroups {
		fmt.Fprintf(stdout, "goxio_stats: stats for application: %s with pid: %d\n", t.name, t.pid)
	}
	for cycle := 0; o.cycles == 0 || cycle < o.cycles; cycle++ {
		start := time.Now()
		snap, err := t.seg.Snapshot()
		if err != nil {
			fmt.Fprintf(stderr, "goxio_stats: process %d: %v\n", t.pid, err)
			return 1
		}
		view := snap
		if o.details == detailsDeltas && !o.prometheus { // Prometheus wants totals: it computes rates
			view = stats.Rates(snap, prev, 0)
			prev = snap
		}
		pv := procView{pid: t.pid, name: t.name, snap: filtered(o, view)}
		if err := emit(o, p, []procView{pv}, stdout); err != nil {
			fmt.Fprintf(stderr, "goxio_stats: %v\n", err)
			return 1
		}
		if o.view == viewGroups {
			return 0
		}
		if snap.Closed || !t.seg.Alive() {
			fmt.Fprintf(stderr, "goxio_stats: process %d ended - exiting\n", t.pid)
			return 0
		}
		if o.cycles != 0 && cycle == o.cycles-1 {
			break
		}
		if !sleep(o.interval-time.Since(start), stop) {
			return 0
		}
	}
	return 0
}

// reportAll prints one report of several processes (view 5).
func reportAll(o *options, targets []*target, stdout io.Writer, stderr *os.File) int {
	var views []procView
	for _, t := range targets {
		snap, err := t.seg.Snapshot()
		if err != nil {
			fmt.Fprintf(stderr, "goxio_stats: process %d: %v\n", t.pid, err)
			continue
		}
		views = append(views, procView{pid: t.pid, name: t.name, snap: filtered(o, snap)})
	}
	if err := emit(o, newTextPrinter(o, stdout), views, stdout); err != nil {
		fmt.Fprintf(stderr, "goxio_stats: %v\n", err)
		return 1
	}
	return 0
}

// emit prints one cycle in the chosen format.
func emit(o *options, p *textPrinter, views []procView, stdout io.Writer) error {
	switch {
	case o.json:
		return writeJSON(o, views, stdout)
	case o.prometheus:
		_, err := io.WriteString(stdout, prometheusText(views))
		return err
	}
	p.print(views)
	return p.err
}

// jsonDoc is one --json document.
type jsonDoc struct {
	Time      time.Time         `json:"time"`
	Details   string            `json:"details"` // "totals" or "deltas" (per second)
	Interval  float64           `json:"interval_seconds"`
	Processes []*stats.Snapshot `json:"processes"`
}

// writeJSON prints one JSON document on one line.
func writeJSON(o *options, views []procView, w io.Writer) error {
	doc := jsonDoc{Time: time.Now(), Details: "totals", Interval: o.interval.Seconds(),
		Processes: []*stats.Snapshot{}}
	if o.details == detailsDeltas {
		doc.Details = "deltas"
	}
	for _, v := range views {
		doc.Processes = append(doc.Processes, v.snap)
	}
	if err := json.NewEncoder(w).Encode(doc); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	return nil
}
