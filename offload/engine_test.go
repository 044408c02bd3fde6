package offload

import (
	"net/netip"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/conf"
	"github.com/goxio/goxio/offload/transport"
)

// fakeTable records the C-side table flags the engine writes.
type fakeTable struct {
	mu    sync.Mutex
	flags map[int]uint8
}

func (f *fakeTable) Set(fd int, flags uint8) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.flags == nil {
		f.flags = map[int]uint8{}
	}
	if flags == 0 {
		delete(f.flags, fd)
		return
	}
	f.flags[fd] = flags
}

func (f *fakeTable) get(fd int) uint8 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.flags[fd]
}

func newEngine(t *testing.T, rules string) (*Engine, *fakeTable) {
	t.Helper()
	tab := &fakeTable{}
	var rs *conf.RuleSet
	if rules != "" {
		var errs []error
		rs, errs = conf.ParseRules("test.conf", strings.NewReader(rules))
		if len(errs) > 0 {
			t.Fatalf("rules: %v", errs)
		}
	}
	return New(Config{Rules: rs, Program: "enginetest", Offload: true, Table: tab}), tab
}

// kernelSocket makes a kernel socket and tells the engine about it, as the socket() trampoline does.
func kernelSocket(t *testing.T, e *Engine, typ int) int {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, typ|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("socket: %v", err)
	}
	t.Cleanup(func() { _ = unix.Close(fd) })
	e.Call(&transport.Call{Op: transport.OpSocket, FD: fd, A: [5]uintptr{unix.AF_INET, uintptr(typ)}})
	return fd
}

func call(e *Engine, op transport.Op, fd int, a ...uintptr) int64 {
	c := transport.Call{Op: op, FD: fd}
	copy(c.A[:], a)
	return e.Call(&c)
}

var loopback = netip.MustParseAddrPort("127.0.0.1:0")

func TestUDPThroughEngine(t *testing.T) {
	e, tab := newEngine(t, "")
	m := newCmem(t)
	rx := kernelSocket(t, e, unix.SOCK_DGRAM)
	if tab.get(rx) != FlagEngine {
		t.Fatalf("table flag after socket = %d, want engine", tab.get(rx))
	}
	sa, sl := m.sockaddr(loopback)
	if r := call(e, transport.OpBind, rx, sa, sl); r != 0 {
		t.Fatalf("bind = %d", r)
	}
	snap, ok := e.Socket(rx)
	if !ok || snap.Role != "udp_receiver" || snap.Transport != transport.KindOS || snap.Reason != transport.ReasonNoFasterPath {
		t.Fatalf("after bind: %+v", snap)
	}
	if !snap.Local.IsValid() || snap.Local.Port() == 0 {
		t.Fatalf("local address not recorded: %v", snap.Local)
	}
	// No ring transport in this engine: once its role is known the socket is the kernel's for
	// good, its calls pass through (forgood.go); the engine still answers a call it gets.
	if tab.get(rx) != FlagWatch || !snap.Passthrough {
		t.Fatalf("after bind: flag %d, %+v", tab.get(rx), snap)
	}

	tx := kernelSocket(t, e, unix.SOCK_DGRAM)
	dst, dl := m.sockaddr(snap.Local)
	msg, ml := m.bytes("hello")
	if r := call(e, transport.OpSendto, tx, msg, ml, 0, dst, dl); r != 5 {
		t.Fatalf("sendto = %d", r)
	}
	if s, _ := e.Socket(tx); s.Role != "udp_sender" || s.TxPackets != 1 || s.TxBytes != 5 {
		t.Fatalf("sender after first send: %+v", s)
	}
	buf, b := m.alloc(64)
	if r := call(e, transport.OpRecvfrom, rx, buf, 64, 0, 0, 0); r != 5 || string(b[:5]) != "hello" {
		t.Fatalf("recvfrom = %d %q", r, b[:5])
	}
	if r := call(e, transport.OpRecvfrom, rx, buf, 64, unix.MSG_DONTWAIT, 0, 0); r != -int64(unix.EAGAIN) {
		t.Fatalf("empty MSG_DONTWAIT recv = %d, want -EAGAIN", r)
	}
	if s, _ := e.Socket(rx); s.RxPackets != 1 || s.RxBytes != 5 || s.EAgain != 1 {
		t.Fatalf("receiver counters: %+v", s)
	}
}

func TestRuleHandsSocketToKernel(t *testing.T) {
	e, tab := newEngine(t, "use os udp_receiver *:*\n")
	m := newCmem(t)
	fd := kernelSocket(t, e, unix.SOCK_DGRAM)
	sa, sl := m.sockaddr(loopback)
	if r := call(e, transport.OpBind, fd, sa, sl); r != 0 {
		t.Fatalf("bind = %d", r)
	}
	if tab.get(fd) != FlagWatch {
		t.Fatalf("table flag = %d, want watch (passed through)", tab.get(fd))
	}
	s, _ := e.Socket(fd)
	if !s.Passthrough || s.Reason != transport.ReasonRule || !strings.Contains(s.Decision, "test.conf:1") {
		t.Fatalf("decision not recorded: %+v", s)
	}
	call(e, transport.OpForget, fd)
	if _, ok := e.Socket(fd); ok || tab.get(fd) != 0 {
		t.Fatal("forget left the socket registered")
	}
}

func TestOffloadDisabled(t *testing.T) {
	tab := &fakeTable{}
	e := New(Config{Offload: false, Table: tab})
	fd := kernelSocket(t, e, unix.SOCK_STREAM)
	s, ok := e.Socket(fd)
	if !ok || !s.Passthrough || s.Reason != transport.ReasonDisabled || tab.get(fd) != FlagWatch {
		t.Fatalf("VMA_OFFLOADED_SOCKETS=0 socket: %+v flag %d", s, tab.get(fd))
	}
}

func TestDupAndClose(t *testing.T) {
	e, tab := newEngine(t, "")
	fd := kernelSocket(t, e, unix.SOCK_DGRAM)
	nfd, err := unix.Dup(fd)
	if err != nil {
		t.Fatal(err)
	}
	call(e, transport.OpDup, fd, uintptr(nfd))
	a, _ := e.Socket(fd)
	b, _ := e.Socket(nfd)
	if a.ID != b.ID || tab.get(nfd) != FlagEngine {
		t.Fatalf("dup does not share the socket: %d vs %d flag %d", a.ID, b.ID, tab.get(nfd))
	}
	if r := call(e, transport.OpClose, nfd); r != 0 {
		t.Fatalf("close = %d", r)
	}
	if _, ok := e.Socket(nfd); ok || tab.get(nfd) != 0 {
		t.Fatal("closed fd still registered")
	}
	if _, ok := e.Socket(fd); !ok {
		t.Fatal("closing the dup dropped the original")
	}
	if r := call(e, transport.OpClose, nfd); r != -int64(unix.EBADF) {
		t.Fatalf("second close = %d, want -EBADF", r)
	}
}

func TestStaleTableFlagGoesToKernel(t *testing.T) {
	e, tab := newEngine(t, "")
	p := make([]int, 2)
	if err := unix.Pipe(p); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	tab.Set(p[0], FlagEngine) // a flag left behind by an fd closed outside the engine
	if r := call(e, transport.OpFcntl, p[0], unix.F_GETFD); r < 0 {
		t.Fatalf("fcntl on stale fd = %d", r)
	}
	if tab.get(p[0]) != 0 {
		t.Fatal("stale flag not cleared")
	}
}

func TestAcceptedSocketSharesDecision(t *testing.T) {
	e, tab := newEngine(t, "")
	m := newCmem(t)
	l := kernelSocket(t, e, unix.SOCK_STREAM)
	sa, sl := m.sockaddr(loopback)
	if r := call(e, transport.OpBind, l, sa, sl); r != 0 {
		t.Fatalf("bind = %d", r)
	}
	if r := call(e, transport.OpListen, l, 8); r != 0 {
		t.Fatalf("listen = %d", r)
	}
	ls, _ := e.Socket(l)
	if ls.Role != "tcp_server" {
		t.Fatalf("listener role %q", ls.Role)
	}
	c := kernelSocket(t, e, unix.SOCK_STREAM)
	dst, dl := m.sockaddr(ls.Local)
	if r := call(e, transport.OpConnect, c, dst, dl); r != 0 {
		t.Fatalf("connect = %d", r)
	}
	if cs, _ := e.Socket(c); cs.Role != "tcp_client" || cs.Remote != ls.Local {
		t.Fatalf("client: %+v", cs)
	}
	// No ring transport in this engine: the listener keeps the engine (it registers its
	// connections), the client is the kernel's for good (forgood.go).
	if tab.get(l) != FlagEngine || tab.get(c) != FlagWatch {
		t.Fatalf("flags: listener %d, client %d", tab.get(l), tab.get(c))
	}
	nfd := call(e, transport.OpAccept4, l, 0, 0, unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK)
	if nfd < 0 {
		t.Fatalf("accept4 = %d", nfd)
	}
	defer unix.Close(int(nfd))
	as, ok := e.Socket(int(nfd))
	if !ok || as.Role != "tcp_server" || !as.NonBlocking || tab.get(int(nfd)) != FlagWatch || !as.Remote.IsValid() ||
		!as.Passthrough || as.Reason != transport.ReasonNoFasterPath {
		t.Fatalf("accepted: %+v flag %d", as, tab.get(int(nfd)))
	}
}

func TestEPIPEAsksForSIGPIPE(t *testing.T) {
	e, _ := newEngine(t, "")
	m := newCmem(t)
	sv, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(sv[0])
	unix.Close(sv[1])
	// Register the AF_UNIX stream by hand: the engine only looks at the socket type here.
	s := &Socket{id: 1, domain: unix.AF_INET, typ: sockStream}
	s.setTransport(e.os)
	e.register(sv[0], s)
	msg, ml := m.bytes("x")
	if r := call(e, transport.OpSendto, sv[0], msg, ml, unix.MSG_NOSIGNAL, 0, 0); r != -int64(unix.EPIPE) {
		t.Fatalf("send MSG_NOSIGNAL = %d, want -EPIPE", r)
	}
	if r := call(e, transport.OpSendto, sv[0], msg, ml, 0, 0, 0); r != -(errSigpipe + int64(unix.EPIPE)) {
		t.Fatalf("send = %d, want the SIGPIPE marker", r)
	}
	call(e, transport.OpForget, sv[0])
}

// TestConcurrentLifecycle opens, dups and closes sockets from many goroutines (run with -race).
func TestConcurrentLifecycle(t *testing.T) {
	e, tab := newEngine(t, "")
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
				if err != nil {
					t.Error(err)
					return
				}
				e.Call(&transport.Call{Op: transport.OpSocket, FD: fd, A: [5]uintptr{unix.AF_INET, unix.SOCK_DGRAM}})
				nfd, _ := unix.Dup(fd)
				e.Call(&transport.Call{Op: transport.OpDup, FD: fd, A: [5]uintptr{uintptr(nfd)}})
				e.Sockets()
				e.Call(&transport.Call{Op: transport.OpClose, FD: fd})
				e.Call(&transport.Call{Op: transport.OpClose, FD: nfd})
			}
		}()
	}
	wg.Wait()
	if n := len(e.Sockets()); n != 0 {
		t.Fatalf("%d sockets left registered", n)
	}
	tab.mu.Lock()
	defer tab.mu.Unlock()
	if len(tab.flags) != 0 {
		t.Fatalf("table flags left: %v", tab.flags)
	}
}
