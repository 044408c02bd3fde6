package offload

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// netpollerChildEnv makes the test binary run netpollerChild instead of the tests: the
// netpoller must not have started yet, and the testing package arms timers in m.Run.
const netpollerChildEnv = "GOXIO_TEST_NETPOLLER_CHILD"

func TestMain(m *testing.M) {
	if child := os.Getenv(netpollerChildEnv); child != "" {
		run := netpollerChild
		if child == "late" {
			run = netpollerLateChild
		}
		if err := run(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// openFDs returns the open descriptors below limit.
func openFDs(limit int) map[int]bool {
	out := map[int]bool{}
	for fd := 0; fd < limit; fd++ {
		if !isFree(fd) {
			out[fd] = true
		}
	}
	return out
}

var sink []byte

// netpollerChild starts the netpoller, then makes the runtime collect garbage, arm timers and
// open os.Files many times, and checks that the runtime opened nothing but the two descriptors
// StartNetpoller placed and marked.
func netpollerChild() error {
	base := netpollerBase()
	before := openFDs(base + 64)
	var table fakeTable
	epfd, evfd, err := StartNetpoller(&table)
	if err != nil {
		return err
	}
	if epfd != base || evfd != base+1 {
		return fmt.Errorf("netpoller at %d, %d; want %d, %d", epfd, evfd, base, base+1)
	}
	if len(table.flags) != 2 || table.get(epfd) != FlagInternal || table.get(evfd) != FlagInternal {
		return fmt.Errorf("table after start: %v; want only %d and %d internal", table.flags, epfd, evfd)
	}
	for i := 0; i < 200; i++ {
		for j := 0; j < 64; j++ {
			sink = make([]byte, 64<<10)
		}
		runtime.GC()
	}
	time.Sleep(5 * time.Millisecond)
	<-time.After(time.Millisecond)
	f, err := os.Open("/proc/self/fd")
	if err != nil {
		return err
	}
	if _, err := f.Readdirnames(-1); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	after := openFDs(base + 64)
	for fd := range after {
		if !before[fd] && fd != epfd && fd != evfd {
			return fmt.Errorf("descriptor %d opened behind the engine's back (before: %v, after: %v)", fd, before, after)
		}
	}
	for fd := range before {
		if !after[fd] {
			return fmt.Errorf("descriptor %d of the program was closed", fd)
		}
	}
	if !isPoller(epfd, "eventpoll") || !isPoller(evfd, "eventfd") {
		return fmt.Errorf("descriptors %d, %d are not the runtime's epoll fd and eventfd", epfd, evfd)
	}
	// A second start finds the netpoller running, where it is, and opens nothing.
	if ep, ev, err := StartNetpoller(&table); err != nil || ep != epfd || ev != evfd {
		return fmt.Errorf("second StartNetpoller: %d, %d, %v; want %d, %d, no error", ep, ev, err, epfd, evfd)
	}
	if again := openFDs(base + 64); len(again) != len(after) {
		return fmt.Errorf("second StartNetpoller left descriptors: %v, before it %v", again, after)
	}
	return nil
}

// netpollerLateChild starts the netpoller the way os' init does on a non-blocking fd 0-2, before
// StartNetpoller: StartNetpoller must find the runtime's two descriptors where they are and mark
// them internal.
func netpollerLateChild() error {
	before := openFDs(64)
	time.AfterFunc(time.Hour, func() {}).Stop()
	var table fakeTable
	epfd, evfd, err := StartNetpoller(&table)
	if !errors.Is(err, ErrNetpollerRunning) {
		return fmt.Errorf("StartNetpoller after a timer: %v, want %v", err, ErrNetpollerRunning)
	}
	if before[epfd] || before[evfd] || !isPoller(epfd, "eventpoll") || !isPoller(evfd, "eventfd") {
		return fmt.Errorf("found %d, %d: not the runtime's new epoll fd and eventfd (open before: %v)", epfd, evfd, before)
	}
	if len(table.flags) != 2 || table.get(epfd) != FlagInternal || table.get(evfd) != FlagInternal {
		return fmt.Errorf("table: %v; want only %d and %d internal", table.flags, epfd, evfd)
	}
	return nil
}

// TestStartNetpoller runs netpollerChild and netpollerLateChild in fresh processes (this one's
// netpoller runs already).
func TestStartNetpoller(t *testing.T) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil || rl.Cur < 256 {
		t.Fatalf("RLIMIT_NOFILE %d (%v): too low to test", rl.Cur, err)
	}
	for _, child := range []string{"early", "late"} {
		t.Run(child, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), netpollerChildEnv+"="+child, "GOGC=1")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
		})
	}
}

// TestCloseRuns: the fillers go back in runs, and a descriptor of the program between two runs
// (made while they were held) stays open.
func TestCloseRuns(t *testing.T) {
	null, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(null)
	var table fakeTable
	var fillers []int
	program := -1
	for i := 0; i < 9; i++ {
		fd, err := unix.FcntlInt(uintptr(null), unix.F_DUPFD_CLOEXEC, 500)
		if err != nil {
			t.Fatal(err)
		}
		if i == 4 {
			program = fd // the program's: not a filler
			continue
		}
		table.Set(fd, FlagInternal)
		fillers = append(fillers, fd)
	}
	defer unix.Close(program)
	closeRuns(&table, fillers)
	for _, fd := range fillers {
		if !isFree(fd) {
			t.Errorf("filler %d still open", fd)
		}
		if table.get(fd) != 0 {
			t.Errorf("filler %d still marked %d", fd, table.get(fd))
		}
	}
	if isFree(program) {
		t.Errorf("the program's descriptor %d between the fillers was closed", program)
	}
}
