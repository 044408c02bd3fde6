package offload

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/sysc"
)

// The Go runtime's own descriptors.
//
// The runtime's netpoller is an epoll fd and an eventfd, opened by the runtime itself (raw
// epoll_create1 and eventfd2, at the lowest free numbers) the first time anything needs it: any
// Go timer (the background scavenger arms one after a few garbage collections), an os.File on a
// pollable descriptor (os' init registers fds 0-2 when one of them is non-blocking). It cannot
// be kept off (golang/go#32009), and its numbers cannot be chosen or changed afterwards (the
// runtime keeps them in unexported variables). So the engine starts it deliberately, once, when
// it starts, at a moment when every free number below the internal range is taken by a
// temporary copy of /dev/null: the runtime's two descriptors then land at the bottom of the
// internal range, are marked internal in the fd table (invisible to close, dup, dup2,
// close_range, fcntl and /proc/self/fd walkers that go through the library), and the fillers are
// closed. Later timers, os.File values and libraries that use them find the netpoller running
// and open nothing more of the runtime's.

// netpollerMaxBase bounds where the runtime's descriptors go: filling costs a dup per free
// number below it (about 0.15 µs, 1.2 µs where system calls are slow; the fillers go back in a
// few close_range calls), so a soft RLIMIT_NOFILE of a million (a program's own, which the
// engine keeps: shim/nofile.go undoes the Go runtime's raise of it) must not mean a million
// fillers; 4032 costs about 0.6 ms (5 ms where system calls are slow) and a program sees the two
// numbers taken only once it holds 4032 fds at a time. The preload library grows the fd table to
// hold them just before the load, while the process has one thread or few (goxio_fdt_reserve in
// shim/preload/fdtable.c, same formula): growing a table that threads share waits for an RCU
// grace period (milliseconds).
const netpollerMaxBase = 1<<12 - 64

// netpollerBase returns the number the runtime's epoll fd gets: near the top of the soft fd
// limit, like the engine's other internal fds (moveHigh), but at most netpollerMaxBase.
func netpollerBase() int {
	base := 1000
	if soft, ok := sysc.FileLimit(); ok && soft > 128 {
		base = int(min(soft, FDTableSize) - 64)
	}
	return min(base, netpollerMaxBase)
}

// ErrNetpollerRunning is returned by StartNetpoller when the runtime's netpoller was already
// running (started before the engine, e.g. by os' init on a non-blocking fd 0-2): its
// descriptors stay where the runtime put them, marked internal (the program cannot close them,
// but its next descriptors skip their numbers).
var ErrNetpollerRunning = errors.New("the Go runtime's netpoller was already running")

// StartNetpoller starts the Go runtime's netpoller with its epoll fd and eventfd at the bottom
// of the internal range and marks both internal in table; it returns their numbers. Call it once,
// when the engine starts, before anything in the engine may arm a Go timer or open an os.File.
//
// While it runs (well under a millisecond per thousand free numbers), free numbers below the
// base are held by /dev/null copies marked internal: a program thread that creates a descriptor
// meanwhile gets a higher number than the lowest free one, as it would if another of its threads
// had just opened one; a program thread that closes or close_ranges descriptors meanwhile cannot
// close a filler (it is internal), so closing the fillers afterwards never closes a number the
// program was handed.
func StartNetpoller(table FDTable) (epfd, evfd int, err error) {
	base := netpollerBase()
	if epfd, evfd := findNetpoller(); epfd >= 0 {
		// Too late to place them; at least the program cannot close them. (A loader that held
		// the free numbers below base while the runtime started has placed them already.)
		table.Set(epfd, FlagInternal)
		table.Set(evfd, FlagInternal)
		if min(epfd, evfd) >= base {
			return epfd, evfd, nil
		}
		return epfd, evfd, fmt.Errorf("start netpoller: epoll fd %d, eventfd %d: %w", epfd, evfd, ErrNetpollerRunning)
	}
	release, err := holdBelow(table, base)
	if err != nil {
		return -1, -1, fmt.Errorf("start netpoller: %w", err)
	}
	defer release()
	if !isFree(base) || !isFree(base+1) {
		return -1, -1, fmt.Errorf("start netpoller: descriptors %d and %d are taken: %w", base, base+1, unix.EBUSY)
	}
	// Any Go timer makes the runtime open its netpoller (runtime.netpollGenericInit); a timer
	// with a function is added to the runtime's heap at once (a channel timer only when
	// something waits on its channel).
	time.AfterFunc(time.Hour, func() {}).Stop()
	if !isPoller(base, "eventpoll") || !isPoller(base+1, "eventfd") {
		return -1, -1, fmt.Errorf("start netpoller: a timer opened no epoll fd at %d: %w", base, ErrNetpollerRunning)
	}
	table.Set(base, FlagInternal)
	table.Set(base+1, FlagInternal)
	return base, base + 1, nil
}

// isFree reports whether no descriptor has number fd.
func isFree(fd int) bool {
	_, errno := sysc.FcntlInt(fd, unix.F_GETFD, 0)
	return errno == unix.EBADF
}

// isPoller reports whether fd is an anonymous inode of the kind given ("eventpoll", "eventfd").
func isPoller(fd int, kind string) bool {
	return sysc.FDLink(fd) == "anon_inode:["+kind+"]"
}

// holdMu serializes the holders of the low numbers (StartNetpoller, OpenHigh).
var holdMu sync.Mutex

// holdBelow takes every free number below base with a /dev/null copy marked internal in table
// and returns the function that gives them back. holdMu is held from the call to the release.
func holdBelow(table FDTable, base int) (release func(), err error) {
	holdMu.Lock()
	null, err := sysc.Open("/dev/null", unix.O_RDONLY)
	if err != nil {
		holdMu.Unlock()
		return nil, fmt.Errorf("hold descriptors: open /dev/null: %w", err)
	}
	// Grow the process's fd table to hold base+1 in one step when the shim has not (tests): with
	// threads sharing the table, each growth waits for an RCU grace period (expand_fdtable), and
	// filling number by number would grow it at every power of two.
	if fd, errno := sysc.FcntlInt(null, unix.F_DUPFD_CLOEXEC, base+2); errno == 0 {
		sysc.Close(fd)
	}
	fillers := make([]int, 0, 64)
	release = func() {
		closeRuns(table, fillers)
		holdMu.Unlock()
	}
	if null < base {
		table.Set(null, FlagInternal)
		fillers = append(fillers, null)
	}
	for {
		fd, errno := sysc.FcntlInt(null, unix.F_DUPFD_CLOEXEC, 0)
		if errno != 0 {
			release()
			return nil, fmt.Errorf("hold descriptors below %d: %w", base, errno)
		}
		if fd >= base {
			sysc.Close(fd)
			break
		}
		table.Set(fd, FlagInternal)
		fillers = append(fillers, fd)
	}
	if null >= base {
		sysc.Close(null)
	}
	return release, nil
}

// OpenHigh runs open while every free number below the internal range is held (as
// StartNetpoller does), so that every descriptor open makes, kept or short-lived, lands in the
// internal range, never at a number the program expects to get: for libraries that open
// descriptors themselves (the netlink socket of vishvananda/netlink, cilium/ebpf's maps, program
// and link). The caller marks the kept ones internal. open must not call OpenHigh.
func OpenHigh(table FDTable, open func() error) error {
	release, err := holdBelow(table, netpollerBase())
	if err != nil {
		return fmt.Errorf("open high: %w", err)
	}
	defer release()
	return open()
}

// closeRuns gives back the fillers (in the order they were taken, mostly ascending): each run of
// consecutive numbers, unmarked in table, goes in one close_range call, so that giving back
// thousands costs a few system calls (a close each cost as much as the dup that took the number).
// A run holds fillers only: a descriptor the program made meanwhile took a number no filler
// holds, which ends the run.
func closeRuns(table FDTable, fillers []int) {
	for i := 0; i < len(fillers); {
		j := i + 1
		for j < len(fillers) && fillers[j] == fillers[j-1]+1 {
			j++
		}
		for _, fd := range fillers[i:j] {
			table.Set(fd, 0)
		}
		if sysc.CloseRange(fillers[i], fillers[j-1]) != 0 {
			for _, fd := range fillers[i:j] {
				sysc.Close(fd)
			}
		}
		i = j
	}
}
