package wait

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/sysc"
)

// useHeldTable maps a fresh held-wait table in a temporary directory for the rest of the test
// and returns its path.
func useHeldTable(t *testing.T) string {
	t.Helper()
	mem, slot, pid, at := held.mem.Load(), held.slot.Load(), held.pid.Load(), held.sweptAt.Load()
	t.Cleanup(func() {
		held.mem.Store(mem)
		held.slot.Store(slot)
		held.pid.Store(pid)
		held.sweptAt.Store(at)
	})
	held.mem.Store(nil)
	held.slot.Store(0)
	dir := t.TempDir()
	if err := ShareHeld(dir, os.Geteuid()); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, heldFileName(os.Geteuid()))
}

// useLoadavg makes the crowd read a /proc/loadavg with runnable threads running, for the rest
// of the test.
func useLoadavg(t *testing.T, runnable int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "loadavg")
	if err := os.WriteFile(path, []byte(fmt.Sprintf("0.50 0.40 0.30 %d/120 4242\n", runnable)), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	was := loadavg.Load()
	t.Cleanup(func() {
		loadavg.Store(was)
		f.Close()
	})
	UseLoadavg(int(f.Fd()))
}

// heldInSleep runs Loop with p until its k-th sleep, which ends it, and returns the held waits
// counted during that sleep; the call must return Try's 7 and leave nothing held.
func heldInSleep(t *testing.T, p Policy, k int) int {
	t.Helper()
	var w Call
	seen, sleeps := -1, 0
	n, _ := Loop(&w, p, Steps{
		Try: func(Look) (int, syscall.Errno, bool) { return 7, 0, sleeps == k },
		Sleep: func() (int, syscall.Errno, bool) {
			sleeps++
			if sleeps == k {
				seen = heldNow(sysc.Nanotime())
			}
			return 0, 0, false
		},
	})
	if n != 7 {
		t.Errorf("the call returned %d, want 7", n)
	}
	if after := heldNow(sysc.Nanotime()); after != 0 {
		t.Errorf("after the call: %d held", after)
	}
	return seen
}

func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("/bin/true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// TestHeldTable: held waits are counted in the shared file; a slot whose owner died is freed
// (its count with it) at the first look after heldSweepEvery, a live owner's is kept; a second
// mapping of the file (another process) sees the same count.
func TestHeldTable(t *testing.T) {
	path := useHeldTable(t)
	now := sysc.Nanotime()
	held.sweptAt.Store(now)
	if n := heldNow(now); n != 0 {
		t.Fatalf("new table: %d held", n)
	}
	a, b := holdEnter(), holdEnter()
	if a < 0 || a != b || heldNow(now) != 2 {
		t.Fatalf("two held waits: slots %d %d, count %d", a, b, heldNow(now))
	}
	other, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	off := (heldHeaderWords + a*heldSlotWords + heldCount) * 8
	if c := other[off]; c != 2 {
		t.Errorf("the file holds %d for this process, want 2", c)
	}
	holdLeave(a)
	holdLeave(b)
	if n := heldNow(now); n != 0 {
		t.Fatalf("after both woke: %d held", n)
	}

	// Slots of other owners: one dead with 3 held waits, one alive (the test's parent) with 2.
	mem := *held.mem.Load()
	put := func(i, pid int, count uint64) {
		sl := heldSlot(mem, i)
		atomic.StoreUint64(&sl[heldOwner], uint64(pid))
		atomic.StoreUint64(&sl[heldStart], 0) // start time unknown: the pid decides
		atomic.StoreUint64(&sl[heldCount], count)
		if hi := atomic.LoadUint64(&mem[heldMark]); hi <= uint64(i) {
			atomic.StoreUint64(&mem[heldMark], uint64(i)+1)
		}
	}
	put(a+1, deadPID(t), 3)
	put(a+2, os.Getppid(), 2)
	if n := heldNow(now); n != 5 {
		t.Errorf("before the owners are checked: %d held, want 5", n)
	}
	if n := heldNow(now + heldSweepEvery); n != 2 {
		t.Errorf("after the owners are checked: %d held, want 2 (the dead owner's 3 freed)", n)
	}
	if o := atomic.LoadUint64(&heldSlot(mem, a+1)[heldOwner]); o != 0 {
		t.Errorf("the dead owner's slot is not free: %#x", o)
	}
	if o := atomic.LoadUint64(&heldSlot(mem, a+2)[heldOwner]); o != uint64(os.Getppid()) {
		t.Errorf("the live owner's slot changed: %#x", o)
	}

	// A new process (this one, as if forked) takes the slot a dead process left, without a
	// count, below the high-water mark, instead of raising the mark.
	put(a+3, deadPID(t), 0)
	hi := atomic.LoadUint64(&mem[heldMark])
	for i := range int(hi) {
		if i != a+2 && i != a+3 {
			put(i, os.Getppid(), 0)
		}
	}
	held.pid.Store(0)
	if i := holdEnter(); i != a+3 || atomic.LoadUint64(&mem[heldMark]) != hi {
		t.Errorf("claim with a dead owner's slot below the mark %d: took %d, mark now %d", hi, i, atomic.LoadUint64(&mem[heldMark]))
	} else {
		holdLeave(i)
	}
}

// TestHeldCrowd: the held waits count toward the crowd: two runnable threads on two CPUs are no
// crowd, the same with one held wait is.
func TestHeldCrowd(t *testing.T) {
	useHeldTable(t)
	held.sweptAt.Store(sysc.Nanotime())
	useLoadavg(t, 2)
	wasCPUs := onlineCPUs
	at, yes, streak := crowd.at.Load(), crowd.yes.Load(), crowd.streak.Load()
	t.Cleanup(func() {
		onlineCPUs = wasCPUs
		crowd.at.Store(at)
		crowd.yes.Store(yes)
		crowd.streak.Store(streak)
	})
	onlineCPUs = func() int { return 2 }
	crowd.streak.Store(0)
	crowd.yes.Store(false)
	look := func() bool {
		crowd.at.Store(1) // the last look is long past
		return Crowded(sysc.Nanotime())
	}
	for range 2 {
		if look() {
			t.Fatal("2 runnable threads on 2 CPUs: crowded")
		}
	}
	i := holdEnter()
	defer holdLeave(i)
	look()
	if !look() {
		t.Error("2 runnable threads and a held wait on 2 CPUs: not crowded after two looks")
	}
}

// TestLoopCountsHeldSleep: an endless wait whose spinning a crowd ended counts as held while it
// sleeps (and no longer once it woke); a wait that sleeps because its budget ran out does not
// count, nor one with a budget that a crowd ended.
func TestLoopCountsHeldSleep(t *testing.T) {
	useHeldTable(t)
	held.sweptAt.Store(sysc.Nanotime())
	for _, c := range []struct {
		name    string
		crowded bool
		p       Policy
		want    int
	}{
		{"crowded", true, Policy{Polls: -1}, 1},
		{"budget spent", false, Policy{Polls: 2}, 0},
		{"crowded, with a budget", true, Policy{Polls: 1 << 30}, 0},
		{"crowded, endless select", true, Policy{Timed: true, Budget: -1}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			setCrowd(t, c.crowded)
			var word uint64 // the statistics' GlobalCrowdSleeps
			CountCrowdSleeps(&word)
			t.Cleanup(func() { CountCrowdSleeps(nil) })
			if seen := heldInSleep(t, c.p, 2); seen != c.want {
				t.Errorf("held waits during the second sleep: %d, want %d", seen, c.want)
			}
			if got := atomic.LoadUint64(&word); (got != 0) != c.crowded {
				t.Errorf("spins a crowd ended, counted: %d (crowded: %v)", got, c.crowded)
			}
		})
	}
}

// TestLoopClaims: a wait that sleeps without spinning (Policy.Claim) counts as held while it
// sleeps when the runnable threads and the held waits fill the CPUs; with a CPU left, or without
// Claim, it counts nothing.
func TestLoopClaims(t *testing.T) {
	useHeldTable(t)
	held.sweptAt.Store(sysc.Nanotime())
	wasCPUs := onlineCPUs
	onlineCPUs = func() int { return 2 }
	t.Cleanup(func() { onlineCPUs = wasCPUs })
	for _, c := range []struct {
		name     string
		runnable int
		claim    bool
		want     int
	}{
		{"filled", 2, true, 1},
		{"a CPU left", 1, true, 0},
		{"filled, no claim", 2, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			useLoadavg(t, c.runnable)
			if seen := heldInSleep(t, Policy{Polls: 4, Cold: true, Claim: c.claim}, 1); seen != c.want {
				t.Errorf("held waits during the sleep: %d, want %d", seen, c.want)
			}
		})
	}
}

// TestClaimsAge: a claim counts as a held wait until it ends or claimLasts after it began,
// whichever is first; a later claim of the process makes its claims count again; a dead
// owner's claims go with its slot.
func TestClaimsAge(t *testing.T) {
	useHeldTable(t)
	now := sysc.Nanotime()
	held.sweptAt.Store(now)
	a := claimEnter(now)
	if a < 0 || heldNow(now) != 1 || heldNow(now+claimLasts-1e3) != 1 {
		t.Fatalf("a claim: slot %d, counted %d, just before it ages %d", a, heldNow(now), heldNow(now+claimLasts-1e3))
	}
	held.sweptAt.Store(now + claimLasts)
	if n := heldNow(now + claimLasts); n != 0 {
		t.Fatalf("a claim claimLasts old counts %d", n)
	}
	later := now + claimLasts + 5e6
	held.sweptAt.Store(later)
	if b := claimEnter(later); b != a || heldNow(later) != 2 {
		t.Fatalf("a second claim: slot %d, counted %d, want both", b, heldNow(later))
	}
	claimLeave(a)
	claimLeave(a)
	claimLeave(a) // one more than claimed: nothing
	if n := heldNow(later); n != 0 {
		t.Fatalf("after both ended: %d", n)
	}
	mem := *held.mem.Load()
	sl := heldSlot(mem, a)
	if c := atomic.LoadUint64(&sl[heldClaims]) & claimCountMask; c != 0 {
		t.Fatalf("claims word counts %d after the ends", c)
	}
	// A dead process's slot with a claim under way: the sweep frees it, the claim with it.
	dead := heldSlot(mem, a+1)
	atomic.StoreUint64(&dead[heldOwner], uint64(deadPID(t)))
	t1 := later + heldSweepEvery
	atomic.StoreUint64(&dead[heldClaims], uint64(claimClock(t1))<<claimCountBits|1)
	atomic.StoreUint64(&mem[heldMark], uint64(a+2))
	held.sweptAt.Store(t1)
	if n := heldNow(t1); n != 1 {
		t.Fatalf("a dead owner's live claim before the sweep: %d", n)
	}
	held.sweptAt.Store(later)
	if n := heldNow(t1); n != 0 || atomic.LoadUint64(&dead[heldOwner]) != 0 {
		t.Fatalf("after the sweep: %d counted, owner word %#x", n, atomic.LoadUint64(&dead[heldOwner]))
	}
}

// TestClaimsAcrossProcesses: a claim another process began (its start on the system's
// CLOCK_MONOTONIC, read here directly) counts while it is younger than claimLasts and not after,
// whenever either process started.
func TestClaimsAcrossProcesses(t *testing.T) {
	useHeldTable(t)
	now := sysc.Nanotime()
	held.sweptAt.Store(now)
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	mem := *held.mem.Load()
	other := heldSlot(mem, 0)
	atomic.StoreUint64(&other[heldOwner], uint64(os.Getppid()))
	atomic.StoreUint64(&mem[heldMark], 1)
	for _, c := range []struct {
		age  int64
		want int
	}{{0, 1}, {claimLasts / 2, 1}, {claimLasts + 1e6, 0}, {10 * claimLasts, 0}} {
		atomic.StoreUint64(&other[heldClaims], uint64((ts.Nano()-c.age)/1e3)<<claimCountBits|1)
		if n := heldNow(now); n != c.want {
			t.Errorf("another process's claim begun %d ns ago: %d counted, want %d", c.age, n, c.want)
		}
	}
}
