package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/goxio/goxio/stats"
)

// Command-line options, spelled like vma_stats: short letters with getopt
// conventions (-p 12, -p12, -Fz), long names (--pid=12, --pid 12).

// Views (-v).
const (
	viewBasic   = 1 // per fd: offloaded vs os packets, bytes, eagain, errors, poll%
	viewMedium  = 2 // plus receive queue and iomux
	viewFull    = 3 // everything: sockets, iomux, rings, pools, global
	viewGroups  = 4 // multicast group membership
	viewNetstat = 5 // netstat-like table of every goxio process's sockets
)

// Details modes (-d).
const (
	detailsTotals = 1
	detailsDeltas = 2
)

// options are the parsed command line.
type options struct {
	pid         int    // -p: 0 = find the process
	dir         string // -k
	name        string // -n: program name
	forbidClean bool   // -F: keep stale segments
	interval    time.Duration
	cycles      int // 0 = forever
	cyclesSet   bool
	view        int
	details     int
	fdDump      int // -S: -2 = not asked, 0 = all fds (vma_stats spelling)
	fdDumpLevel int
	zero        bool
	logLevel    int // -l: noLevel = not asked
	logDetails  int // -D: -1 = not asked
	sockets     *fdSet
	version     bool
	help        bool
	json        bool
	prometheus  bool
	serve       string
	ackTimeout  time.Duration
}

const noLevel = -100

// errUsage marks a command-line error: print it and the usage, exit 2.
var errUsage = errors.New("usage error")

func usageErr(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), errUsage)
}

// defaultDir is -k's default: the library's VMA_STATS_SHMEM_DIR when set in
// the environment (GOXIO_ spelling first), else /tmp.
func defaultDir() string {
	for _, k := range []string{"GOXIO_STATS_SHMEM_DIR", "VMA_STATS_SHMEM_DIR"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return stats.DefaultDir
}

// optSpec describes one option: its long name and whether it takes an
// argument.
type optSpec struct {
	short byte
	long  string
	arg   bool
}

var optSpecs = []optSpec{
	{'p', "pid", true}, {'k', "directory", true}, {'n', "name", true}, {'f', "find_pid", false},
	{'F', "forbid_clean", false}, {'i', "interval", true}, {'c', "cycles", true}, {'v', "view", true},
	{'d', "details", true}, {'S', "fd_dump", true}, {'z', "zero", false}, {'Z', "zero", false},
	{'l', "log_level", true}, {'D', "details_level", true}, {'s', "sockets", true},
	{'V', "version", false}, {'h', "help", false}, {'?', "", false},
	{0, "json", false}, {0, "prometheus", false}, {0, "serve", true}, {0, "ack_timeout", true},
}

func findShort(c byte) (optSpec, bool) {
	for _, o := range optSpecs {
		if o.short == c {
			return o, true
		}
	}
	return optSpec{}, false
}

func findLong(name string) (optSpec, bool) {
	name = strings.ReplaceAll(name, "-", "_")
	for _, o := range optSpecs {
		if o.long == name {
			return o, true
		}
	}
	return optSpec{}, false
}

// parseOptions parses args (without the program name).
func parseOptions(args []string) (*options, error) {
	o := &options{
		dir:         defaultDir(),
		interval:    time.Second,
		view:        viewBasic,
		details:     detailsTotals,
		fdDump:      -2,
		fdDumpLevel: stats.LogInfo,
		logLevel:    noLevel,
		logDetails:  -1,
		ackTimeout:  3 * time.Second,
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			if i+1 < len(args) {
				return nil, usageErr("unexpected argument %q", args[i+1])
			}
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			return nil, usageErr("unexpected argument %q", a)
		}
		// Collect (spec, value) pairs from this argument.
		type item struct {
			spec optSpec
			val  string
		}
		var items []item
		if strings.HasPrefix(a, "--") {
			name, val, hasVal := strings.Cut(a[2:], "=")
			spec, ok := findLong(name)
			if !ok {
				return nil, usageErr("unknown option --%s", name)
			}
			if spec.arg && !hasVal {
				if i+1 >= len(args) {
					return nil, usageErr("option --%s needs a value", name)
				}
				i++
				val = args[i]
			} else if !spec.arg && hasVal {
				return nil, usageErr("option --%s takes no value", name)
			}
			items = append(items, item{spec, val})
		} else {
			for j := 1; j < len(a); j++ {
				spec, ok := findShort(a[j])
				if !ok {
					return nil, usageErr("unknown option -%c", a[j])
				}
				if !spec.arg {
					items = append(items, item{spec, ""})
					continue
				}
				val := a[j+1:]
				if val == "" {
					if i+1 >= len(args) {
						return nil, usageErr("option -%c needs a value", a[j])
					}
					i++
					val = args[i]
				}
				items = append(items, item{spec, val})
				break
			}
		}
		for _, it := range items {
			if err := o.set(it.spec, it.val); err != nil {
				return nil, err
			}
			// -S FD [LEVEL]: an optional level follows as its own argument.
			if it.spec.long == "fd_dump" && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				lvl, ok := parseLogLevel(args[i+1])
				if !ok {
					return nil, usageErr("-S: invalid log level %q", args[i+1])
				}
				o.fdDumpLevel = lvl
				i++
			}
		}
	}
	if o.prometheus && o.json {
		return nil, usageErr("--json and --prometheus exclude each other")
	}
	if o.prometheus && !o.cyclesSet {
		o.cycles = 1
	}
	return o, nil
}

// set applies one option.
func (o *options) set(spec optSpec, val string) error {
	num := func(min, max int) (int, error) {
		n, err := strconv.ParseInt(val, 0, 64)
		if err != nil || n < int64(min) || n > int64(max) {
			return 0, usageErr("invalid value %q for --%s (want %d..%d)", val, spec.long, min, max)
		}
		return int(n), nil
	}
	var err error
	switch spec.long {
	case "pid":
		o.pid, err = num(1, 1<<22)
	case "directory":
		o.dir = val
	case "name":
		o.name = val
	case "find_pid":
		o.pid, o.name = 0, ""
	case "forbid_clean":
		o.forbidClean = true
	case "interval":
		f, perr := strconv.ParseFloat(val, 64)
		if perr != nil || f <= 0 || f > 86400 {
			return usageErr("invalid interval %q (seconds, > 0)", val)
		}
		o.interval = time.Duration(f * float64(time.Second))
	case "cycles":
		o.cycles, err = num(0, 1<<31-1)
		o.cyclesSet = true
	case "view":
		o.view, err = num(viewBasic, viewNetstat)
	case "details":
		o.details, err = num(detailsTotals, detailsDeltas)
	case "fd_dump":
		o.fdDump, err = num(0, 1<<31-1)
	case "zero":
		o.zero = true
	case "log_level":
		lvl, ok := parseLogLevel(val)
		if !ok {
			return usageErr("invalid log level %q (none, panic, error, warn, info, details, debug, fine, finer, all or -1..8)", val)
		}
		o.logLevel = lvl
	case "details_level":
		o.logDetails, err = num(0, 3)
	case "sockets":
		o.sockets, err = parseFDSet(val)
	case "version":
		o.version = true
	case "help", "":
		o.help = true
	case "json":
		o.json = true
	case "prometheus":
		o.prometheus = true
	case "serve":
		o.serve = val
	case "ack_timeout":
		d, perr := time.ParseDuration(val)
		if perr != nil || d <= 0 {
			return usageErr("invalid --ack_timeout %q (a duration like 3s)", val)
		}
		o.ackTimeout = d
	}
	return err
}

var logLevelNames = []string{"panic", "error", "warn", "info", "details", "debug", "fine", "finer", "all"}

// parseLogLevel accepts VMA log level names or numbers (-1 none .. 8 all).
func parseLogLevel(s string) (int, bool) {
	s = strings.ToLower(s)
	switch s {
	case "none":
		return stats.LogNone, true
	case "warning":
		return stats.LogWarn, true
	case "func":
		return stats.LogFiner, true
	case "func_all", "funcall":
		return stats.LogAll, true
	}
	for i, n := range logLevelNames {
		if s == n {
			return i, true
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < stats.LogNone || n > stats.LogAll {
		return 0, false
	}
	return n, true
}

// logLevelName is the inverse of parseLogLevel.
func logLevelName(l int) string {
	if l == stats.LogNone {
		return "none"
	}
	if l >= 0 && l < len(logLevelNames) {
		return logLevelNames[l]
	}
	return strconv.Itoa(l)
}

// fdSet is the -s selection: a list of fds and ranges ("4-16,20").
type fdSet struct {
	ranges [][2]int
}

func parseFDSet(s string) (*fdSet, error) {
	set := &fdSet{}
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a < 0 || b < 0 {
			return nil, usageErr("invalid --sockets %q (format: 4-16 or 1,9 or a combination)", s)
		}
		set.ranges = append(set.ranges, [2]int{min(a, b), max(a, b)})
	}
	return set, nil
}

// has reports whether fd is selected (a nil set selects everything).
func (f *fdSet) has(fd int) bool {
	if f == nil {
		return true
	}
	for _, r := range f.ranges {
		if fd >= r[0] && fd <= r[1] {
			return true
		}
	}
	return false
}

const usageText = `goxio statistics (vma_stats compatible)
Usage:
	goxio_stats [-p pid] [-k directory] [-v view] [-d details] [-i interval] [-c cycles]

Defaults:
	find_pid=enabled, directory="%s", view=1, details=1, interval=1, cycles=0 (forever)

Options:
  -p, --pid=<pid>               Show statistics for the process with pid <pid>
  -k, --directory=<directory>   Shared memory directory of the segments (VMA_STATS_SHMEM_DIR)
  -n, --name=<application>      Show statistics for the application named <application>
  -f, --find_pid                Find the goxio process running (default)
  -F, --forbid_clean            Do not remove segments of processes that are gone
  -i, --interval=<n>            Print a report every <n> seconds
  -c, --cycles=<n>              Print <n> reports and exit, 0 = forever (default)
  -v, --view=<1|2|3|4|5>        1 basic, 2 extra (queues, iomux), 3 full (rings, pools, global),
                                4 multicast groups, 5 all sockets of all processes like 'netstat -tunaep'
  -d, --details=<1|2>           1 totals, 2 per-second deltas
  -S, --fd_dump=<fd> [<level>]  Dump the state of fd <fd> (0 = all fds) to the process's log at
                                <level> (default info)
  -z, -Z, --zero                Zero the counters (with -s: only those sockets)
  -l, --log_level=<level>       Set the process's log level: none, panic, error, warn, info,
                                details, debug, fine, finer, all
  -D, --details_level=<level>   Set the process's log details level (0..3)
  -s, --sockets=<list|range>    Show only sockets whose fd matches, e.g. 4-16 or 1,9 or both
  -V, --version                 Print the version
  -h, --help                    Print this help
      --json                    Print one JSON document per cycle
      --prometheus              Print Prometheus text exposition (one cycle unless -c)
      --serve=<addr>            Serve /metrics (Prometheus) and /json over HTTP on <addr>
      --ack_timeout=<duration>  How long to wait for the process to apply -l, -D, -S (default 3s)
`
