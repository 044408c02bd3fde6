package wait

import (
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/goxio/goxio/internal/procstat"
	"github.com/goxio/goxio/internal/shmseg"
	"github.com/goxio/goxio/offload/internal/sysc"
)

// Held waits. A wait that stops spinning because the machine is crowded (crowd.go) sleeps; the
// runnable count it looks at no longer counts it, so the next look of another spinner finds
// room and spins on, and the sleeper, woken by its data, finds every CPU held by spinners and
// waits for one's time slice to end. With VMA_SPEC=latency (every receive polls without end)
// sockperf under-load is that case: its sender spins by itself, the server's receive and the
// client's replies receiver poll, three spinners for two CPUs; the two waits took turns being
// the sleeper, and one reply in seven waited a time slice.
//
// So an endless wait (Policy.endless) that a crowd put to sleep counts toward the crowd while
// it sleeps, machine-wide: a spinner is crowded when the runnable threads and the held waits of
// every goxio process of the user are more than the CPUs. The held waits then sleep, all of
// them, as the kernel's receivers do, while the foreign load lasts; a wait that its data woke
// spins again once the machine has a CPU for each. Measured on the 2-CPU test machine, sockperf
// under-load with VMA_SPEC=latency, medians of 5 interleaved runs: average 419 -> 25 us (the
// kernel's 29 us), p99.9 3.1 -> 1.6 ms (the kernel's 1.7 ms). A receive that does not spin but
// wakes often counts as held while it sleeps on a full machine too (claim.go).
//
// The counts are in a table shared by the user's goxio processes (goxio.<uid>.held1 in the segment
// directory, one file for the machine: CPUs are not a namespace's): a header, then heldSlots slots
// of 4 words, one per process that held a wait: owner pid, owner start time, held waits, claims
// (claim.go: their count and the start of the last one, packed). A process claims a slot at its
// first held wait (compare-and-swap of the pid word from 0, marked until its start time is written)
// and changes only its own counts; a reader sums the counts of the slots below the high-water mark
// (heldMark). A process that dies with waits held leaves its count: the readers check the owners of
// slots with a count at most every heldSweepEvery (a kill(2) each) and free the dead ones' slots
// (compare-and-swap of the pid word to heldReclaim, count to 0, pid word to 0).

const (
	heldMagic       = 0x444c4548_4f49584f // "OXIOHELD" read as a little-endian word
	heldVersion     = 1
	heldSlots       = 1024
	heldHeaderWords = 8 // magic, version, slots, high-water mark (heldMark)
	heldMark        = 3 // header word: slots at or above it were never claimed
	heldSlotWords   = 4
	heldReclaim     = 1 << 63 // pid word of a dead owner's slot being freed
	heldSweepEvery  = 100e6   // ns between checks of the owners of slots with a count
)

// heldFileName is the table's file name for a user; the layout version is part of it.
func heldFileName(uid int) string {
	return "goxio." + strconv.Itoa(uid) + ".held" + strconv.Itoa(heldVersion)
}

var held struct {
	mem     atomic.Pointer[[]uint64] // the table's words; nil: no table, waits count nothing
	slot    atomic.Int64             // this process's slot + 1; 0: none claimed
	pid     atomic.Int64             // the pid that claimed it (a forked child claims its own)
	sweptAt atomic.Int64             // sysc.Nanotime of the last check of owners
	sweep   atomic.Bool              // a thread checks owners
}

// ShareHeld maps the held-wait table of uid in dir, creating it complete if there is none. The
// engine calls it once; without it (an error, no segment directory) the waits count only the
// runnable threads, as before.
func ShareHeld(dir string, uid int) error {
	path := shmseg.Join(dir, heldFileName(uid))
	size := (heldHeaderWords + heldSlots*heldSlotWords) * 8
	mem, err := shmseg.OpenTable(dir, path, size, []uint64{heldMagic, heldVersion, heldSlots})
	if err != nil {
		return fmt.Errorf("open held-wait table: %w", err)
	}
	held.mem.Store(&mem)
	return nil
}

// Words of a slot.
const (
	heldOwner  = iota // owner pid (heldReclaim set while claimed or freed)
	heldStart         // owner start time (procstat)
	heldCount         // held waits
	heldClaims        // claims under way (low claimCountBits) and the last one's start (claim.go)
)

// heldSlot is slot i's words.
func heldSlot(mem []uint64, i int) []uint64 {
	j := heldHeaderWords + i*heldSlotWords
	return mem[j : j+heldSlotWords : j+heldSlotWords]
}

// ownSlot returns this process's slot, claimed at its first call (-1: no table, or no free
// slot: the process's held waits are not counted).
func ownSlot(mem []uint64) int {
	pid := int64(sysc.Getpid())
	if s := held.slot.Load(); s > 0 && held.pid.Load() == pid {
		return int(s - 1)
	}
	start, err := procstat.SelfStart() // this process's: a forked child is not its parent
	if err != nil {
		return -1
	}
	// First a free slot below the high-water mark; then, after freeing the slots of dead owners
	// (a process that ended leaves its slot claimed), any: the mark, which bounds the readers'
	// sums, stays near the count of processes that hold waits at once.
	for pass := range 2 {
		limit := heldSlots
		if pass == 0 {
			limit = min(int(atomic.LoadUint64(&mem[heldMark])), heldSlots)
		}
		for i := range limit {
			// Claimed marked (heldReclaim), so that no sweeper judges the owner by the start
			// time of the slot's last owner before this one's is written.
			sl := heldSlot(mem, i)
			if atomic.LoadUint64(&sl[heldOwner]) != 0 ||
				!atomic.CompareAndSwapUint64(&sl[heldOwner], 0, heldReclaim|uint64(pid)) {
				continue
			}
			atomic.StoreUint64(&sl[heldStart], start)
			atomic.StoreUint64(&sl[heldCount], 0)
			atomic.StoreUint64(&sl[heldClaims], 0)
			atomic.StoreUint64(&sl[heldOwner], uint64(pid))
			for {
				hi := atomic.LoadUint64(&mem[heldMark])
				if uint64(i) < hi || atomic.CompareAndSwapUint64(&mem[heldMark], hi, uint64(i)+1) {
					break
				}
			}
			held.pid.Store(pid)
			held.slot.Store(int64(i) + 1)
			return i
		}
		if pass == 0 {
			sweepHeld(mem, true, claimClock(sysc.Nanotime()))
		}
	}
	return -1
}

// enterSlot returns this process's slot and its words, claimed at the first call (-1 and nil:
// no table, or no slot free).
func enterSlot() (int, []uint64) {
	p := held.mem.Load()
	if p == nil {
		return -1, nil
	}
	i := ownSlot(*p)
	if i < 0 {
		return -1, nil
	}
	return i, heldSlot(*p, i)
}

// leaveSlot returns the words of slot i (from enterSlot) while it is still this process's; nil
// when it is not (freed by a reader that found it dead: never, unless /proc lied). held.pid is
// this process's: the wait that entered is the one that leaves, and a fork in between would leave
// the child without it.
func leaveSlot(i int) []uint64 {
	p := held.mem.Load()
	if p == nil || i < 0 {
		return nil
	}
	if sl := heldSlot(*p, i); atomic.LoadUint64(&sl[heldOwner]) == uint64(held.pid.Load()) {
		return sl
	}
	return nil
}

// holdEnter counts a wait that the crowd puts to sleep; it returns the slot to give holdLeave
// (-1: nothing counted).
func holdEnter() int {
	i, sl := enterSlot()
	if sl != nil {
		atomic.AddUint64(&sl[heldCount], 1)
	}
	return i
}

// holdLeave uncounts a held wait that woke (i from holdEnter).
func holdLeave(i int) {
	if sl := leaveSlot(i); sl != nil {
		atomic.AddUint64(&sl[heldCount], ^uint64(0))
	}
}

// heldNow is the count of held waits of the user's goxio processes, with their claims that
// have not outlived claimLasts (claim.go); now is a sysc.Nanotime read, which times the checks
// of owners and ages the claims.
func heldNow(now int64) int {
	p := held.mem.Load()
	if p == nil {
		return 0
	}
	mem := *p
	n, at := 0, claimClock(now)
	for i := range min(int(atomic.LoadUint64(&mem[heldMark])), heldSlots) {
		sl := heldSlot(mem, i)
		if c := int64(atomic.LoadUint64(&sl[heldCount])); c > 0 {
			n += int(c)
		}
		n += claimsAt(atomic.LoadUint64(&sl[heldClaims]), at)
	}
	if n > 0 && now-held.sweptAt.Load() >= heldSweepEvery && held.sweep.CompareAndSwap(false, true) {
		held.sweptAt.Store(now)
		n -= sweepHeld(mem, false, at)
		held.sweep.Store(false)
	}
	return n
}

// sweepHeld frees the slots of dead owners: those with a count or claims (all: the others too,
// for a process that found no slot free); it returns the held waits and the claims live at at (a
// claimClock reading) it freed with them.
func sweepHeld(mem []uint64, all bool, at int64) int {
	freed := 0
	self := uint64(sysc.Getpid())
	for i := range min(int(atomic.LoadUint64(&mem[heldMark])), heldSlots) {
		sl := heldSlot(mem, i)
		pid := atomic.LoadUint64(&sl[heldOwner])
		idle := atomic.LoadUint64(&sl[heldCount]) == 0 && atomic.LoadUint64(&sl[heldClaims]) == 0
		if pid == 0 || pid&heldReclaim != 0 || pid == self || idle && !all {
			continue
		}
		if procstat.Alive(int(pid), atomic.LoadUint64(&sl[heldStart])) ||
			!atomic.CompareAndSwapUint64(&sl[heldOwner], pid, heldReclaim|pid) {
			continue
		}
		if c := int64(atomic.LoadUint64(&sl[heldCount])); c > 0 {
			freed += int(c)
		}
		freed += claimsAt(atomic.LoadUint64(&sl[heldClaims]), at)
		atomic.StoreUint64(&sl[heldCount], 0)
		atomic.StoreUint64(&sl[heldClaims], 0)
		atomic.StoreUint64(&sl[heldOwner], 0)
	}
	return freed
}
