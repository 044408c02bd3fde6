package offload

import (
	"bytes"
	"strconv"

	"github.com/goxio/goxio/offload/internal/sysc"
)

// findNetpoller finds the runtime's epoll fd and eventfd among the process's descriptors: an
// epoll fd that watches an eventfd with, as its event data, an address in the
// read-write data mappings of the engine's own image (the runtime's netpollEventFd variable; a
// program's registrations point into the program's memory). It returns -1, -1 when the netpoller
// is not running. Only raw system calls: an os.File would start the netpoller.
func findNetpoller() (epfd, evfd int) {
	lo, hi, ok := imageDataRange(imageDataAddr())
	if !ok {
		return -1, -1
	}
	for _, fd := range openFDList() {
		if !isPoller(fd, "eventpoll") {
			continue
		}
		info, err := readSmall("/proc/self/fdinfo/" + strconv.Itoa(fd))
		if err != nil {
			continue
		}
		for _, line := range bytes.Split(info, []byte("\n")) {
			f := bytes.Fields(line)
			// "tfd: N events: E data: D ..."
			if len(f) < 6 || string(f[0]) != "tfd:" || string(f[4]) != "data:" {
				continue
			}
			tfd, err1 := strconv.Atoi(string(f[1]))
			data, err2 := strconv.ParseUint(string(f[5]), 16, 64)
			if err1 != nil || err2 != nil || uintptr(data) < lo || uintptr(data) >= hi {
				continue
			}
			if isPoller(tfd, "eventfd") {
				return fd, tfd
			}
		}
	}
	return -1, -1
}

// openFDList returns the process's open descriptors as /proc/self/fd lists them (read with
// getdents; the directory's own descriptor is left out).
func openFDList() []int {
	names, dirfd, _ := sysc.DirNames("/proc/self/fd")
	var fds []int
	for _, name := range names {
		if fd, err := strconv.Atoi(name); err == nil && fd != dirfd {
			fds = append(fds, fd)
		}
	}
	return fds
}

// imageDataRange returns the span of read-write mappings around addr that are contiguous with
// the one holding it (the image's data, its bss and the bss's anonymous tail).
func imageDataRange(addr uintptr) (lo, hi uintptr, ok bool) {
	maps, err := readSmall("/proc/self/maps")
	if err != nil {
		return 0, 0, false
	}
	type span struct {
		lo, hi uintptr
		rw     bool
	}
	var spans []span
	at := -1
	for _, line := range bytes.Split(maps, []byte("\n")) {
		f := bytes.Fields(line)
		if len(f) < 2 {
			continue
		}
		a, b, found := bytes.Cut(f[0], []byte("-"))
		if !found {
			continue
		}
		s, err1 := strconv.ParseUint(string(a), 16, 64)
		e, err2 := strconv.ParseUint(string(b), 16, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		sp := span{uintptr(s), uintptr(e), bytes.HasPrefix(f[1], []byte("rw"))}
		if addr >= sp.lo && addr < sp.hi {
			at = len(spans)
		}
		spans = append(spans, sp)
	}
	if at < 0 {
		return 0, 0, false
	}
	i, j := at, at
	for i > 0 && spans[i-1].rw && spans[i-1].hi == spans[i].lo {
		i--
	}
	for j+1 < len(spans) && spans[j+1].rw && spans[j+1].lo == spans[j].hi {
		j++
	}
	return spans[i].lo, spans[j].hi, true
}

// readSmall reads a /proc file whole with raw system calls.
func readSmall(path string) ([]byte, error) { return sysc.ReadFile(path) }
