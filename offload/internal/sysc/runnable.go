package sysc

import (
	"bytes"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/internal/procstat"
)

// Runnable is the number of threads of the machine that run or wait for a CPU now: the
// numerator of the fourth field of /proc/loadavg ("0.50 0.40 0.30 3/120 4567"). ok is false
// when the file cannot be read or parsed.
func Runnable() (n int, ok bool) {
	var buf [128]byte
	b, err := procstat.ReadPath("/proc/loadavg", buf[:])
	if err != nil {
		return 0, false
	}
	return parseRunnable(b)
}

// RunnableAt is Runnable read from fd, a descriptor of /proc/loadavg (one pread).
func RunnableAt(fd int) (n int, ok bool) {
	var buf [128]byte
	for {
		m, errno := pread(fd, buf[:], 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 || m <= 0 {
			return 0, false
		}
		return parseRunnable(buf[:m])
	}
}

// parseRunnable reads the runnable count out of /proc/loadavg text. It allocates nothing: the
// crowd looks (offload/internal/wait) read the file thousands of times a second on a busy
// machine, and bytes.Fields' slice (which moved the read buffer to the heap with it) made the
// garbage collector run every second or two under sockperf under-load.
func parseRunnable(b []byte) (int, bool) {
	for range 3 { // the three load averages
		b = bytes.TrimLeft(b, blanks)
		i := bytes.IndexAny(b, blanks)
		if i <= 0 {
			return 0, false
		}
		b = b[i:]
	}
	r, _, found := bytes.Cut(bytes.TrimLeft(b, blanks), []byte{'/'})
	if !found || len(r) == 0 || r[0] < '0' || r[0] > '9' {
		return 0, false
	}
	n, err := strconv.Atoi(string(r)) // a short string that does not escape: on the stack
	if err != nil {
		return 0, false
	}
	return n, true
}

// blanks separate the fields of /proc/loadavg.
const blanks = " \t\n"

// OnlineCPUs is the number of CPUs the machine has online (/sys/devices/system/cpu/online, a
// list of ranges such as "0-3,6"); ok is false when it cannot be read or parsed.
func OnlineCPUs() (n int, ok bool) {
	var buf [256]byte
	b, err := procstat.ReadPath("/sys/devices/system/cpu/online", buf[:])
	if err != nil {
		return 0, false
	}
	return parseCPUList(b)
}

// parseCPUList counts the CPUs of a kernel CPU list ("0-3,6\n").
func parseCPUList(b []byte) (int, bool) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return 0, false
	}
	n := 0
	for _, part := range bytes.Split(b, []byte{','}) {
		lo, hi, isRange := bytes.Cut(part, []byte{'-'})
		a, err := strconv.Atoi(string(lo))
		if err != nil || a < 0 {
			return 0, false
		}
		z := a
		if isRange {
			if z, err = strconv.Atoi(string(hi)); err != nil || z < a {
				return 0, false
			}
		}
		n += z - a + 1
	}
	return n, true
}

// AllowedCPUs is the number of CPUs the calling thread may run on (sched_getaffinity); ok is
// false when it cannot be read.
func AllowedCPUs() (n int, ok bool) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return 0, false
	}
	return set.Count(), true
}
