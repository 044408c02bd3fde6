package iomux

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/umem"
	"github.com/goxio/goxio/offload/transport"
	"github.com/goxio/goxio/offload/transport/transporttest"
)

// testHost is the engine as the tests play it: fds registered by the test, a C-side table that
// only records what it was told.
type testHost struct {
	mu    sync.Mutex
	socks map[int]*Socket
	table map[int]string
	pass  map[int]bool // fds on the kernel for good
}

func (h *testHost) Socket(fd int) *Socket {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.socks[fd]
}

func (h *testHost) Passthrough(fd int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pass[fd]
}

func (h *testHost) Internal(fd int) (uint64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.table[fd] = "internal"
	return 1<<60 | uint64(fd), true
}

func (h *testHost) Epoll(epfd int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.table[epfd] = "epoll"
}

func (h *testHost) Forget(fd int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.table, fd)
}

// fixture is a Mux over fake endpoints.
type fixture struct {
	t    *testing.T
	host *testHost
	mux  *Mux
}

func newFixture(t *testing.T, p Params) *fixture {
	h := &testHost{socks: map[int]*Socket{}, table: map[int]string{}, pass: map[int]bool{}}
	return &fixture{t: t, host: h, mux: New(p, h, nil)}
}

// add makes a fake socket of the flavour and registers its fd.
func (f *fixture) add(stream bool) (*transporttest.Endpoint, *Socket) {
	f.t.Helper()
	var ep *transporttest.Endpoint
	var err error
	if stream {
		ep, err = transporttest.NewStream()
	} else {
		ep, err = transporttest.NewDatagram()
	}
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(ep.Close)
	s := &Socket{Stream: stream}
	s.SetRings(ep)
	f.host.mu.Lock()
	f.host.socks[ep.FD] = s
	f.host.mu.Unlock()
	return ep, s
}

// epoll makes a program epoll fd.
func (f *fixture) epoll() int {
	f.t.Helper()
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() {
		f.mux.ClosedEpoll(fd)
		unix.Close(fd)
	})
	return fd
}

// ctl is epoll_ctl as the trampoline passes it; it returns the result or -errno.
func (f *fixture) ctl(epfd, op, fd int, events uint32, data uint64) int64 {
	ev := make([]byte, umem.EpollEventSize)
	umem.PutEpollEvent(ev, 0, events, data)
	c := transport.Call{Op: transport.OpEpollCtl, FD: fd, A: [5]uintptr{uintptr(epfd), uintptr(op), bytesAddr(ev)}}
	r := f.mux.EpollCtl(&c)
	runtime.KeepAlive(ev)
	return r
}

func (f *fixture) mustCtl(epfd, op, fd int, events uint32, data uint64) {
	f.t.Helper()
	if r := f.ctl(epfd, op, fd, events, data); r != 0 {
		f.t.Fatalf("epoll_ctl(%d, %d, %d): %v", epfd, op, fd, unix.Errno(-r))
	}
}

type event struct {
	events uint32
	data   uint64
}

// wait is epoll_wait with a timeout (negative: forever); it fails the test on an error.
func (f *fixture) wait(epfd int, timeout time.Duration) []event {
	f.t.Helper()
	const max = 16
	out := make([]byte, max*umem.EpollEventSize)
	var ts *unix.Timespec
	if timeout >= 0 {
		t := unix.NsecToTimespec(int64(timeout))
		ts = &t
	}
	c := transport.Call{Op: transport.OpEpollWait, FD: epfd, A: [5]uintptr{bytesAddr(out), max, timespecAddr(ts)}}
	n := f.mux.EpollWait(&c)
	runtime.KeepAlive(ts)
	if n < 0 {
		f.t.Fatalf("epoll_wait: %v", unix.Errno(-n))
	}
	evs := make([]event, n)
	for i := range evs {
		evs[i].events, evs[i].data = umem.EpollEvent(out, i)
	}
	return evs
}

// poll is poll with a timeout (negative: forever) over fds; it returns the result and revents.
func (f *fixture) poll(fds []unix.PollFd, timeout time.Duration) int64 {
	var ts *unix.Timespec
	if timeout >= 0 {
		t := unix.NsecToTimespec(int64(timeout))
		ts = &t
	}
	c := transport.Call{Op: transport.OpPoll, FD: -1, A: [5]uintptr{pollfdsAddr(fds), uintptr(len(fds)), timespecAddr(ts)}}
	r := f.mux.Poll(&c)
	runtime.KeepAlive(ts)
	runtime.KeepAlive(fds)
	return r
}

func wantEvents(t *testing.T, got []event, want ...event) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("events %v, want %v", got, want)
		}
	}
}

// later runs f after d on another goroutine; the returned channel closes when it ran.
func later(d time.Duration, f func()) chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(d)
		f()
	}()
	return done
}

func TestPollLevelTriggered(t *testing.T) {
	f := newFixture(t, Params{SelectPoll: 0})
	ep, _ := f.add(false)
	fds := []unix.PollFd{{Fd: int32(ep.FD), Events: unix.POLLIN}}
	if r := f.poll(fds, 0); r != 0 {
		t.Fatalf("poll on an empty socket: %d", r)
	}
	ep.Deliver(2)
	for range 2 {
		if r := f.poll(fds, 0); r != 1 || fds[0].Revents != unix.POLLIN {
			t.Fatalf("poll with a datagram queued: %d, revents %#x", r, fds[0].Revents)
		}
	}
	ep.Take(2)
	if r := f.poll(fds, 0); r != 0 || fds[0].Revents != 0 {
		t.Fatalf("poll after the datagrams were taken: %d, revents %#x", r, fds[0].Revents)
	}
}

func TestPollSleepsAndWakes(t *testing.T) {
	for _, spin := range []int{0, 1000} {
		f := newFixture(t, Params{SelectPoll: spin})
		ep, _ := f.add(false)
		fds := []unix.PollFd{{Fd: int32(ep.FD), Events: unix.POLLIN}}
		start := time.Now()
		done := later(100*time.Millisecond, func() { ep.Deliver(1) })
		if r := f.poll(fds, 5*time.Second); r != 1 || fds[0].Revents != unix.POLLIN {
			t.Fatalf("spin %d µs: poll: %d, revents %#x", spin, r, fds[0].Revents)
		}
		<-done
		if d := time.Since(start); d > 4*time.Second {
			t.Fatalf("spin %d µs: the wake-up took %v", spin, d)
		}
		if ep.Sleepers() != 0 || ep.Spinners() != 0 {
			t.Fatalf("spin %d µs: marks left after the call: %d sleepers, %d spinners", spin, ep.Sleepers(), ep.Spinners())
		}
		// A timeout with nothing arriving: 0, after about the timeout.
		ep.Take(1)
		start = time.Now()
		if r := f.poll(fds, 50*time.Millisecond); r != 0 {
			t.Fatalf("spin %d µs: poll timed out with %d", spin, r)
		}
		if d := time.Since(start); d < 50*time.Millisecond {
			t.Fatalf("spin %d µs: poll returned after %v, before its timeout", spin, d)
		}
	}
}

// TestPollBellAfterFirstLook: a socket that gets its doorbell after poll first asked for it (a
// UDP socket opening its inbox from another thread) has it added when poll marks itself asleep,
// before it sleeps: a datagram that arrives then wakes the poll.
func TestPollBellAfterFirstLook(t *testing.T) {
	f := newFixture(t, Params{})
	ep, _ := f.add(false)
	ep.HideBell(1)
	fds := []unix.PollFd{{Fd: int32(ep.FD), Events: unix.POLLIN}}
	start := time.Now()
	done := later(100*time.Millisecond, func() { ep.Deliver(1) })
	if r := f.poll(fds, 5*time.Second); r != 1 || fds[0].Revents != unix.POLLIN {
		t.Fatalf("poll: %d, revents %#x (asleep without the doorbell)", r, fds[0].Revents)
	}
	<-done
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("the wake-up took %v", d)
	}
}

func TestSelect(t *testing.T) {
	f := newFixture(t, Params{})
	a, _ := f.add(false)
	b, _ := f.add(false)
	nfds := max(a.FD, b.FD) + 1
	set := func() []uint64 {
		s := make([]uint64, (nfds+63)/64)
		s[a.FD/64] |= 1 << (a.FD % 64)
		s[b.FD/64] |= 1 << (b.FD % 64)
		return s
	}
	b.Deliver(1)
	rs := set()
	tv := unix.Timeval{}
	args := umem.SelectArgs{TV: &tv}
	c := transport.Call{Op: transport.OpSelect, FD: -1, A: [5]uintptr{uintptr(nfds), setAddr(rs), 0, 0, selectArgsAddr(&args)}}
	r := f.mux.Select(&c)
	runtime.KeepAlive(rs)
	runtime.KeepAlive(&args)
	if r != 1 {
		t.Fatalf("select: %d, want 1", r)
	}
	if rs[a.FD/64]&(1<<(a.FD%64)) != 0 || rs[b.FD/64]&(1<<(b.FD%64)) == 0 {
		t.Fatalf("select left the read set %b (a %d, b %d)", rs, a.FD, b.FD)
	}
}

func TestEpollLevelTriggered(t *testing.T) {
	f := newFixture(t, Params{})
	ep, _ := f.add(false)
	epfd := f.epoll()
	f.mustCtl(epfd, unix.EPOLL_CTL_ADD, ep.FD, unix.EPOLLIN, 7)
	wantEvents(t, f.wait(epfd, 0))
	ep.Deliver(1)
	for range 2 {
		wantEvents(t, f.wait(epfd, 0), event{unix.EPOLLIN, 7})
	}
	ep.Take(1)
	wantEvents(t, f.wait(epfd, 0))
	if r := f.ctl(epfd, unix.EPOLL_CTL_ADD, ep.FD, unix.EPOLLIN, 7); r != -int64(unix.EEXIST) {
		t.Fatalf("second EPOLL_CTL_ADD: %d, want -EEXIST", r)
	}
	// Asleep, woken by the doorbell.
	done := later(50*time.Millisecond, func() { ep.Deliver(1) })
	wantEvents(t, f.wait(epfd, 5*time.Second), event{unix.EPOLLIN, 7})
	<-done
	if ep.Sleepers() != 0 || ep.Spinners() != 0 {
		t.Fatalf("marks left after epoll_wait: %d sleepers, %d spinners", ep.Sleepers(), ep.Spinners())
	}
}

func TestEpollEdgeTriggered(t *testing.T) {
	f := newFixture(t, Params{})
	ep, _ := f.add(false)
	epfd := f.epoll()
	f.mustCtl(epfd, unix.EPOLL_CTL_ADD, ep.FD, unix.EPOLLIN|unix.EPOLLET, 3)
	ep.Deliver(1)
	wantEvents(t, f.wait(epfd, 0), event{unix.EPOLLIN, 3})
	wantEvents(t, f.wait(epfd, 0)) // still queued, but no new edge
	ep.Deliver(1)
	wantEvents(t, f.wait(epfd, 0), event{unix.EPOLLIN, 3})
	// An edge that comes while the caller sleeps.
	done := later(50*time.Millisecond, func() { ep.Deliver(1) })
	wantEvents(t, f.wait(epfd, 5*time.Second), event{unix.EPOLLIN, 3})
	<-done
	wantEvents(t, f.wait(epfd, 20*time.Millisecond))
	// EPOLL_CTL_MOD starts afresh: what is queued is an edge again.
	f.mustCtl(epfd, unix.EPOLL_CTL_MOD, ep.FD, unix.EPOLLIN|unix.EPOLLET, 4)
	wantEvents(t, f.wait(epfd, 0), event{unix.EPOLLIN, 4})
}

func TestEpollOneshot(t *testing.T) {
	f := newFixture(t, Params{})
	ep, _ := f.add(false)
	epfd := f.epoll()
	f.mustCtl(epfd, unix.EPOLL_CTL_ADD, ep.FD, unix.EPOLLIN|unix.EPOLLONESHOT, 5)
	ep.Deliver(1)
	wantEvents(t, f.wait(epfd, 0), event{unix.EPOLLIN, 5})
	wantEvents(t, f.wait(epfd, 0))
	ep.Deliver(1)
	wantEvents(t, f.wait(epfd, 20*time.Millisecond))
	f.mustCtl(epfd, unix.EPOLL_CTL_MOD, ep.FD, unix.EPOLLIN|unix.EPOLLONESHOT, 6)
	wantEvents(t, f.wait(epfd, 0), event{unix.EPOLLIN, 6})
	wantEvents(t, f.wait(epfd, 0))
}

func TestOneSocketInSeveralSets(t *testing.T) {
	f := newFixture(t, Params{})
	ep, _ := f.add(false)
	e1, e2 := f.epoll(), f.epoll()
	f.mustCtl(e1, unix.EPOLL_CTL_ADD, ep.FD, unix.EPOLLIN, 1)
	f.mustCtl(e2, unix.EPOLL_CTL_ADD, ep.FD, unix.EPOLLIN|unix.EPOLLET, 2)
	ep.Deliver(1)
	wantEvents(t, f.wait(e1, 0), event{unix.EPOLLIN, 1})
	wantEvents(t, f.wait(e2, 0), event{unix.EPOLLIN, 2})
	fds := []unix.PollFd{{Fd: int32(ep.FD), Events: unix.POLLIN}}
	if r := f.poll(fds, 0); r != 1 {
		t.Fatalf("poll beside two sets: %d", r)
	}
	// Deleted from one set, still reported by the other.
	f.mustCtl(e1, unix.EPOLL_CTL_DEL, ep.FD, 0, 0)
	wantEvents(t, f.wait(e1, 0))
	ep.Deliver(1)
	wantEvents(t, f.wait(e2, 0), event{unix.EPOLLIN, 2})
	// Both sets asleep on the socket at once, woken by one arrival (level-triggered here; both
	// edge-triggered: TestTwoEdgeTriggeredSetsAsleep).
	f.mustCtl(e1, unix.EPOLL_CTL_ADD, ep.FD, unix.EPOLLIN, 1)
	f.mustCtl(e2, unix.EPOLL_CTL_MOD, ep.FD, unix.EPOLLIN, 2)
	ep.Take(10)
	wantEvents(t, f.wait(e1, 0))
	wantEvents(t, f.wait(e2, 0))
	var wg sync.WaitGroup
	got := make([][]event, 2)
	for i, epfd := range []int{e1, e2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = f.wait(epfd, 5*time.Second)
		}()
	}
	<-later(100*time.Millisecond, func() { ep.Deliver(1) })
	wg.Wait()
	wantEvents(t, got[0], event{unix.EPOLLIN, 1})
	wantEvents(t, got[1], event{unix.EPOLLIN, 2})
}

func TestEpollStream(t *testing.T) {
	f := newFixture(t, Params{})
	ep, _ := f.add(true)
	epfd := f.epoll()
	f.mustCtl(epfd, unix.EPOLL_CTL_ADD, ep.FD, unix.EPOLLIN|unix.EPOLLOUT, 9)
	wantEvents(t, f.wait(epfd, 0), event{unix.EPOLLOUT, 9})
	ep.SetWritable(false)
	wantEvents(t, f.wait(epfd, 0))
	done := later(50*time.Millisecond, func() { ep.Deliver(10) })
	wantEvents(t, f.wait(epfd, 5*time.Second), event{unix.EPOLLIN, 9})
	<-done
	ep.Take(10)
	ep.End()
	wantEvents(t, f.wait(epfd, 0), event{unix.EPOLLIN | unix.EPOLLHUP, 9})
}

func TestEpollStreamEdgeTriggered(t *testing.T) {
	f := newFixture(t, Params{})
	ep, _ := f.add(true)
	epfd := f.epoll()
	f.mustCtl(epfd, unix.EPOLL_CTL_ADD, ep.FD, unix.EPOLLIN|unix.EPOLLOUT|unix.EPOLLET, 9)
	wantEvents(t, f.wait(epfd, 0), event{unix.EPOLLOUT, 9})
	wantEvents(t, f.wait(epfd, 0)) // writable since: no new edge
	ep.Deliver(5)
	wantEvents(t, f.wait(epfd, 0), event{unix.EPOLLIN | unix.EPOLLOUT, 9})
	wantEvents(t, f.wait(epfd, 0))
	ep.SetWritable(false)
	wantEvents(t, f.wait(epfd, 0))
	ep.SetWritable(true) // writability lost and back: an edge
	wantEvents(t, f.wait(epfd, 0), event{unix.EPOLLIN | unix.EPOLLOUT, 9})
}

func TestGhostMembers(t *testing.T) {
	f := newFixture(t, Params{})
	ep, s := f.add(true)
	epfd := f.epoll()
	f.mustCtl(epfd, unix.EPOLL_CTL_ADD, ep.FD, unix.EPOLLIN, 1)
	ep.Deliver(3)
	wantEvents(t, f.wait(epfd, 0), event{unix.EPOLLIN, 1})
	set := f.mux.epollSetOf(epfd)
	ghosts := func() int {
		set.mu.Lock()
		defer set.mu.Unlock()
		return len(set.ghosts)
	}
	// Deleted: a ghost, which reports nothing though its data is there and its kernel fd wakes.
	f.mustCtl(epfd, unix.EPOLL_CTL_DEL, ep.FD, 0, 0)
	if ghosts() != 1 {
		t.Fatalf("%d ghosts after EPOLL_CTL_DEL of a stream member, want 1", ghosts())
	}
	wantEvents(t, f.wait(epfd, 0))
	if r := f.ctl(epfd, unix.EPOLL_CTL_MOD, ep.FD, unix.EPOLLIN, 1); r != -int64(unix.ENOENT) {
		t.Fatalf("EPOLL_CTL_MOD of a deleted member: %d, want -ENOENT", r)
	}
	// Added back: the ghost's registration is taken over, with the new data.
	f.mustCtl(epfd, unix.EPOLL_CTL_ADD, ep.FD, unix.EPOLLIN, 2)
	if ghosts() != 0 {
		t.Fatalf("%d ghosts after the member was added back", ghosts())
	}
	wantEvents(t, f.wait(epfd, 0), event{unix.EPOLLIN, 2})
	// A kernel event on a ghost's registration deletes it (it would keep the set readable).
	f.mustCtl(epfd, unix.EPOLL_CTL_DEL, ep.FD, 0, 0)
	ep.Take(3)
	ep.Deliver(1) // a wake byte on the kernel socket
	wantEvents(t, f.wait(epfd, 50*time.Millisecond))
	if ghosts() != 0 {
		t.Fatalf("the ghost outlived a kernel event on its registration")
	}
	// The fd closing drops the ghosts of its number.
	f.mustCtl(epfd, unix.EPOLL_CTL_ADD, ep.FD, unix.EPOLLIN, 3)
	f.mustCtl(epfd, unix.EPOLL_CTL_DEL, ep.FD, 0, 0)
	f.mux.ClosingStream(ep.FD)
	if ghosts() != 0 {
		t.Fatalf("the ghost outlived its fd's close")
	}
	_ = s
}

func TestAwakeMarks(t *testing.T) {
	// The marks belong to the one thread that waits on the set.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	f := newFixture(t, Params{})
	ep, s := f.add(true)
	epfd := f.epoll()
	f.mustCtl(epfd, unix.EPOLL_CTL_ADD, ep.FD, unix.EPOLLIN, 1)
	wantEvents(t, f.wait(epfd, 0))
	if ep.Marks() != 1 {
		t.Fatalf("%d marks after the set's first epoll_wait, want 1 (kept between calls)", ep.Marks())
	}
	// About to sleep, the set gives its marks back (a writer must send its wake byte); woken,
	// it takes them again.
	var during [2]int
	done := later(100*time.Millisecond, func() {
		during = [2]int{ep.Marks(), ep.Sleepers()}
		ep.Deliver(1)
	})
	wantEvents(t, f.wait(epfd, 5*time.Second), event{unix.EPOLLIN, 1})
	<-done
	if during != [2]int{0, 1} {
		t.Fatalf("while asleep: %d marks, %d sleepers; want 0 and 1", during[0], during[1])
	}
	if ep.Marks() != 1 || ep.Sleepers() != 0 {
		t.Fatalf("after the sleep: %d marks, %d sleepers; want 1 and 0", ep.Marks(), ep.Sleepers())
	}
	// Deleted, the member's mark lingers with the set; added back, it is the member's again.
	f.mustCtl(epfd, unix.EPOLL_CTL_DEL, ep.FD, 0, 0)
	if ep.Marks() != 1 {
		t.Fatalf("%d marks after EPOLL_CTL_DEL, want 1 (lingering)", ep.Marks())
	}
	f.mustCtl(epfd, unix.EPOLL_CTL_ADD, ep.FD, unix.EPOLLIN, 1)
	wantEvents(t, f.wait(epfd, 0), event{unix.EPOLLIN, 1})
	if ep.Marks() != 1 {
		t.Fatalf("%d marks after the member came back, want 1", ep.Marks())
	}
	// A second thread waiting on the set ends the marks for good.
	ch := make(chan []event)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		ch <- f.wait(epfd, 0)
	}()
	wantEvents(t, <-ch, event{unix.EPOLLIN, 1})
	if ep.Marks() != 0 {
		t.Fatalf("%d marks once two threads waited on the set, want 0", ep.Marks())
	}
	// The socket closing gives back a lingering mark.
	f2 := newFixture(t, Params{})
	ep2, s2 := f2.add(true)
	epfd2 := f2.epoll()
	f2.mustCtl(epfd2, unix.EPOLL_CTL_ADD, ep2.FD, unix.EPOLLIN, 1)
	wantEvents(t, f2.wait(epfd2, 0))
	f2.mustCtl(epfd2, unix.EPOLL_CTL_DEL, ep2.FD, 0, 0)
	if ep2.Marks() != 1 {
		t.Fatalf("%d marks after EPOLL_CTL_DEL, want 1", ep2.Marks())
	}
	f2.mux.Finished(s2)
	if ep2.Marks() != 0 {
		t.Fatalf("%d marks after the socket finished, want 0", ep2.Marks())
	}
	_ = s
}

func TestCloseOfMember(t *testing.T) {
	f := newFixture(t, Params{})
	for _, stream := range []bool{false, true} {
		ep, s := f.add(stream)
		epfd := f.epoll()
		f.mustCtl(epfd, unix.EPOLL_CTL_ADD, ep.FD, unix.EPOLLIN, 1)
		ep.Deliver(1)
		wantEvents(t, f.wait(epfd, 0), event{unix.EPOLLIN, 1})
		// The socket's last fd closes: it leaves every set, as the kernel drops a closed file.
		f.mux.Finished(s)
		wantEvents(t, f.wait(epfd, 0))
		// The number, reused by a new socket, can be added again.
		fd := ep.FD
		ep.Close()
		ep2, _ := f.add(stream)
		if ep2.FD != fd {
			t.Logf("stream %v: the new socket got fd %d, not %d", stream, ep2.FD, fd)
		}
		f.mustCtl(epfd, unix.EPOLL_CTL_ADD, ep2.FD, unix.EPOLLIN, 2)
		ep2.Deliver(1)
		wantEvents(t, f.wait(epfd, 0), event{unix.EPOLLIN, 2})
	}
}

// TestTwoEdgeTriggeredSetsAsleep puts one datagram socket in two epoll sets, both edge-triggered,
// waited on at once by two threads: every arrival is an edge for each set, as the kernel wakes
// every epoll instance watching the socket. The first set to wake must not take the doorbell from
// the other one while it sleeps.
func TestTwoEdgeTriggeredSetsAsleep(t *testing.T) {
	f := newFixture(t, Params{})
	ep, _ := f.add(false)
	e1, e2 := f.epoll(), f.epoll()
	f.mustCtl(e1, unix.EPOLL_CTL_ADD, ep.FD, unix.EPOLLIN|unix.EPOLLET, 1)
	f.mustCtl(e2, unix.EPOLL_CTL_ADD, ep.FD, unix.EPOLLIN|unix.EPOLLET, 2)
	for round := 0; round < 20; round++ {
		var wg sync.WaitGroup
		got := make([][]event, 2)
		for i, epfd := range []int{e1, e2} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i] = f.wait(epfd, 2*time.Second)
			}()
		}
		<-later(30*time.Millisecond, func() { ep.Deliver(1) })
		wg.Wait()
		wantEvents(t, got[0], event{unix.EPOLLIN, 1})
		wantEvents(t, got[1], event{unix.EPOLLIN, 2})
		ep.Take(1)
	}
}

// A stream member that goes to the kernel for good stays in the engine's set; the program's
// EPOLL_CTL_DEL then removes it there (no ghost: it would keep reporting under the old data), and
// its next EPOLL_CTL_ADD registers it in the program's own set, reported once, with the new data.
func TestEpollMemberToKernelForGood(t *testing.T) {
	f := newFixture(t, Params{})
	ep, _ := f.add(true)
	epfd := f.epoll()
	f.mustCtl(epfd, unix.EPOLL_CTL_ADD, ep.FD, unix.EPOLLIN, 1)
	ep.Deliver(2)
	wantEvents(t, f.wait(epfd, 0), event{unix.EPOLLIN, 1})
	ep.Take(2)
	f.host.mu.Lock()
	f.host.pass[ep.FD] = true
	f.host.mu.Unlock()
	f.mustCtl(epfd, unix.EPOLL_CTL_DEL, ep.FD, 0, 0)
	if r := f.ctl(epfd, unix.EPOLL_CTL_DEL, ep.FD, 0, 0); r != -int64(unix.ENOENT) {
		t.Fatalf("second EPOLL_CTL_DEL: %d, want -ENOENT", r)
	}
	f.mustCtl(epfd, unix.EPOLL_CTL_ADD, ep.FD, unix.EPOLLIN, 2)
	ep.Deliver(2)
	wantEvents(t, f.wait(epfd, 1000*time.Millisecond), event{unix.EPOLLIN, 2})
}
