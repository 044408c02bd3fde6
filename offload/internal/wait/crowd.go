package wait

import (
	"sync"
	"sync/atomic"

	"github.com/goxio/goxio/offload/internal/sysc"
)

// Crowding. A polling thread holds its CPU; when the machine has more runnable threads than
// CPUs, every other thread that wants one waits for a spinner's time slice to end (milliseconds),
// and a yield does not hand the CPU over where the waiting thread is queued on another CPU. So a
// wait stops spinning while the machine is crowded: it sleeps, its CPU goes idle and the
// scheduler gives it to a waiting thread at once; the data's producer wakes it (doorbell), as a
// kernel socket's sleeper is woken. Measured with sockperf under-load (50,000 msg/s, a reply every
// 10; sockperf's sender paces by spinning, so the server's spinning receive and the client's
// replies receiver want the 2 CPUs with it) on the loaded 2-CPU test machine: a median of about
// 1 ms with the receive spinning against 9-25 us when it sleeps (kernel 2-19 us).
//
// The crowd is the machine's count of runnable threads (/proc/loadavg, about 2 us to read) above
// its online CPUs, looked at (Crowded) when a spin resumes after a sleep and at a long
// spin's yields, by one thread of the process at a time. A look that found no crowd stands for
// crowdTTL; one that found a crowd for crowdedTTL only: a thread that is runnable for an instant
// (the Go runtime's idle-class monitor, which gets a CPU only when one is idle) must not stop
// the spinning of a ping-pong for long, and once this wait sleeps it gets its CPU.
//
// A thread that woke another (a doorbell: Woke; one the preload library's ring sends rang: the
// rang word, UseRangWord) makes the next spin of the process look at its first poll. A crowd
// then is the woken thread waiting for a CPU: a doorbell's wake-up is a synchronous one, which
// queues the woken thread on the waker's CPU, where a spinner that does not yield keeps it
// waiting until the end of a time slice. So that spin yields once, and the look does not count
// toward the crowd (the woken thread runs now; the waits keep spinning).
// Measured with sockperf under-load (a reply every 10 messages wakes the client's receiving
// thread; the server's spins, shorter than sysc.YieldAfter, never yielded): sched_switch traces
// showed that thread waiting 0.3-4 ms behind the server in 1% of its wake-ups; 12 interleaved
// runs, median average 23.3 -> 16.8 us, p99 275 -> 185 us (kernel 26.8 / 75 us).

// crowdTTL is how long a look that found no crowd stands, crowdedTTL one that found a crowd.
const (
	crowdTTL   = 100e3 // ns
	crowdedTTL = 10e3  // ns
)

// crowdLooks is how many looks in a row must find a crowd before waits stop spinning: a thread
// runnable for an instant (a kernel thread, the runtime's monitor) beside a ping-pong's two
// spinners is seen by one look, rarely by two crowdTTL apart; a crowd that lasts (three spinners
// on two CPUs) is seen by every look.
const crowdLooks = 2

var crowd struct {
	at      atomic.Int64 // sysc.Nanotime of the last look; 0: none; negative: look again (Woke)
	yes     atomic.Bool  // the last crowdLooks looks found more runnable threads than CPUs
	streak  atomic.Int32 // looks in a row that found a crowd
	looking atomic.Bool  // a thread reads /proc/loadavg
	reads   atomic.Int64 // reads of /proc/loadavg made
	woken   atomic.Bool  // a look after a wake-up (Woke) found a crowd: the next poll yields
}

// loadavg is a descriptor of /proc/loadavg the engine keeps (UseLoadavg); 0: none, each look
// opens the file.
var loadavg atomic.Int32

// UseLoadavg gives the looks a descriptor of /proc/loadavg to read (the engine's, internal).
func UseLoadavg(fd int) { loadavg.Store(int32(fd)) }

// cpuPlacement reads, once, the machine's online CPUs and whether the process may run on fewer
// of them (placed: taskset, cpusets, isolated cores); 0 and false when either is unknown.
var cpuPlacement = sync.OnceValues(func() (online int, placed bool) {
	n, ok := sysc.OnlineCPUs()
	a, aok := sysc.AllowedCPUs()
	if !ok || !aok {
		return 0, false
	}
	return n, a < n
})

// onlineCPUs is the machine's CPUs; 0 (never crowded) when unknown, or when the process was
// placed on some of them only: the machine's count says nothing of its own CPUs then, and who
// placed it chose where it spins (shared.go watches its yields instead).
var onlineCPUs = func() int {
	if n, placed := cpuPlacement(); !placed {
		return n
	}
	return 0
}

// Crowded reports whether the machine has more runnable threads than CPUs, as of a look at most
// crowdTTL (crowdedTTL when it found a crowd) older than now (a sysc.Nanotime read).
func Crowded(now int64) bool {
	yes := crowd.yes.Load()
	ttl := int64(crowdTTL)
	if yes {
		ttl = crowdedTTL
	}
	if now-crowd.at.Load() < ttl || !crowd.looking.CompareAndSwap(false, true) {
		return yes
	}
	defer crowd.looking.Store(false)
	woke := crowd.at.Load() < 0
	// A process placed on some CPUs only is never crowded (onlineCPUs): no read of the
	// machine's count, which would cost each of its long spins a system call per yield.
	cpus := onlineCPUs()
	var n int
	var ok bool
	if cpus > 0 {
		n, ok = runnable()
	}
	// The held waits (held.go) want a CPU as much as the runnable threads do; the table is read
	// only when the runnable threads alone leave room.
	many := ok && cpus > 0 && (n > cpus || n+heldNow(now) > cpus)
	switch {
	case many && woke:
		crowd.woken.Store(true)
	case many:
		crowd.yes.Store(crowd.streak.Add(1) >= crowdLooks)
	default:
		crowd.streak.Store(0)
		crowd.yes.Store(false)
	}
	crowd.at.Store(now)
	return crowd.yes.Load()
}

// runnable reads the machine's count of runnable threads (/proc/loadavg: the engine's descriptor
// of it, else the file) and counts the read.
func runnable() (int, bool) {
	crowd.reads.Add(1)
	if fd := int(loadavg.Load()); fd > 0 {
		return sysc.RunnableAt(fd)
	}
	return sysc.Runnable()
}

// Woke tells that this process just woke a sleeping thread: the next spin looks at the runnable
// count again.
func Woke() { crowd.at.Store(-crowdTTL) }

// tookWoken reports, and clears, a crowd seen by the look after a wake-up.
func tookWoken() bool { return crowd.woken.Load() && crowd.woken.Swap(false) }

// rangWord: set elsewhere for each doorbell rung without the engine (UseRangWord).
var rangWord atomic.Pointer[atomic.Uint32]

// UseRangWord makes the spins take w too: a word not 0 is a doorbell rung without the engine
// (the preload library's ring sends), which counts as Woke; they set it back to 0.
func UseRangWord(w *atomic.Uint32) { rangWord.Store(w) }

// wokeAny reports whether a wake-up (Woke, or a doorbell of the rang word) came since the last
// look: the spin that begins looks at its first poll.
func wokeAny() bool {
	if w := rangWord.Load(); w != nil && w.Load() != 0 && w.Swap(0) != 0 {
		Woke()
	}
	return crowd.at.Load() < 0
}

// crowdSleeps is the statistics word that counts the spins a crowd ended (CountCrowdSleeps); nil:
// none.
var crowdSleeps atomic.Pointer[uint64]

// CountCrowdSleeps makes the waits add one to word for each spin a crowd ended (the wait slept
// instead); nil stops it. word is shared memory a reader (goxio_stats) reads atomically.
func CountCrowdSleeps(word *uint64) { crowdSleeps.Store(word) }

// countCrowdSleep counts one spin a crowd ended (Spin.TakeHeld).
func countCrowdSleep() {
	if p := crowdSleeps.Load(); p != nil {
		atomic.AddUint64(p, 1)
	}
}
