package shm

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

// pattern returns n bytes of the test stream starting at position pos: a function of the
// position only, so any prefix can be checked.
func pattern(pos uint64, n int) []byte {
	b := make([]byte, n)
	fillPattern(b, pos)
	return b
}

func fillPattern(b []byte, pos uint64) {
	for i := range b {
		p := pos + uint64(i)
		b[i] = byte(p*131 + p>>8 + p>>16*7)
	}
}

// splitIov cuts b into up to 4 random pieces (some empty).
func splitIov(rng *rand.Rand, b []byte) [][]byte {
	var iov [][]byte
	for range rng.IntN(4) {
		k := rng.IntN(len(b) + 1)
		iov = append(iov, b[:k])
		b = b[k:]
	}
	return append(iov, b)
}

// TestStreamModel drives a pair with random partial writes, reads and peeks of random iovecs
// (wrapping around small rings many times) and checks every byte, both directions.
func TestStreamModel(t *testing.T) {
	dir := testDir(t)
	a, b := connPair(t, dir, 4096, 8192)
	rng := rand.New(rand.NewPCG(1, 2))
	type dirState struct {
		w, r      *Conn
		wpos, rpo uint64
	}
	dirs := []*dirState{{w: a, r: b}, {w: b, r: a}}
	buf := make([]byte, 20000)
	for step := range 20000 {
		d := dirs[rng.IntN(2)]
		capTx, _ := d.w.Capacities()
		switch rng.IntN(3) {
		case 0:
			n := rng.IntN(3 * capTx / 2)
			src := pattern(d.wpos, n)
			space := d.w.Space()
			got, _, err := d.w.Write(splitIov(rng, src))
			want := min(n, space)
			if n > 0 && want == 0 {
				if err != ErrFull || got != 0 {
					t.Fatalf("step %d: full write: %d %v", step, got, err)
				}
				continue
			}
			if err != nil || got != want {
				t.Fatalf("step %d: Write %d with space %d = %d %v", step, n, space, got, err)
			}
			d.wpos += uint64(got)
		case 1:
			n := rng.IntN(capTx + 10)
			dst := buf[:n]
			clear(dst)
			avail := d.r.Readable()
			if uint64(avail) != d.wpos-d.rpo || d.w.Unread() != avail {
				t.Fatalf("step %d: Readable %d Unread %d, model %d", step, avail, d.w.Unread(), d.wpos-d.rpo)
			}
			got, _, err := d.r.Read(splitIov(rng, dst))
			want := min(n, avail)
			if n > 0 && want == 0 {
				if err != ErrEmpty || got != 0 {
					t.Fatalf("step %d: empty read: %d %v", step, got, err)
				}
				continue
			}
			if err != nil || got != want || !bytes.Equal(dst[:got], pattern(d.rpo, got)) {
				t.Fatalf("step %d: Read %d of %d = %d %v (bytes ok %v)", step, n, avail, got, err, bytes.Equal(dst[:got], pattern(d.rpo, got)))
			}
			d.rpo += uint64(got)
		case 2:
			avail := int(d.wpos - d.rpo)
			off := rng.IntN(avail + 2)
			n := rng.IntN(300) + 1
			dst := buf[:n]
			got, err := d.r.Peek(splitIov(rng, dst), off)
			want := max(0, min(n, avail-off))
			if want == 0 {
				if err != ErrEmpty {
					t.Fatalf("step %d: Peek at %d of %d: %d %v", step, off, avail, got, err)
				}
				continue
			}
			if err != nil || got != want || !bytes.Equal(dst[:got], pattern(d.rpo+uint64(off), got)) {
				t.Fatalf("step %d: Peek %d at %d of %d = %d %v", step, n, off, avail, got, err)
			}
		}
	}
	st := a.Stats()
	if st.TxBytes != dirs[0].wpos || st.RxBytes != dirs[1].rpo || st.TxCap != 4096 || st.RxCap != 8192 ||
		st.TxFill != dirs[0].wpos-dirs[0].rpo || st.RxFill != dirs[1].wpos-dirs[1].rpo || st.PeerPID == 0 {
		t.Fatalf("stats %+v", st)
	}
	if dirs[0].wpos < 1<<20 || dirs[1].rpo < 1<<20 {
		t.Fatalf("too little traffic: %d %d", dirs[0].wpos, dirs[1].rpo)
	}
}

func TestStreamSwitch(t *testing.T) {
	dir := testDir(t)
	a := mustOpen(t, connCfg(dir, testA, testB, 0, 0))
	b := mustOpen(t, connCfg(dir, testB, testA, 0, 0))
	if _, _, err := a.Write([][]byte{{1}}); err != ErrNotSwitched {
		t.Fatalf("Write before SwitchWrite: %v", err)
	}
	if _, ok := b.ReaderSwitch(); ok {
		t.Fatal("switched before SwitchWrite")
	}
	if err := a.SwitchWrite(12345); err != nil {
		t.Fatal(err)
	}
	if err := a.SwitchWrite(1); !errors.Is(err, unix.EALREADY) {
		t.Fatalf("second SwitchWrite: %v", err)
	}
	if k, ok := b.ReaderSwitch(); !ok || k != 12345 {
		t.Fatalf("ReaderSwitch = %d %v", k, ok)
	}
	if k, ok := a.ReaderSwitch(); ok {
		t.Fatalf("a sees a switch of b: %d", k)
	}
	if err := b.SwitchWrite(0); err != nil {
		t.Fatal(err)
	}
	if k, ok := a.ReaderSwitch(); !ok || k != 0 {
		t.Fatalf("ReaderSwitch(0) = %d %v", k, ok)
	}
	if st := b.Stats(); st.KernelRx != 12345 || st.KernelTx != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestStreamSwitchOverKernel runs the switch-over as the transport will: the first bytes of
// each direction go through a kernel socket pair (standing in for the TCP connection), the
// writer switches after a random number of them, the reader reads exactly K kernel bytes and
// then the ring. Both directions at once, checked byte for byte.
func TestStreamSwitchOverKernel(t *testing.T) {
	dir := testDir(t)
	for round := range 20 {
		a, b := mustOpen(t, connCfg(dir, testA, testB, 0, 0)), mustOpen(t, connCfg(dir, testB, testA, 0, 0))
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
		if err != nil {
			t.Fatal(err)
		}
		const total = 200000
		errc := make(chan error, 2)
		run := func(c *Conn, fd int, seed uint64) {
			errc <- switchPeer(c, fd, seed, total)
		}
		go run(a, fds[0], uint64(round))
		go run(b, fds[1], uint64(round)+100)
		for range 2 {
			if err := <-errc; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		unix.Close(fds[0])
		unix.Close(fds[1])
		a.Close()
		b.Close()
	}
}

// switchPeer writes total pattern bytes (kernel first, then the ring) and reads total bytes
// (kernel K bytes, then the ring), polling.
func switchPeer(c *Conn, fd int, seed uint64, total int) error {
	rng := rand.New(rand.NewPCG(seed, 3))
	k := rng.IntN(3000)
	src := pattern(0, total)
	// The kernel part of our direction, written in a few pieces.
	for off := 0; off < k; {
		n, err := unix.Write(fd, src[off:min(k, off+rng.IntN(700)+1)])
		if err != nil {
			return err
		}
		off += n
	}
	if err := c.SwitchWrite(uint64(k)); err != nil {
		return err
	}
	wpos, rpos, kread := k, 0, 0
	got := make([]byte, total)
	for iter := 0; wpos < total || rpos < total; iter++ {
		if iter > 10_000_000 {
			return errors.New("no progress")
		}
		if wpos < total {
			n, _, err := c.Write([][]byte{src[wpos:min(total, wpos+rng.IntN(5000)+1)]})
			if err != nil && err != ErrFull {
				return err
			}
			wpos += n
		}
		if rpos < total {
			peerK, switched := c.ReaderSwitch()
			if !switched || uint64(kread) < peerK {
				// Still the kernel's turn: never read beyond K there.
				lim := len(got) - rpos
				if switched {
					lim = int(peerK) - kread
				}
				n, err := unix.Read(fd, got[rpos:rpos+min(lim, 512)])
				if err == unix.EAGAIN {
					continue
				}
				if err != nil {
					return err
				}
				rpos += n
				kread += n
				continue
			}
			n, _, err := c.Read([][]byte{got[rpos:]})
			if err != nil && err != ErrEmpty {
				return err
			}
			rpos += n
		}
	}
	if !bytes.Equal(got, src) {
		return errors.New("stream differs")
	}
	return nil
}

func TestStreamShutdownWrite(t *testing.T) {
	dir := testDir(t)
	a, b := connPair(t, dir, 0, 0)
	if _, wake, _ := a.Write([][]byte{[]byte("hello")}); !wake {
		t.Fatal("first write did not ask to wake a non-spinning reader")
	}
	if _, wake, _ := a.Write(nil); wake {
		t.Fatal("an empty write asked for a wake-up")
	}
	if a.ShutdownWrite() {
		t.Fatal("shutdown asked for a second wake-up while one is pending")
	}
	b.ClearWake()
	a2, b2 := connPairAt(t, dir, netipPort(41001))
	if !a2.ShutdownWrite() || b2.PeerState() != StateWriteShut {
		t.Fatal("shutdown did not ask to wake a non-spinning reader")
	}
	if _, _, err := a.Write([][]byte{{1}}); err != ErrClosed {
		t.Fatalf("Write after SHUT_WR: %v", err)
	}
	buf := make([]byte, 10)
	if n, _, err := b.Read([][]byte{buf}); n != 5 || err != nil {
		t.Fatalf("Read = %d %v", n, err)
	}
	if n, _, err := b.Read([][]byte{buf}); n != 0 || err != io.EOF {
		t.Fatalf("Read after drain = %d %v", n, err)
	}
	if _, err := b.Peek([][]byte{buf}, 0); err != io.EOF {
		t.Fatalf("Peek after drain: %v", err)
	}
	// The other direction still works.
	if n, _, err := b.Write([][]byte{[]byte("back")}); n != 4 || err != nil {
		t.Fatalf("reverse Write = %d %v", n, err)
	}
	if n, _, err := a.Read([][]byte{buf}); n != 4 || err != nil {
		t.Fatalf("reverse Read = %d %v", n, err)
	}
	if b.PeerState() != StateWriteShut {
		t.Fatalf("peer state %b", b.PeerState())
	}
}

func TestStreamShutdownRead(t *testing.T) {
	dir := testDir(t)
	a, b := connPair(t, dir, 0, 0)
	a.Write([][]byte{[]byte("abc")})
	b.ShutdownRead()
	buf := make([]byte, 10)
	if n, _, err := b.Read([][]byte{buf}); n != 3 || err != nil {
		t.Fatalf("Read = %d %v", n, err)
	}
	if _, _, err := b.Read([][]byte{buf}); err != io.EOF {
		t.Fatalf("Read after SHUT_RD: %v", err)
	}
	if a.PeerState() != StateReadShut {
		t.Fatalf("peer state %b", a.PeerState())
	}
	if n, _, err := a.Write([][]byte{[]byte("x")}); n != 1 || err != nil {
		t.Fatalf("Write to a SHUT_RD peer = %d %v", n, err)
	}
}

func TestStreamCloseAndAbort(t *testing.T) {
	dir := testDir(t)
	a, b := connPair(t, dir, 0, 0)
	a.Write([][]byte{[]byte("last words")})
	b.ClearWake()
	if wake, err := a.Close(); !wake || err != nil {
		t.Fatalf("Close = %v %v", wake, err)
	}
	buf := make([]byte, 64)
	if n, _, err := b.Read([][]byte{buf}); n != 10 || err != nil || string(buf[:n]) != "last words" {
		t.Fatalf("Read after peer close = %q %v", buf[:n], err)
	}
	if _, _, err := b.Read([][]byte{buf}); err != io.EOF {
		t.Fatalf("Read at end: %v", err)
	}
	if _, _, err := b.Write([][]byte{{1}}); err != ErrPeerClosed {
		t.Fatalf("Write to closed peer: %v", err)
	}

	c, d := connPairAt(t, dir, netipPort(41000))
	c.Write([][]byte{[]byte("discard me")})
	d.Write([][]byte{[]byte("unread by d's peer")})
	if _, err := c.Abort(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.Read([][]byte{buf}); err != ErrReset {
		t.Fatalf("Read after peer abort: %v", err)
	}
	if _, err := d.Peek([][]byte{buf}, 0); err != ErrReset {
		t.Fatalf("Peek after peer abort: %v", err)
	}
	if d.Readable() != 0 {
		t.Fatal("Readable after reset")
	}
	if _, _, err := d.Write([][]byte{{1}}); err != ErrReset {
		t.Fatalf("Write after peer abort: %v", err)
	}
	if d.PeerState()&StateReset == 0 {
		t.Fatal("reset not visible")
	}
	// The survivor still knows what the aborted peer left unread (RST semantics for its close).
	if d.Unread() != 18 {
		t.Fatalf("Unread = %d", d.Unread())
	}
}

// connPairAt opens a second pair on another local port.
func connPairAt(t testing.TB, dir string, local netip.AddrPort) (a, b *Conn) {
	t.Helper()
	a = mustOpen(t, connCfg(dir, local, testB, 0, 0))
	b = mustOpen(t, connCfg(dir, testB, local, 0, 0))
	a.SwitchWrite(0)
	b.SwitchWrite(0)
	return a, b
}

// netipPort is testA's address with another port.
func netipPort(p uint16) netip.AddrPort { return netip.AddrPortFrom(testA.Addr(), p) }
