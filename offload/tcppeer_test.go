package offload

import (
	"net/netip"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/transport"
	shmtr "github.com/goxio/goxio/offload/transport/shm"
	"github.com/goxio/goxio/offload/transport/shmtcp"
)

// newTCPEngine is an engine with the shared-memory transports, its segments in a fresh folder;
// its connections pair at the connecting end's pairAfter-th data call (0: the default).
func newTCPEngine(t *testing.T, pairAfter int) (*Engine, *shmtcp.Env, string) {
	t.Helper()
	dir := t.TempDir()
	shm, err := shmtr.NewEnv(shmtr.Params{Dir: dir, RxUDPPollOSRatio: 10, RxBytesMin: 1 << 16}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(shm.Close)
	tcp, err := shmtcp.NewEnv(shmtcp.Params{Dir: dir, PairAfter: pairAfter}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tcp.Close)
	return New(Config{Offload: true, Table: &fakeTable{}, SHM: shm, SHMTCP: tcp}), tcp, dir
}

// exchange connects a client socket of e to server, sends one byte and reads the server's
// answer, which answer (run on the accepted fd) gives.
func exchange(t *testing.T, e *Engine, m *cmem, server netip.AddrPort, answer func()) {
	t.Helper()
	c := kernelSocket(t, e, unix.SOCK_STREAM)
	dst, dl := m.sockaddr(server)
	if r := call(e, transport.OpConnect, c, dst, dl); r != 0 {
		t.Fatalf("connect = %d", r)
	}
	msg, ml := m.bytes("q")
	if r := call(e, transport.OpSendto, c, msg, ml, 0, 0, 0); r != 1 {
		t.Fatalf("send = %d", r)
	}
	answer()
	buf, b := m.alloc(8)
	if r := call(e, transport.OpRecvfrom, c, buf, 8, 0, 0, 0); r != 1 || b[0] != 'a' {
		t.Fatalf("recv = %d %q", r, b[:1])
	}
	call(e, transport.OpClose, c)
}

func connFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range ents {
		if strings.HasPrefix(f.Name(), "goxio-tcp-") {
			out = append(out, f.Name())
		}
	}
	return out
}

// A connection to a listener without goxio opens no segment; one to a listener of the engine
// that carries one request and its answer opens none either (it pairs late: the connecting end
// makes the segment at its PairAfter-th data call), and one that lives that long opens it at both
// ends; closing the listener withdraws it.
func TestTCPPeerKnownFromListener(t *testing.T) {
	e, env, dir := newTCPEngine(t, 0)
	m := newCmem(t)

	plain, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(plain)
	if err := unix.Bind(plain, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(plain, 8); err != nil {
		t.Fatal(err)
	}
	sa, _ := unix.Getsockname(plain)
	plainAddr := netip.AddrPortFrom(netip.AddrFrom4(sa.(*unix.SockaddrInet4).Addr), uint16(sa.(*unix.SockaddrInet4).Port))
	kernelAnswer := func(l int) func() {
		return func() {
			fd, _, err := unix.Accept(l)
			if err != nil {
				t.Fatal(err)
			}
			b := make([]byte, 1)
			if n, err := unix.Read(fd, b); n != 1 || err != nil {
				t.Fatalf("server read %d %v", n, err)
			}
			if _, err := unix.Write(fd, []byte("a")); err != nil {
				t.Fatal(err)
			}
			unix.Close(fd)
		}
	}
	exchange(t, e, m, plainAddr, kernelAnswer(plain))
	if c := env.Counts(); c.Opened != 0 || c.Failed != 0 || len(connFiles(t, dir)) != 0 {
		t.Fatalf("a connection to a listener without goxio: counts %+v, files %v", c, connFiles(t, dir))
	}

	goxioExchange(t, e, m)
	if c := env.Counts(); c.Opened != 0 || c.Failed != 0 || len(connFiles(t, dir)) != 0 {
		t.Fatalf("one request to a goxio listener: counts %+v, files %v, want no segment", c, connFiles(t, dir))
	}
	e1, env1, _ := newTCPEngine(t, 1)
	goxioExchange(t, e1, m)
	if c := env1.Counts(); c.Opened != 2 || c.Created != 1 || c.Attached != 1 {
		t.Fatalf("a connection to a goxio listener pairing at the first call: counts %+v, want both ends opened", c)
	}
}

// goxioExchange runs exchange against a listener of e, then closes the listener and checks
// that it is withdrawn from the directory.
func goxioExchange(t *testing.T, e *Engine, m *cmem) {
	t.Helper()
	l := kernelSocket(t, e, unix.SOCK_STREAM)
	lsa, lsl := m.sockaddr(loopback)
	if r := call(e, transport.OpBind, l, lsa, lsl); r != 0 {
		t.Fatalf("bind = %d", r)
	}
	if r := call(e, transport.OpListen, l, 8); r != 0 {
		t.Fatalf("listen = %d", r)
	}
	ls, _ := e.Socket(l)
	exchange(t, e, m, ls.Local, func() {
		nfd := call(e, transport.OpAccept4, l, 0, 0, unix.SOCK_CLOEXEC)
		if nfd < 0 {
			t.Fatalf("accept4 = %d", nfd)
		}
		buf, _ := m.alloc(8)
		if r := call(e, transport.OpRecvfrom, int(nfd), buf, 8, 0, 0, 0); r != 1 {
			t.Fatalf("server recv = %d", r)
		}
		ans, al := m.bytes("a")
		if r := call(e, transport.OpSendto, int(nfd), ans, al, 0, 0, 0); r != 1 {
			t.Fatalf("server send = %d", r)
		}
		call(e, transport.OpClose, int(nfd))
	})
	call(e, transport.OpClose, l)
	unix.Close(l)
	if e.cfg.SHM.GoxioListener(ls.Local) {
		t.Fatal("the closed listener is still published")
	}
}
