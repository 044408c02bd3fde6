package shmtcp

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/transport"
)

// TestLazyEstablishBothWays drives connections as the engine does: the transport learns that
// the connection is established at the first data call, made by whichever of the end's two
// threads (one sending, one receiving, both directions at once) comes first. Before the fix a
// call made while the other thread's Established opened the segment went to the kernel
// uncounted: a send missing from K (the peer dropped its bytes as wake-ups: bytes lost) or a
// receive of the peer's wake byte as data (one byte too many).
//
// every: each call asks Established until one got through (the engine's wiring); once: only
// the call that wins a flag asks, the others go straight on (the first wiring). Both must keep
// every byte; with every, no connection may stay unpaired for a call made meanwhile, and some
// must switch (many withdraw: a writer that sent everything through the kernel and shut down
// before the peer attached never switches).
func TestLazyEstablishBothWays(t *testing.T) {
	for _, every := range []bool{true, false} {
		t.Run(fmt.Sprintf("every=%v", every), func(t *testing.T) {
			env := testEnv(t, nil)
			l, port := listen(t)
			bufs := [2]*lazyBufs{newLazyBufs(t), newLazyBufs(t)}
			deadline := time.Now().Add(6 * time.Second)
			switched, i := 0, 0
			for ; i < 400 && time.Now().Before(deadline); i++ {
				if lazyRound(t, env, l, port, bufs, every, uint64(i)) {
					switched++
				}
			}
			c := env.Counts()
			t.Logf("%d connections, %d with all four directions on the rings; env %+v", i, switched, c)
			if i < 20 {
				t.Fatalf("only %d rounds in the time", i)
			}
			if every && c.Late != 0 {
				t.Fatalf("%d connections not paired: a data call went to the kernel while another thread established", c.Late)
			}
			if every && switched < max(i/20, 1) {
				t.Fatalf("only %d of %d connections switched both directions", switched, i)
			}
		})
	}
}

// lazyBufs are one end's program-like buffers, reused by every round.
type lazyBufs struct{ w, r []byte }

func newLazyBufs(t testing.TB) *lazyBufs {
	return &lazyBufs{w: cmem(t, 64<<10), r: cmem(t, 64<<10)}
}

// lazyEnd is one end of a round: its transport is told the connection is established by its
// data calls (lazily, as the engine does).
type lazyEnd struct {
	tr     *TCP
	fd     int
	server bool
	every  bool
	told   atomic.Bool
	b      *lazyBufs
}

// establish is what the engine does before each data call.
func (e *lazyEnd) establish() {
	if e.every {
		if !e.told.Load() {
			e.tr.Established(e.fd, e.server)
			e.told.Store(true)
		}
	} else if e.told.CompareAndSwap(false, true) {
		e.tr.Established(e.fd, e.server)
	}
}

func (e *lazyEnd) do(op transport.Op, a ...uintptr) (int, unix.Errno) {
	e.establish()
	return e.tr.Transfer(call(op, e.fd, a...))
}

// send sends data in random-size blocking sends, then shuts its write side down (transport
// first, then the kernel, as the engine does).
func (e *lazyEnd) send(data []byte, r *rand.Rand) error {
	for off := 0; off < len(data); {
		n := min(1+r.IntN(len(e.b.w)), len(data)-off)
		copy(e.b.w, data[off:off+n])
		got, errno := e.do(transport.OpSendto, addr(e.b.w), uintptr(n), unix.MSG_NOSIGNAL, 0, 0)
		if errno != 0 {
			return fmt.Errorf("send after %d of %d bytes: %w", off, len(data), errno)
		}
		off += got
	}
	e.establish()
	e.tr.Shutdown(e.fd, unix.SHUT_WR)
	return unix.Shutdown(e.fd, unix.SHUT_WR)
}

// recv receives in random-size blocking receives until EOF; it returns the hash and the count.
func (e *lazyEnd) recv(r *rand.Rand) ([32]byte, int, error) {
	h := sha256.New()
	got := 0
	for {
		want := 1 + r.IntN(len(e.b.r))
		n, errno := e.do(transport.OpRecvfrom, addr(e.b.r), uintptr(want), 0, 0, 0)
		if errno != 0 {
			return [32]byte{}, got, fmt.Errorf("recv after %d bytes: %w", got, errno)
		}
		if n == 0 {
			var sum [32]byte
			copy(sum[:], h.Sum(nil))
			return sum, got, nil
		}
		h.Write(e.b.r[:n])
		got += n
	}
}

// lazyRound runs one connection: each end sends a random stream while it receives the peer's,
// all four calls starting together; it reports whether every direction switched to the rings.
func lazyRound(t *testing.T, env *Env, l, port int, bufs [2]*lazyBufs, every bool, seed uint64) bool {
	t.Helper()
	cfd := dial(t, port)
	sfd := accept(t, l)
	ends := [2]*lazyEnd{
		{tr: env.NewTCP(func() bool { return false }), fd: cfd, every: every, b: bufs[0]},
		{tr: env.NewTCP(func() bool { return false }), fd: sfd, server: true, every: every, b: bufs[1]},
	}
	r := rand.New(rand.NewPCG(seed, 3))
	data := [2][]byte{stream(seed*2, 256<<10+r.IntN(2<<20)), stream(seed*2+1, 256<<10+r.IntN(2<<20))}
	var sums [2][32]byte
	var counts [2]int
	errs := make([]error, 4)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			errs[2*i] = ends[i].send(data[i], rand.New(rand.NewPCG(seed, uint64(10+i))))
		}()
		go func() {
			defer wg.Done()
			<-start
			sums[1-i], counts[1-i], errs[2*i+1] = ends[i].recv(rand.New(rand.NewPCG(seed, uint64(20+i))))
		}()
	}
	close(start)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Fatalf("round %d hung: client %+v server %+v\nclient %s\nserver %s\ngoroutines:\n%s", seed, ends[0].tr.Stats(), ends[1].tr.Stats(),
			ends[0].tr.debugState(), ends[1].tr.debugState(), buf)
	}
	st := [2]Stats{ends[0].tr.Stats(), ends[1].tr.Stats()}
	ds := [2]string{ends[0].tr.debugState(), ends[1].tr.debugState()}
	for _, e := range ends {
		e.tr.Close(e.fd)
		unix.Close(e.fd)
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("round %d, goroutine %d: %v", seed, i, err)
		}
	}
	for i := range 2 {
		if counts[i] != len(data[i]) || sums[i] != sha256.Sum256(data[i]) {
			t.Fatalf("round %d, %s: received %d of %d bytes, same hash %v; client %+v server %+v\nclient %s\nserver %s",
				seed, [2]string{"client->server", "server->client"}[i], counts[i], len(data[i]),
				sums[i] == sha256.Sum256(data[i]), st[0], st[1], ds[0], ds[1])
		}
	}
	return st[0].TxRing && st[0].RxRing && st[1].TxRing && st[1].RxRing
}
