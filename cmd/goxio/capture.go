package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/conf"
	"github.com/goxio/goxio/offload/capture"
)

// goxio capture: attach to goxio processes, have their taps run a tcpdump filter on the traffic
// of the fast paths, drain the trace rings and write what matched as pcap or pcapng
// (goxio-capture(1)).

// captureOptions are the command's flags.
type captureOptions struct {
	pids       []int
	name       string
	all        bool
	write      string
	snap       int
	count      int
	rotateSecs int
	rotateMB   int
	pcapng     bool
	trigger    string
	pre        int
	stop       string
	split      string
	dumpOS     bool
	bufferKB   int
	sockets    int
	dir        string
	quiet      bool
	filter     string
}

func (o *captureOptions) snapLen() int {
	if o.snap <= 0 || o.snap > capture.MaxSnapLen {
		return capture.MaxSnapLen
	}
	return o.snap
}

// ringSize is -B rounded up to a power of two within the library's limits.
func (o *captureOptions) ringSize() uint64 {
	n := uint64(capture.MinRingSize)
	for n < uint64(o.bufferKB)*1024 && n < capture.MaxRingSize {
		n <<= 1
	}
	return n
}

// pidList is a repeatable -p.
type pidList []int

func (p *pidList) String() string { return fmt.Sprint(*p) }
func (p *pidList) Set(s string) error {
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return fmt.Errorf("not a pid: %q", f)
		}
		*p = append(*p, n)
	}
	return nil
}

const captureUsage = `usage: goxio capture (-p PID... | -n NAME | --all) [options] [FILTER EXPRESSION]`

func parseCaptureArgs(args []string, stderr io.Writer, environ []string) (*captureOptions, error) {
	o := &captureOptions{}
	fs := flag.NewFlagSet("goxio capture", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, captureUsage); fs.PrintDefaults() }
	fs.Var((*pidList)(&o.pids), "p", "capture process `PID` (repeatable, or a comma-separated list)")
	fs.StringVar(&o.name, "n", "", "capture the processes running program `NAME`")
	fs.BoolVar(&o.all, "all", false, "capture every goxio process of this user, including those that start later")
	fs.StringVar(&o.write, "w", "", "write packets to `FILE` (pcap; - for standard output) instead of printing them")
	fs.IntVar(&o.snap, "s", 0, "copy at most `SNAPLEN` bytes of each packet (0: all)")
	fs.IntVar(&o.count, "c", 0, "stop after `COUNT` packets written")
	fs.IntVar(&o.rotateSecs, "G", 0, "start a new file every `SECONDS` (FILE, FILE.1, FILE.2...)")
	fs.IntVar(&o.rotateMB, "C", 0, "start a new file when the current one reaches `MB` million bytes")
	fs.BoolVar(&o.pcapng, "pcapng", false, "write pcapng: an interface per process and transport, pid, fd and transport in each packet's comment")
	fs.StringVar(&o.trigger, "trigger", "", "record nothing until a packet matches `EXPR`")
	fs.IntVar(&o.pre, "pre", 0, "with --trigger, also write the last `N` matching packets before it fired")
	fs.StringVar(&o.stop, "stop", "", "stop after the first packet that matches `EXPR`")
	fs.StringVar(&o.split, "split", "", "one file per source address (src), multicast group (group) or socket (socket)")
	fs.BoolVar(&o.dumpOS, "dump-os", false, "also capture what engine sockets send and receive through the kernel")
	fs.IntVar(&o.bufferKB, "B", 4096, "trace ring of each process, in `KiB` (a power of two is used)")
	fs.IntVar(&o.sockets, "sockets", 1024, "per-socket counters for fds below `N`")
	fs.StringVar(&o.dir, "k", "", "statistics segment `DIRECTORY` (default: VMA_STATS_SHMEM_DIR)")
	fs.BoolVar(&o.quiet, "q", false, "no progress line and no final counts")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	o.filter = strings.Join(fs.Args(), " ")
	n := 0
	for _, b := range []bool{len(o.pids) > 0, o.name != "", o.all} {
		if b {
			n++
		}
	}
	switch {
	case n != 1:
		return nil, errors.New("give exactly one of -p, -n and --all")
	case o.split != "" && o.split != "src" && o.split != "group" && o.split != "socket":
		return nil, fmt.Errorf("--split %q: want src, group or socket", o.split)
	case o.split != "" && (o.write == "" || o.write == "-"):
		return nil, errors.New("--split needs -w FILE")
	case (o.rotateSecs > 0 || o.rotateMB > 0) && (o.write == "" || o.write == "-"):
		return nil, errors.New("-G and -C need -w FILE")
	case o.pre > 0 && o.trigger == "":
		return nil, errors.New("--pre needs --trigger")
	case o.snap < 0 || o.count < 0 || o.pre < 0 || o.rotateSecs < 0 || o.rotateMB < 0 || o.bufferKB < 0:
		return nil, errors.New("negative numbers are not allowed")
	}
	if o.dir == "" {
		p, _ := conf.Load(environ)
		o.dir = p.StatsShmemDir
	}
	if o.dir == "" || strings.Contains(o.dir, "%d") {
		return nil, fmt.Errorf("statistics directory %q: give -k DIRECTORY (goxio capture needs the processes' statistics segments)", o.dir)
	}
	return o, nil
}

// captureCmd implements `goxio capture`.
func captureCmd(args []string, stdout, stderr io.Writer, environ []string) int {
	o, err := parseCaptureArgs(args, stderr, environ)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "goxio capture: %v\n%s\n", err, captureUsage)
		}
		return 2
	}
	var progs [3][]bpf.RawInstruction
	for i, e := range []string{o.filter, o.trigger, o.stop} {
		if progs[i], err = compileFilter(e, o.snapLen()); err != nil {
			fmt.Fprintf(stderr, "goxio capture: %v\n", err)
			return 2
		}
	}
	capture.Sweep() // segments of tools killed while their process was idle
	c := &capturer{o: o, progs: progs, out: newOutputs(o, stdout), stderr: stderr, targets: map[int]*target{}, failed: map[int]bool{}}
	return c.run()
}

// capturer is one run of the command.
type capturer struct {
	o       *captureOptions
	progs   [3][]bpf.RawInstruction
	out     *outputs
	stderr  io.Writer
	targets map[int]*target
	failed  map[int]bool // pids whose attach failed (reported once)
	ended   []*target

	fired   bool        // the trigger matched (or there is none)
	pre     []capPacket // the last o.pre matching packets before the trigger
	stopped bool
	written int
	last    struct {
		at      time.Time
		written int
	}
}

func (c *capturer) run() int {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	c.fired = c.o.trigger == ""
	if err := c.out.start(); err != nil {
		fmt.Fprintf(c.stderr, "goxio capture: %v\n", err)
		return 1
	}
	c.scan()
	for _, pid := range c.o.pids {
		if c.targets[pid] == nil && !c.failed[pid] {
			fmt.Fprintf(c.stderr, "goxio capture: pid %d: no goxio statistics segment in %s (not a goxio process, statistics off, or another directory: -k)\n", pid, c.o.dir)
		}
	}
	if c.o.name != "" && len(c.targets) == 0 {
		fmt.Fprintf(c.stderr, "goxio capture: no goxio process runs %s\n", c.o.name)
	}
	if len(c.targets) == 0 && !c.o.all {
		fmt.Fprintln(c.stderr, "goxio capture: no goxio process to capture (is it running with statistics on, as this user?)")
		return 1
	}
	if !c.o.quiet {
		fmt.Fprintf(c.stderr, "goxio capture: attached to %d process(es)\n", len(c.targets))
	}
	tty := isTerminal(2) && !c.o.quiet && c.o.write != ""
	lastScan, lastProgress := time.Now(), time.Now()
	status := 0
loop:
	for {
		select {
		case <-sig:
			break loop
		default:
		}
		n, err := c.drain()
		if err != nil {
			fmt.Fprintf(c.stderr, "goxio capture: %v\n", err)
			status = 1
			break
		}
		if c.stopped || c.o.count > 0 && c.written >= c.o.count {
			break
		}
		if now := time.Now(); now.Sub(lastScan) >= 100*time.Millisecond {
			lastScan = now
			if c.o.all {
				c.scan()
			}
			c.reap()
			if len(c.targets) == 0 && !c.o.all {
				break
			}
			if err := c.out.flush(); err != nil {
				fmt.Fprintf(c.stderr, "goxio capture: %v\n", err)
				status = 1
				break
			}
		}
		if tty && time.Since(lastProgress) >= time.Second {
			lastProgress = time.Now()
			c.progress()
		}
		if n == 0 {
			time.Sleep(2 * time.Millisecond)
		}
	}
	detachAll(c.targets)
	if _, err := c.drain(); err != nil && status == 0 {
		fmt.Fprintf(c.stderr, "goxio capture: %v\n", err)
		status = 1
	}
	if err := c.out.close(); err != nil {
		fmt.Fprintf(c.stderr, "goxio capture: %v\n", err)
		status = 1
	}
	if tty {
		fmt.Fprintln(c.stderr)
	}
	for _, t := range c.targets {
		c.ended = append(c.ended, t)
	}
	c.report()
	for _, t := range c.ended {
		t.close()
	}
	return status
}

// scan attaches to selected processes not attached yet.
func (c *capturer) scan() {
	entries, err := candidates(c.o)
	if err != nil {
		if !c.failed[0] {
			fmt.Fprintf(c.stderr, "goxio capture: %v\n", err)
		}
		c.failed[0] = true
		return
	}
	for _, e := range entries {
		if c.targets[e.Pid] != nil || c.failed[e.Pid] {
			continue
		}
		t, err := attach(c.o, e.Pid, e.Path, c.progs)
		if err != nil {
			fmt.Fprintf(c.stderr, "goxio capture: %v\n", err)
			c.failed[e.Pid] = true
			continue
		}
		if !c.fired {
			t.seg.SetState(capture.TriggerWaiting)
		} else if c.o.trigger != "" {
			t.seg.SetState(capture.TriggerFired)
		}
		c.targets[e.Pid] = t
		if !c.o.quiet {
			fmt.Fprintf(c.stderr, "goxio capture: capturing pid %d (%s)\n", t.pid, t.name)
		}
	}
}

// reap ends the capture of processes that exited (after draining what they left).
func (c *capturer) reap() {
	for pid, t := range c.targets {
		if t.st.Alive() {
			continue
		}
		t.done = true
		delete(c.targets, pid)
		c.drainOne(t, nil)
		c.ended = append(c.ended, t)
	}
}

// drain takes every process's new records, orders them by time and handles them; it returns
// how many there were.
func (c *capturer) drain() (int, error) {
	var batch []capPacket
	for _, t := range c.targets {
		if err := c.drainOne(t, &batch); err != nil {
			return 0, err
		}
	}
	slices.SortStableFunc(batch, func(a, b capPacket) int {
		switch {
		case a.Time < b.Time:
			return -1
		case a.Time > b.Time:
			return 1
		}
		return 0
	})
	for _, p := range batch {
		if err := c.handle(p); err != nil {
			return 0, err
		}
		if c.stopped || c.o.count > 0 && c.written >= c.o.count {
			break
		}
	}
	return len(batch), nil
}

func (c *capturer) drainOne(t *target, batch *[]capPacket) error {
	var handleErr error
	err := t.seg.Drain(func(r *capture.Record) {
		if batch != nil {
			*batch = append(*batch, capPacket{Record: r, pid: t.pid})
		} else if handleErr == nil {
			handleErr = c.handle(capPacket{Record: r, pid: t.pid})
		}
	})
	if err != nil {
		return fmt.Errorf("process %d: %w", t.pid, err)
	}
	return handleErr
}

// handle applies the trigger, the pre-trigger ring and the stop condition to one record and
// writes it when it is to be written.
func (c *capturer) handle(p capPacket) error {
	if c.stopped || c.o.count > 0 && c.written >= c.o.count {
		return nil
	}
	match := p.Flags&capture.RecMatch != 0
	// A packet between goxio processes shows once, as the wire carries it once: at its sender
	// when the sender is captured too (the same process, or another one), else at its receiver.
	show := match && !(p.Dir == capture.In && c.captured(p.Peer))
	if !c.fired {
		if p.Flags&capture.RecTrigger == 0 {
			if show && c.o.pre > 0 {
				if len(c.pre) == c.o.pre {
					c.pre = c.pre[1:]
				}
				c.pre = append(c.pre, p)
			}
			return nil
		}
		c.fired = true
		for _, t := range c.targets {
			t.seg.SetState(capture.TriggerFired)
		}
		for _, q := range c.pre {
			if err := c.emit(q); err != nil {
				return err
			}
		}
		c.pre = nil
	}
	if show {
		if err := c.emit(p); err != nil {
			return err
		}
	}
	if p.Flags&capture.RecStop != 0 {
		c.stopped = true
		for _, t := range c.targets {
			t.seg.SetState(capture.Stopped)
		}
	}
	return nil
}

// captured reports whether the tool captures process pid.
func (c *capturer) captured(pid int) bool {
	if pid == 0 {
		return false
	}
	if c.targets[pid] != nil {
		return true
	}
	for _, t := range c.ended {
		if t.pid == pid {
			return true
		}
	}
	return false
}

func (c *capturer) emit(p capPacket) error {
	if c.o.count > 0 && c.written >= c.o.count {
		return nil
	}
	c.written++
	return c.out.write(p)
}

// progress rewrites the terminal's progress line: packets written, drops, rate.
func (c *capturer) progress() {
	var dropped uint64
	for _, t := range c.targets {
		dropped += t.seg.Counters().Dropped
	}
	now := time.Now()
	rate := 0.0
	if !c.last.at.IsZero() {
		rate = float64(c.written-c.last.written) / now.Sub(c.last.at).Seconds()
	}
	c.last.at, c.last.written = now, c.written
	fmt.Fprintf(c.stderr, "\rgoxio capture: %d packets, %d dropped, %.0f packets/s   ", c.written, dropped, rate)
}

// report prints the counts per process and per socket.
func (c *capturer) report() {
	if c.o.quiet {
		return
	}
	slices.SortFunc(c.ended, func(a, b *target) int { return a.pid - b.pid })
	for _, t := range c.ended {
		n := t.seg.Counters()
		fmt.Fprintf(c.stderr, "pid %d (%s): %d seen, %d matched, %d captured, %d dropped\n", t.pid, t.name, n.Seen, n.Matched, n.Captured, n.Dropped)
		socks := t.seg.Sockets()
		fds := make([]int, 0, len(socks))
		for fd := range socks {
			fds = append(fds, fd)
		}
		slices.Sort(fds)
		for _, fd := range fds {
			s := socks[fd]
			fmt.Fprintf(c.stderr, "  fd %d: %d seen, %d matched, %d captured, %d dropped\n", fd, s.Seen, s.Matched, s.Captured, s.Dropped)
		}
	}
	fmt.Fprintf(c.stderr, "%d packets written\n", c.written)
}

// isTerminal reports whether fd is a terminal.
func isTerminal(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}
