package wait

import (
	"sync"
	"sync/atomic"

	"github.com/goxio/goxio/offload/internal/sysc"
)

// Crowding. A polling thread holds its CPU; when the machine has more runnable threads than
// CPUs, every other thread that wants one waits for a spinner's time slice to end (milliseconds),
// and a yield does not hand the CPU over where the waiting thread is queued on another CPU. So a
// wait does not spin while the machine is crowded: it sleeps at once, its CPU goes idle and the
// scheduler gives it to a waiting thread at once; the data's producer wakes it (doorbell), as a
// kernel socket's sleeper is woken. Measured with sockperf under-load (50,000 msg/s, a reply every
// 10; sockperf's sender paces by spinning, so the server's spinning receive and the client's
// replies receiver want the 2 CPUs with it) on the loaded 2-CPU test machine: a median of about
// 1 ms with the receive spinning against 4-15 us when it sleeps at once (kernel 2-19 us).
//
// Crowded is the machine's count of runnable threads (/proc/loadavg, about 2 us to read) above
// its online CPUs, looked at again at most every crowdTTL by one thread at a time; a spinning
// wait looks at it when it starts and every sysc.YieldEvery polls.

// crowdTTL is how long a look at the runnable count stands.
const crowdTTL = 100e3 // ns

var crowd struct {
	at      atomic.Int64 // sysc.Nanotime of the last look; 0: none
	yes     atomic.Bool  // the last look found more runnable threads than CPUs
	looking atomic.Bool  // a thread reads /proc/loadavg
}

// onlineCPUs is the machine's CPUs (0: unknown, never crowded).
var onlineCPUs = sync.OnceValue(func() int {
	n, ok := sysc.OnlineCPUs()
	if !ok {
		return 0
	}
	return n
})

// Crowded reports whether the machine has more runnable threads than CPUs, as of a look at most
// crowdTTL older than now (a sysc.Nanotime read).
func Crowded(now int64) bool {
	if now-crowd.at.Load() < crowdTTL || !crowd.looking.CompareAndSwap(false, true) {
		return crowd.yes.Load()
	}
	defer crowd.looking.Store(false)
	cpus := onlineCPUs()
	n, ok := sysc.Runnable()
	crowd.yes.Store(ok && cpus > 0 && n > cpus)
	crowd.at.Store(now)
	return crowd.yes.Load()
}
