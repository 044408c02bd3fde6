package shmtcp

import (
	"net/netip"
	"syscall"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/capture"
	ring "github.com/goxio/goxio/offload/shm"
	"github.com/goxio/goxio/offload/transport"
	"github.com/goxio/goxio/offload/transport/kernel"
)

// Establishing races with the program's other threads: the engine tells the socket lazily, at
// a data call, while another thread may be in a data call of its own. A call that went to the
// kernel unaccounted while the segment opened breaks the stream: a send is missing from K (the
// peer then drops its bytes as wake-ups), a receive may read the peer's wake bytes as data or
// leave kernel bytes the reader's count never sees. So:
//   - Established runs once under estmu, and marks est running before it looks at anything;
//   - a data call before that (early) runs on the kernel counted in early; one that finds est
//     running (the segment is being opened) waits for estmu and then takes the
//     transport's path (ring or kernel for good);
//   - Established pairs only when no early call runs and none moved a byte (kernTx, kernRx);
//     otherwise the connection stays on the kernel for good (counted in EnvCounts.Late). The
//     peer then withdraws or never switches, as with any peer that does not pair.
//
// Both sides use sequentially consistent atomics (early's add before est's load in a call, est's
// store before early's load in Established): either Established sees the call, or the call sees
// est running and waits; a call that ended before Established looked counted its bytes before it left.

// Established tells the socket that its kernel connection fd is established (connect completed,
// blocking or not, or accept returned it). It opens the connection segment (creating it or
// attaching to the peer's); on any failure the socket stays on the kernel. server says which end
// this is (statistics only: pairing is symmetric). Any data call may call it first: the first
// call with a connected fd does the work, the others return at once or, while it runs, wait for
// it. Data calls that went to the kernel before it (moved bytes, or still running) keep the
// connection on the kernel.
func (t *TCP) Established(fd int, server bool) {
	if t.est.Load() != estNone || t.end.closed() {
		return
	}
	local, remote := sockname(fd, false), sockname(fd, true)
	if !local.IsValid() || !remote.IsValid() {
		return // not connected (yet): a later call looks again
	}
	t.establish(fd, server, local, remote)
}

// establish is Established with the connection's endpoints known. Paired late (viaTable), the
// bytes that went through the kernel before it are counted into K; a data call still running
// on the kernel makes it give up for now (est back to none: a later call tries again).
func (t *TCP) establish(fd int, server bool, local, remote netip.AddrPort) {
	t.estmu.Lock()
	defer t.estmu.Unlock()
	if t.est.Load() != estNone || t.end.closed() {
		return
	}
	t.est.Store(estRunning) // state.go: establishment steps
	late := t.viaTable.Load()
	if late && t.early.Load() != 0 {
		t.est.Store(estNone)
		return
	}
	defer t.est.Store(estDone) // before the unlock: a call that waited sees the outcome
	if t.early.Load() != 0 || !late && (t.kernTx.Load() != 0 || t.kernRx.Load() != 0) {
		t.env.ctr.late.Add(1)
		t.env.log.Debug("shmtcp: data calls went to the kernel before the connection was established: it stays there",
			zap.Stringer("local", local), zap.Stringer("remote", remote))
		return
	}
	if late {
		// Every kernel call so far ended and counted its bytes (early is 0 and est running:
		// a new call waits for estmu).
		t.txmu.Lock()
		t.kTx = t.kernTx.Load()
		t.txmu.Unlock()
		t.rxmu.Lock()
		t.kRx = t.kernRx.Load()
		t.kConsumed = t.kRx
		t.rxmu.Unlock()
	}
	t.server = server
	cfg := ring.ConnConfig{Dir: t.env.p.Dir, NetNS: t.env.netns, Local: local, Remote: remote,
		SendBytes: t.env.ringSize(optInt(fd, unix.SO_SNDBUF)),
		RecvBytes: t.env.ringSize(optInt(fd, unix.SO_RCVBUF))}
	conn, err := ring.OpenConn(cfg)
	if err != nil {
		t.env.ctr.failed.Add(1)
		t.env.log.Debug("shmtcp: no segment, the connection stays on the kernel",
			zap.Stringer("local", local), zap.Stringer("remote", remote), zap.Error(err))
		return
	}
	t.side = conn.Side()
	t.born = nanotime()
	t.env.ctr.opened.Add(1)
	if t.side == 0 {
		t.env.ctr.created.Add(1)
	} else {
		t.env.ctr.attached.Add(1)
	}
	t.conn.Store(conn)
	if t.end.closed() && t.conn.CompareAndSwap(conn, nil) {
		_, _ = conn.Close() // Close ran meanwhile: nothing was sent, the peer withdraws
	}
}

// transferEarly is a data call on a socket without a segment before Established ended: the
// kernel's, counted, when Established has not started; otherwise it waits for its outcome.
func (t *TCP) transferEarly(c transport.Call) (int, syscall.Errno, bool) {
	t.early.Add(1)
	if t.est.Load() != estNone {
		t.early.Add(-1)
		t.waitEstablished()
		return t.TransferVia(c)
	}
	n, errno := kernel.Do(&c)
	if capture.On() && errno == 0 && n > 0 && (t.pair.Registered() || t.pairEnds[1].IsValid()) && !peekCall(&c) {
		t.tapEarly(&c, n) // a connection that may still pair (late.go): its stream starts here
	}
	t.countKernel(&c, n, errno)
	t.early.Add(-1)
	return n, errno, true
}

// waitEstablished returns once a running Established stored its outcome (conn, then estDone): it
// holds estmu until then, so taking the lock is the wait.
func (t *TCP) waitEstablished() {
	t.estmu.Lock()
	//lint:ignore SA2001 the lock is the wait: Established holds it until its outcome is stored
	t.estmu.Unlock()
}
