// Command goxio_stats shows the statistics of programs running under goxio,
// like vma_stats does for VMA: per-socket offloaded and kernel traffic, the
// transport each socket uses and why, iomux, rings, buffer pools, multicast
// groups, and a netstat-like view of every goxio process. It can also zero
// the counters, change a process's log level and ask it to dump a socket's
// state, through the process's statistics segment.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/goxio/goxio/internal/version"
	"github.com/goxio/goxio/stats"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// versionString is the tool's version line.
func versionString() string {
	return fmt.Sprintf("%s %s, stats layout %d", version.Name, version.Version, stats.LayoutVersion)
}

// run is main without the process exit: it returns the exit status
// (0 done, 1 failure, 2 usage error).
func run(args []string, stdout io.Writer, stderr *os.File) int {
	o, err := parseOptions(args)
	if err != nil {
		fmt.Fprintf(stderr, "goxio_stats: %s\n", strings.TrimSuffix(err.Error(), ": "+errUsage.Error()))
		fmt.Fprintf(stderr, usageText, defaultDir())
		return 2
	}
	if o.help {
		fmt.Fprintf(stdout, usageText, o.dir)
		return 0
	}
	if o.version {
		fmt.Fprintf(stdout, "goxio_stats: %s\n", versionString())
		return 0
	}

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(stop)

	cleanStale(o, stderr)
	if o.serve != "" {
		if err := serve(o, stderr, stop); err != nil {
			fmt.Fprintf(stderr, "goxio_stats: %v\n", err)
			return 1
		}
		return 0
	}
	if o.view == viewNetstat {
		targets, err := openAll(o, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "goxio_stats: %v\n", err)
			return 1
		}
		defer closeAll(targets)
		return reportAll(o, targets, stdout, stderr)
	}

	pid, err := choosePid(o)
	if err != nil {
		fmt.Fprintf(stderr, "goxio_stats: %v\n", err)
		return 1
	}
	t, err := openTarget(o, pid)
	if err != nil {
		fmt.Fprintf(stderr, "goxio_stats: %v\n", err)
		return 1
	}
	defer t.seg.Close()

	if status, done := applyCommands(o, t, stderr); done {
		return status
	}
	return loop(o, t, stdout, stderr, stop)
}

func closeAll(ts []*target) {
	for _, t := range ts {
		t.seg.Close()
	}
}

// applyCommands runs -Z, -l, -D and -S against the process. done is true
// when the tool should exit afterwards (-S, like vma_stats, or a failure).
func applyCommands(o *options, t *target, stderr *os.File) (status int, done bool) {
	if o.zero {
		keep := func(fd int) bool { return o.sockets.has(fd) }
		if o.sockets == nil {
			keep = nil
		}
		if err := t.seg.Zero(keep); err != nil {
			fmt.Fprintf(stderr, "goxio_stats: zero counters of process %d: %v\n", t.pid, err)
			return 1, true
		}
		fmt.Fprintf(stderr, "goxio_stats: counters of process %d zeroed\n", t.pid)
	}
	type cmd struct {
		kind       stats.CommandKind
		a1, a2     int64
		what, done string
	}
	var cmds []cmd
	if o.logLevel != noLevel {
		cmds = append(cmds, cmd{stats.CmdSetLogLevel, int64(o.logLevel), 0,
			"set log level", "log level set to " + logLevelName(o.logLevel)})
	}
	if o.logDetails >= 0 {
		cmds = append(cmds, cmd{stats.CmdSetLogDetails, int64(o.logDetails), 0,
			"set log details", fmt.Sprintf("log details level set to %d", o.logDetails)})
	}
	if o.fdDump != -2 {
		fd, what := int64(o.fdDump), fmt.Sprintf("fd %d", o.fdDump)
		if o.fdDump == 0 {
			fd, what = -1, "all fds"
		}
		cmds = append(cmds, cmd{stats.CmdDumpFD, fd, int64(o.fdDumpLevel),
			"dump " + what, fmt.Sprintf("dumped %s to its log at level %s", what, logLevelName(o.fdDumpLevel))})
	}
	for _, c := range cmds {
		if err := sendCommand(t, c.kind, c.a1, c.a2, o.ackTimeout); err != nil {
			fmt.Fprintf(stderr, "goxio_stats: %s in process %d: %v\n", c.what, t.pid, err)
			return 1, true
		}
		fmt.Fprintf(stderr, "goxio_stats: process %d %s\n", t.pid, c.done)
	}
	if o.fdDump != -2 {
		return 0, true
	}
	return 0, false
}

// sendCommand posts one command and waits for the process to apply it.
func sendCommand(t *target, kind stats.CommandKind, a1, a2 int64, timeout time.Duration) error {
	c, err := t.seg.Post(kind, a1, a2)
	if err != nil {
		if errors.Is(err, stats.ErrReadOnly) {
			return fmt.Errorf("the stats segment is read-only for this user: %w", err)
		}
		return err
	}
	res, err := c.Wait(timeout)
	if err != nil {
		return fmt.Errorf("%w within %v (the process's progress engine did not poll; is it stopped?)",
			stats.ErrCommandTimeout, timeout)
	}
	switch res {
	case stats.ResultApplied:
		return nil
	case stats.ResultNoEngine:
		return errors.New("the process has no command handler")
	default:
		return errors.New("the process rejected the command")
	}
}
